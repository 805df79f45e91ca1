/**
 * @module axon's error classes and the helpers that read and make them, as the public API
 * (`src/index.ts`) re-exports them; nothing inside `src/` imports this file.
 */
export { AxonError, isAxonError, type AxonErrorOptions } from './axon-error.js';
export { ERROR_CODES, type ErrorCode } from './error-code.js';
export { BudgetExceededError, type BudgetLimit } from './budget-exceeded-error.js';
export { CancelledError } from './cancelled-error.js';
export { ConflictError } from './conflict-error.js';
export { DepthLimitError } from './depth-limit-error.js';
export { InternalError } from './internal-error.js';
export { InvalidParamsError } from './invalid-params-error.js';
export { InvalidWireContextError } from './invalid-wire-context-error.js';
export { NotFoundError } from './not-found-error.js';
export { PermissionDeniedError, type PermissionSubject } from './permission-denied-error.js';
export { SchemaViolationError, type SchemaIssue } from './schema-violation-error.js';
export { StreamClosedError } from './stream-closed-error.js';
export { TimeoutError } from './timeout-error.js';
export { WideningError } from './widening-error.js';
export { WorkerResetError } from './worker-reset-error.js';
export { CircuitOpenError } from './circuit-open-error.js';
export { PoolUnavailableError } from './pool-unavailable-error.js';
export { QueueFullError } from './queue-full-error.js';
export { EngineError, type EngineFailure } from './engine-error.js';
export { RateLimitedError } from './rate-limited-error.js';
export { ToolError, type ToolFailure } from './tool-error.js';
export { CliAgentError, type CliAgentFailure } from './cli-agent-error.js';
export { ExtractError, type ExtractAttempt } from './extract-error.js';
export { ReplayMismatchError } from './replay-mismatch-error.js';
export { UnpricedModelError } from './unpriced-model-error.js';
export { UnusedPriceTableError } from './unused-price-table-error.js';
export { RemoteError, fromErrorPayload } from './remote-error.js';
export { toAxonError, toErrorPayload, type ErrorPayload } from './to-error-payload.js';
export { PolicyDeniedError } from './policy-denied-error.js';
export { StepSuspendedError } from './step-suspended-error.js';
export { ActorWaitError } from './actor-wait-error.js';
