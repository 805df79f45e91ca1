/** @module Arms a step's timeout: the earlier of its own limit and its context's deadline. */
import type { ExecContext } from '../context/exec-context.js';
import { BudgetExceededError } from '../errors/budget-exceeded-error.js';
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
  // The end a `max_wall_ms` budget set is that budget running out, not a timeout (POLICY-3000).
  const wall = ctx.wallDeadline !== null && ctx.wallDeadline <= due;
  const fire = (): void => {
    ctx.cancel(
      wall
        ? new BudgetExceededError('max_wall_ms', ctx.name, ctx.clock.now() - ctx.createdAt, 0)
        : new TimeoutError(ctx.name, allowed),
    );
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
