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

/** `bytes` random bytes as lowercase hex, never all zeros. */
function randomHex(bytes: number): string {
  for (;;) {
    if (poolAt + bytes > POOL_BYTES) {
      randomFillSync(pool);
      poolAt = 0;
    }
    const from = poolAt;
    poolAt += bytes;
    // All zeros is invalid for W3C trace and span ids (one chance in 2^64 or less).
    for (let i = from; i < poolAt; i++) {
      if (pool[i] !== 0) return pool.toString('hex', from, poolAt);
    }
  }
}

/**
 * Random ids: the kind's prefix and 128 random bits in hex (`step_2f1c…`, 32 digits); the
 * default. Trace and span ids are W3C's 128 and 64 random bits.
 */
export const randomIdSource: IdSource = {
  id: (kind) => PREFIX[kind] + randomHex(16),
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
