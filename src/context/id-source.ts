/** @module Injected identifiers: random by default, sequential for tests. */
import { randomFillSync } from 'node:crypto';

/** What an id is for; ids of a kind share a prefix so logs stay readable. */
export type IdKind = 'run' | 'step' | 'request' | 'actor' | 'flow' | 'fact' | 'checkpoint';

/** The source of every id a runtime makes. */
export interface IdSource {
  /** A new id of the given kind, e.g. `step_…`. */
  id(kind: IdKind): string;
  /** A W3C trace id: 32 lowercase hex digits, not all zero. */
  traceId(): string;
  /** A W3C span id: 16 lowercase hex digits, not all zero. */
  spanId(): string;
}

const PREFIX: Record<IdKind, string> = {
  run: 'run_',
  step: 'step_',
  request: 'req_',
  actor: 'act_',
  flow: 'flow_',
  fact: 'fact_',
  checkpoint: 'cp_',
};

/** The digits of an id after its prefix: what the default and sequential sources make. */
const ID_DIGITS = /^[0-9a-f]{1,64}$/;

/**
 * Whether `value` has the form of an id of `kind`: its prefix, then 1 to 64 lowercase hex
 * digits (what {@link defaultIdSource} and {@link createSequentialIdSource} make). The server
 * asks this before any store sees an id a request names, so a key-shaped string
 * (`run_…:steps`) never reaches a store. A custom {@link IdSource} served over HTTP must
 * make ids of this form.
 */
export function isIdOf(kind: IdKind, value: string): boolean {
  const prefix = PREFIX[kind];
  return value.startsWith(prefix) && ID_DIGITS.test(value.slice(prefix.length));
}

/** Random bytes drawn from the OS in blocks, so an id costs a slice rather than a syscall. */
const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let poolAt = POOL_BYTES;

const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');

/** A buffer holding an id's prefix, where the id's digits are written after it. */
interface IdScratch {
  readonly bytes: Buffer;
  readonly start: number;
}

function scratchFor(prefix: string): IdScratch {
  const bytes = Buffer.alloc(prefix.length + 64);
  return { bytes, start: bytes.write(prefix, 0, 'latin1') };
}

const BARE = scratchFor('');
const SCRATCH = Object.fromEntries(
  Object.entries(PREFIX).map(([kind, prefix]) => [kind, scratchFor(prefix)]),
) as Record<IdKind, IdScratch>;

/**
 * A prefix and `bytes` random bytes as lowercase hex, never all zeros, made as one flat
 * string (a concatenation would be flattened again by every map that hashes the id).
 */
function randomHex(bytes: number, scratch: IdScratch = BARE, at = scratch.start): string {
  const out = scratch.bytes;
  for (;;) {
    if (poolAt + bytes > POOL_BYTES) {
      randomFillSync(pool);
      poolAt = 0;
    }
    const from = poolAt;
    poolAt += bytes;
    let zero = true;
    let n = at;
    for (let i = from; i < poolAt; i++) {
      const byte = pool[i] ?? 0;
      if (byte !== 0) zero = false;
      out[n++] = HEX_DIGITS[byte >> 4] ?? 0;
      out[n++] = HEX_DIGITS[byte & 15] ?? 0;
    }
    // All zeros is invalid for W3C trace and span ids (one chance in 2^64 or less).
    if (!zero) return out.toString('latin1', 0, n);
  }
}

/**
 * A time-ordered id: the kind's prefix, the time in milliseconds as 12 hex digits, then 80
 * random bits as 20 (32 digits in all, like UUIDv7 or a ULID). Ids made later sort later,
 * so a store's B-tree indexes take new rows at their right edge instead of at random
 * pages: on SQLite, two-step runs went from about 3 700 to 10 400 a second
 * (docs/benchmarks.md). 80 random bits a millisecond keep them unique and unguessable.
 */
function timeOrderedId(kind: IdKind): string {
  const scratch = SCRATCH[kind];
  const out = scratch.bytes;
  let ms = Date.now();
  for (let i = scratch.start + 11; i >= scratch.start; i--) {
    out[i] = HEX_DIGITS[ms % 16] ?? 0;
    ms = Math.floor(ms / 16);
  }
  return randomHex(10, scratch, scratch.start + 12);
}

/**
 * The default ids: the kind's prefix and 32 hex digits, time-ordered (see
 * {@link timeOrderedId}: `step_01a2080995…`). Trace and span ids are W3C's 128 and 64
 * random bits.
 */
export const defaultIdSource: IdSource = {
  id: timeOrderedId,
  traceId: () => randomHex(16),
  spanId: () => randomHex(8),
};

/**
 * Deterministic ids counting up from 1 (`step_1`, `step_2`, …), for tests and replays.
 * Each instance counts on its own.
 */
export function createSequentialIdSource(): IdSource {
  let n = 0;
  const hex = (width: number) => (++n).toString(16).padStart(width, '0');
  return {
    id: (kind) => `${PREFIX[kind]}${++n}`,
    traceId: () => hex(32),
    spanId: () => hex(16),
  };
}
