/**
 * @module The ids a request names, checked against their form before any store is asked:
 * `run_`, `step_`, `flow_`, `fact_` and hex digits (`id-source.ts`), a flow's hash as 64 hex
 * digits. Anything else names nothing: 404 `NOT_FOUND`, as an unknown id is. A store never
 * sees a string shaped like one of its keys (`run_…:steps` on Redis).
 */
import { isIdOf, type IdKind } from '../context/id-source.js';
import { NotFoundError } from '../errors/not-found-error.js';

const HASH = /^[0-9a-f]{64}$/;
/** How much of a refused id a 404 echoes. */
const SHOWN = 80;

/** `value` when it has the form of an id of `kind`; else `NotFoundError` (404). */
export function pathId(kind: IdKind, value: string | undefined): string {
  const id = value ?? '';
  if (!isIdOf(kind, id)) throw new NotFoundError(kind, id.slice(0, SHOWN));
  return id;
}

/** `value` when it is a flow hash (64 lowercase hex digits); else `NotFoundError` (404). */
export function pathHash(value: string | undefined): string {
  const hash = value ?? '';
  if (!HASH.test(hash)) throw new NotFoundError('flow', hash.slice(0, SHOWN));
  return hash;
}
