import { describe, expect, it } from 'vitest';
import { AxonError } from '../../src/errors/axon-error.js';
import { BudgetExceededError } from '../../src/errors/budget-exceeded-error.js';
import { CancelledError } from '../../src/errors/cancelled-error.js';
import { ConflictError } from '../../src/errors/conflict-error.js';
import { DepthLimitError } from '../../src/errors/depth-limit-error.js';
import { ERROR_CODES } from '../../src/errors/error-code.js';
import { InternalError } from '../../src/errors/internal-error.js';
import { InvalidParamsError } from '../../src/errors/invalid-params-error.js';
import { InvalidWireContextError } from '../../src/errors/invalid-wire-context-error.js';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import { PermissionDeniedError } from '../../src/errors/permission-denied-error.js';
import { SchemaViolationError } from '../../src/errors/schema-violation-error.js';
import { StreamClosedError } from '../../src/errors/stream-closed-error.js';
import { TimeoutError } from '../../src/errors/timeout-error.js';
import { toAxonError, toErrorPayload } from '../../src/errors/to-error-payload.js';
import { WideningError } from '../../src/errors/widening-error.js';
import { WorkerLostError } from '../../src/errors/worker-lost-error.js';
import { WorkerResetError } from '../../src/errors/worker-reset-error.js';
import { CircuitOpenError } from '../../src/errors/circuit-open-error.js';
import { PoolUnavailableError } from '../../src/errors/pool-unavailable-error.js';
import { QueueFullError } from '../../src/errors/queue-full-error.js';
import { fromErrorPayload, RemoteError } from '../../src/errors/remote-error.js';

const ALL: AxonError[] = [
  new BudgetExceededError('max_cost_usd', 'run', 2, 1),
  new CancelledError(),
  new ConflictError('dup'),
  new DepthLimitError('a', 6, 5),
  new InternalError('defect'),
  new InvalidParamsError('bad', { param: 'x' }),
  new InvalidWireContextError([{ path: ['depth'], message: 'negative' }]),
  new NotFoundError('agent', 'x'),
  new PermissionDeniedError('tool', 'rm'),
  new SchemaViolationError('tool add', [{ path: ['a'], message: 'expected number' }]),
  new StreamClosedError('s1', 'token', 'succeeded'),
  new TimeoutError('a', 100),
  new WideningError('permissions.allowedTools', ['z'], ['a']),
  new WorkerResetError('thread died'),
  new WorkerLostError('replica gone'),
  new CircuitOpenError('agent:x', 'open', 1_000),
  new PoolUnavailableError('pool degraded'),
  new QueueFullError('queue full'),
  new RemoteError({ code: 'QUEUE_FULL', message: 'full', retriable: true }),
];

describe('typed errors', () => {
  it.each(ALL.map((e) => [e.name, e] as const))(
    '%s has a code from API.md and its own name',
    (_name, err) => {
      expect(ERROR_CODES).toContain(err.code);
      expect(err).toBeInstanceOf(AxonError);
      expect(err.name).toBe(err.constructor.name);
      expect(JSON.parse(JSON.stringify(toErrorPayload(err)))).toMatchObject({
        code: err.code,
        message: err.message,
      });
    },
  );

  it('only time-outs, worker resets and losses, and what the sender said are retriable among these', () => {
    expect(ALL.filter((e) => e.retriable).map((e) => e.code)).toEqual([
      'TIMEOUT',
      'WORKER_RESET',
      'WORKER_LOST',
      'POOL_UNAVAILABLE',
      'POOL_UNAVAILABLE',
      'QUEUE_FULL',
      'QUEUE_FULL',
    ]);
  });

  it('wraps anything else thrown as INTERNAL, keeping the cause', () => {
    const cause = new RangeError('boom');
    const wrapped = toAxonError(cause);
    expect(wrapped).toBeInstanceOf(InternalError);
    expect(wrapped.cause).toBe(cause);
    expect(toErrorPayload('text')).toEqual({ code: 'INTERNAL', message: 'text', retriable: false });
  });

  it('carries structured details', () => {
    expect(
      toErrorPayload(new BudgetExceededError('max_tokens_out', 'step', 64, 10)).details,
    ).toEqual({
      limit: 'max_tokens_out',
      ledger: 'step',
      requested: 64,
      remaining: 10,
    });
    expect(
      new SchemaViolationError('tool add', [{ path: ['a', 0], message: 'bad' }]).message,
    ).toContain('a.0: bad');
  });
});

describe('errors across threads', () => {
  it('a payload comes back as the same typed error: class, code, message, retriable, details', () => {
    for (const original of ALL) {
      const back = fromErrorPayload(toErrorPayload(original));
      expect(toErrorPayload(back)).toEqual(toErrorPayload(original));
      expect(back).toBeInstanceOf(AxonError);
    }
    expect(fromErrorPayload(toErrorPayload(new CancelledError()))).toBeInstanceOf(CancelledError);
    const reset = fromErrorPayload(toErrorPayload(new WorkerResetError('gone')));
    expect(reset).toBeInstanceOf(WorkerResetError);
    expect(reset.retriable).toBe(true);
    const lost = fromErrorPayload(toErrorPayload(new WorkerLostError('gone')));
    expect(lost).toBeInstanceOf(WorkerLostError);
    expect(lost.retriable).toBe(true);
  });
});
