/** @module Delegation that went too deep. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/** A delegation would pass the maximum depth; the child was not started. Code `POLICY_DENIED`. */
export class DepthLimitError extends AxonError {
  readonly code = 'POLICY_DENIED' as const;
  readonly depth: number;
  readonly maxDepth: number;
  readonly target: string;

  constructor(target: string, depth: number, maxDepth: number, options: AxonErrorOptions = {}) {
    super(`delegation to "${target}" would reach depth ${depth}, past the limit of ${maxDepth}`, {
      ...options,
      details: { ...options.details, target, depth, max_depth: maxDepth },
    });
    this.target = target;
    this.depth = depth;
    this.maxDepth = maxDepth;
  }
}
