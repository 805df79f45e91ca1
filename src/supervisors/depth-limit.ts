/** @module The delegation depth limit. */
import type { ExecContext } from '../context/exec-context.js';
import { DepthLimitError } from '../errors/depth-limit-error.js';

/** Nerva's default maximum delegation depth. */
export const DEFAULT_MAX_DEPTH = 5;

/**
 * Throws {@link DepthLimitError} when a delegation from `parent` to `target` would create a
 * step deeper than `maxDepth` (the root step has depth 1).
 */
export function assertDepth(parent: ExecContext, target: string, maxDepth: number): void {
  const depth = parent.depth + 1;
  if (depth > maxDepth) throw new DepthLimitError(target, depth, maxDepth);
}
