/** @module The check that what a call was given as its context is one. */
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { ExecContext } from './exec-context.js';

/**
 * The error for `value` given as a context where it is not an {@link ExecContext}, or `null`
 * when it is one: `InvalidParamsError` (`INVALID_PARAMS`) with `param` in `details.param`.
 */
export function contextError(value: unknown, param: string): InvalidParamsError | null {
  if (value instanceof ExecContext) return null;
  const got = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
  return new InvalidParamsError(
    `${param} must be a context (runtime.createContext(), or a handler's own ctx), got ${got}`,
    { param },
  );
}

/**
 * Throws {@link contextError}'s error unless `value` is an {@link ExecContext}: what
 * `createContext` options, a narrowing or nothing at all given in a context's place would
 * otherwise break deep inside the call.
 */
export function assertContext(value: unknown, param: string): asserts value is ExecContext {
  const error = contextError(value, param);
  if (error) throw error;
}
