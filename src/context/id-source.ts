/** @module Injected identifiers: random by default, sequential for tests. */
import { randomBytes, randomUUID } from 'node:crypto';

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

/** Random ids: the kind's prefix and a UUID v4 (`step_2f1c…-…`); the default. */
export const randomIdSource: IdSource = {
  id: (kind) => PREFIX[kind] + randomUUID(),
  traceId: () => randomUUID().replaceAll('-', ''),
  spanId: () => randomBytes(8).toString('hex'),
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
