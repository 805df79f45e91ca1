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
function randomHex(bytes: number, scratch: IdScratch = BARE): string {
  const out = scratch.bytes;
  for (;;) {
    if (poolAt + bytes > POOL_BYTES) {
      randomFillSync(pool);
      poolAt = 0;
    }
    const from = poolAt;
    poolAt += bytes;
    let zero = true;
    let n = scratch.start;
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
 * Random ids: the kind's prefix and 128 random bits in hex (`step_2f1c…`, 32 digits); the
 * default. Trace and span ids are W3C's 128 and 64 random bits.
 */
export const randomIdSource: IdSource = {
  id: (kind) => randomHex(16, SCRATCH[kind]),
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
