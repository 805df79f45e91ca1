/** @module Arms a step's timeout: the earlier of its own limit and its context's deadline. */
import type { ExecContext } from '../context/exec-context.js';
import { TimeoutError } from '../errors/timeout-error.js';

/**
 * Cancels `ctx` with a {@link TimeoutError} at the earlier of `now + timeoutMs` and the
 * context's deadline. Returns a function that disarms the timer.
 */
export function armStepDeadline(ctx: ExecContext, timeoutMs: number | null): () => void {
  const now = ctx.clock.now();
  const own = timeoutMs === null ? null : now + timeoutMs;
  const due =
    own === null ? ctx.deadline : ctx.deadline === null ? own : Math.min(own, ctx.deadline);
  if (due === null) return noop;
  const allowed = Math.max(0, due - ctx.createdAt);
  const fire = (): void => {
    ctx.cancel(new TimeoutError(ctx.name, allowed));
  };
  if (due <= now) {
    fire();
    return noop;
  }
  const handle = ctx.clock.setTimeout(fire, due - now);
  return () => {
    ctx.clock.clearTimeout(handle);
  };
}

function noop(): void {
  /* nothing armed */
}
