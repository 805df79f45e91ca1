/** @module Creating root contexts. */
import { trace, TraceFlags, type Span } from '@opentelemetry/api';
import type { TraceParent } from './traceparent.js';
import { BudgetLedger } from './budget-ledger.js';
import { systemClock } from './clock.js';
import {
  checkTimeout,
  ExecContext,
  minDeadline,
  type CreateContextOptions,
} from './exec-context.js';
import { defaultIdSource } from './id-source.js';
import { createPermissions } from './permissions.js';
import { DETACHED_SINK } from './stream-sink.js';

const TRACE_ID = /^(?!0{32})[0-9a-f]{32}$/;

/**
 * A root context. Every option is optional: an anonymous user, open permissions,
 * `session` memory scope, no budgets and no deadline.
 *
 * @example
 * const ctx = createContext({ userId: 'u1', sessionId: 's1', timeoutMs: 30_000 });
 */
export function createContext(options: CreateContextOptions = {}): ExecContext {
  checkTimeout('createContext', options.timeoutMs);
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? defaultIdSource;
  const name = options.name ?? 'root';
  const now = clock.now();
  let deadline: number | null = null;
  let wallDeadline: number | null = null;
  if (options.timeoutMs !== undefined) deadline = now + options.timeoutMs;
  const wall = options.budgets?.maxWallMs;
  if (wall !== undefined) {
    if (!(Number.isFinite(wall) && wall >= 0)) {
      throw new RangeError(
        `createContext: budgets.maxWallMs must be a finite number >= 0, got ${wall}`,
      );
    }
    wallDeadline = now + wall;
    deadline = minDeadline(deadline, wallDeadline);
  }
  if (options.traceId !== undefined && !TRACE_ID.test(options.traceId)) {
    throw new TypeError(
      `createContext: traceId must be 32 lowercase hex digits, not all zero, got "${options.traceId}"`,
    );
  }
  const ctx = new ExecContext({
    name,
    requestId: ids.id('request'),
    traceId: options.traceId ?? options.remoteParent?.traceId ?? ids.traceId(),
    userId: options.userId ?? null,
    sessionId: options.sessionId ?? null,
    runId: options.runId ?? null,
    stepId: null,
    permissions: createPermissions(options.permissions),
    memoryScope: options.memoryScope ?? 'session',
    ledger: new BudgetLedger(
      name,
      options.budgets ?? {},
      options.ledgerParent ?? null,
      options.sharedBudget ?? null,
    ),
    deadline,
    wallDeadline,
    depth: 0,
    path: [],
    metadata: options.metadata ?? {},
    parent: null,
    clock,
    ids,
    stream: DETACHED_SINK,
    span: options.remoteParent ? remoteSpan(options.remoteParent) : undefined,
    tap: options.tap ?? null,
    baseLogger: options.logger ?? null,
    createdAt: now,
  });
  if (options.signal) ctx.linkSignal(options.signal);
  return ctx;
}

/** A span of another process, as the parent of this one's (its trace joins that one). */
function remoteSpan(parent: TraceParent): Span {
  return trace.wrapSpanContext({
    traceId: parent.traceId,
    spanId: parent.spanId,
    traceFlags: parent.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
  });
}
