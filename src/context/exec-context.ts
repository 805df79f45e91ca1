/** @module ExecContext: the one value threaded through every call. */
import type { Span } from '@opentelemetry/api';
import { AxonError } from '../errors/axon-error.js';
import { CancelledError } from '../errors/cancelled-error.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { WideningError } from '../errors/widening-error.js';
import { BudgetLedger, type BudgetRemaining } from './budget-ledger.js';
import { systemClock, type Clock } from './clock.js';
import { defaultIdSource, type IdSource } from './id-source.js';
import {
  canUseAgent,
  canUseTool,
  hasRole,
  narrowPermissions,
  type Permissions,
} from './permissions.js';
import type { CallFacts } from './call-facts.js';
import { DETACHED_SINK, type StreamSink, type StreamTap } from './stream-sink.js';
import { SILENT_LOGGER, type Logger } from '../observability/logger.js';
import {
  fieldsFromWire,
  toWireContext,
  type WireContext,
  type WireFields,
} from './wire-context.js';

export type {
  Budgets,
  ContextInternals,
  ContextNarrowing,
  CreateContextOptions,
  MemoryScope,
  TokenUsage,
} from './context-options.js';
import type {
  ContextInternals,
  ContextNarrowing,
  MemoryScope,
  TokenUsage,
} from './context-options.js';

/** What a context is made of: what crosses the wire, and what stays on its side. */
interface ContextFields extends WireFields {
  /** The part of `deadline` set by `max_wall_ms` budgets; `null` for none. */
  readonly wallDeadline?: number | null;
  readonly parent: ExecContext | null;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly stream: StreamSink;
  readonly tap: StreamTap | null;
  readonly baseLogger: Logger | null;
  /** Clock time of creation, when the caller has just read the clock; default now. */
  readonly createdAt?: number;
}

/** @internal Throws RangeError unless `ms` is absent or a finite number >= 0. */
export function checkTimeout(where: string, ms: number | undefined): void {
  if (ms !== undefined && !(Number.isFinite(ms) && ms >= 0)) {
    throw new RangeError(`${where}: timeoutMs must be a finite number >= 0, got ${ms}`);
  }
}

/**
 * The execution context: identity, permissions, memory scope, budgets, deadline, cancel
 * signal, stream sink, depth, metadata and token usage — one explicit value threaded
 * through every call (no globals).
 *
 * A child made with {@link ExecContext.child} keeps the trace id, gets a new request id and
 * depth + 1, a deadline no later than its parent's and a signal that aborts when the
 * parent's does. Permissions and budgets only narrow.
 *
 * @example
 * const ctx = createContext({ userId: 'u1', permissions: { allowedTools: ['add'] }, timeoutMs: 30_000 });
 * const child = ctx.child('calendar', { budgets: { maxTokensOut: 500 } });
 */
export class ExecContext {
  readonly name: string;
  readonly requestId: string;
  readonly traceId: string;
  readonly userId: string | null;
  readonly sessionId: string | null;
  /** The run this context works for, once a step has started under one. */
  readonly runId: string | null;
  /** The step this context runs in, or `null` outside any step. */
  readonly stepId: string | null;
  readonly permissions: Permissions;
  readonly memoryScope: MemoryScope;
  /** This context's budget ledger; reservations are checked against every ancestor too. */
  readonly ledger: BudgetLedger;
  /** Absolute deadline in clock milliseconds, or `null` for none. */
  readonly deadline: number | null;
  /**
   * The earliest end that a `max_wall_ms` budget (this context's or an ancestor's) sets, or
   * `null`: a step stopped by it fails `BUDGET_EXCEEDED` rather than `TIMEOUT` (POLICY-3000).
   */
  readonly wallDeadline: number | null;
  readonly depth: number;
  /** Actor names from the root down to this context. */
  readonly path: readonly string[];
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly parent: ExecContext | null;
  readonly clock: Clock;
  readonly ids: IdSource;
  /** Where the running step's tokens and events go; detached outside a step. */
  readonly stream: StreamSink;
  /** @internal The OpenTelemetry span of the running step, parent of spans made under it. */
  readonly span: Span | undefined;
  /** @internal Observer of the whole step tree, inherited by children. */
  readonly tap: StreamTap | null;
  readonly createdAt: number;

  // The controller is made on first use of `signal`: most contexts are never cancelled and
  // many handlers never read the signal, and an AbortController is costly to make.
  #controller: AbortController | null = null;
  #cancelled = false;
  #cancelReason: unknown = undefined;
  #onCancel: Set<(reason: unknown) => void> | null = null;
  readonly #children = new Set<ExecContext>();
  readonly #baseLogger: Logger | null;
  #logger: Logger | null = null;
  #detachOuter: (() => void) | null = null;
  #lastCall: CallFacts | null = null;
  #decodeTimeMs = 0;

  /** @internal Use {@link createContext}, {@link ExecContext.child} or `fromWire`. */
  constructor(fields: ContextFields) {
    this.name = fields.name;
    this.requestId = fields.requestId;
    this.traceId = fields.traceId;
    this.userId = fields.userId;
    this.sessionId = fields.sessionId;
    this.runId = fields.runId;
    this.stepId = fields.stepId;
    this.permissions = fields.permissions;
    this.memoryScope = fields.memoryScope;
    this.ledger = fields.ledger;
    this.deadline = fields.deadline;
    this.wallDeadline = fields.wallDeadline ?? null;
    this.depth = fields.depth;
    this.path = fields.path;
    this.metadata = fields.metadata;
    this.parent = fields.parent;
    this.clock = fields.clock;
    this.ids = fields.ids;
    this.stream = fields.stream;
    this.span = fields.span;
    this.tap = fields.tap;
    this.#baseLogger = fields.baseLogger;
    this.createdAt = fields.createdAt ?? fields.clock.now();
  }

  /**
   * The last engine call made on this context, with `decodeTimeMs` the total of all of them;
   * `null` before any. A step's provenance reports it (NERVE-4020).
   */
  get lastCall(): CallFacts | null {
    return this.#lastCall && { ...this.#lastCall, decodeTimeMs: this.#decodeTimeMs };
  }

  /** Records an engine call made on this context (see {@link lastCall}). */
  noteCall(facts: CallFacts): void {
    this.#lastCall = facts;
    this.#decodeTimeMs += facts.decodeTimeMs;
  }

  /** Aborts when this context or any ancestor is cancelled (or a step times out). */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#cancelled) this.#controller.abort(this.#cancelReason);
    }
    return this.#controller.signal;
  }

  /** Why the context was cancelled (a `CancelledError`, `TimeoutError`, …), or `undefined`. */
  get cancelReason(): unknown {
    return this.#cancelReason;
  }

  /**
   * A pino child logger bound to this actor: its path, request, run, step and trace ids.
   * Made on first use; secrets in its fields are redacted like the runtime's logger.
   */
  get logger(): Logger {
    if (!this.#logger) {
      const base = this.#baseLogger ?? SILENT_LOGGER;
      this.#logger = base.child({
        actor: this.path.join('/') || this.name,
        request_id: this.requestId,
        trace_id: this.traceId,
        ...(this.runId === null ? {} : { run_id: this.runId }),
        ...(this.stepId === null ? {} : { step_id: this.stepId }),
      });
    }
    return this.#logger;
  }

  /** Token usage of this context and all its descendants. */
  get tokenUsage(): TokenUsage {
    const c = this.ledger.committed;
    return {
      promptTokens: c.tokensIn,
      completionTokens: c.tokensOut,
      totalTokens: c.tokensIn + c.tokensOut,
      costUsd: c.costUsd,
    };
  }

  /** What may still be spent, the tightest of this ledger and its ancestors. */
  budgetRemaining(): BudgetRemaining {
    return this.ledger.remaining();
  }

  canUseTool(name: string): boolean {
    return canUseTool(this.permissions, name);
  }

  canUseAgent(name: string): boolean {
    return canUseAgent(this.permissions, name);
  }

  hasRole(role: string): boolean {
    return hasRole(this.permissions, role);
  }

  isCancelled(): boolean {
    return this.#cancelled;
  }

  isTimedOut(): boolean {
    return this.deadline !== null && this.clock.now() >= this.deadline;
  }

  /** Milliseconds until the deadline (never negative), or `null` without one. */
  remainingMs(): number | null {
    return this.deadline === null ? null : Math.max(0, this.deadline - this.clock.now());
  }

  /**
   * Cancels this context and every descendant: their signals abort with `reason`
   * (a {@link CancelledError} by default). The parent is not affected. Idempotent.
   */
  cancel(reason?: unknown): void {
    if (this.#cancelled) return;
    this.#cancelled = true;
    this.#cancelReason = reason ?? new CancelledError(`context "${this.name}" cancelled`);
    this.#controller?.abort(this.#cancelReason);
    const listeners = this.#onCancel;
    this.#onCancel = null;
    if (listeners) for (const fn of listeners) fn(this.#cancelReason);
    for (const child of [...this.#children]) child.cancel(this.#cancelReason);
  }

  /**
   * Cancels the live children of this context (not the context itself), building the reason
   * only if there is a child to give it to. The runtime calls it when a step ends, so no
   * child outlives its step.
   */
  cancelChildren(makeReason: () => unknown): void {
    if (this.#children.size === 0) return;
    const reason = makeReason();
    for (const child of [...this.#children]) child.cancel(reason);
  }

  /**
   * @internal Calls `fn` once when this context is cancelled (at once if it already is).
   * Cheaper than a listener on `signal`. Returns a function that removes it.
   */
  onCancel(fn: (reason: unknown) => void): () => void {
    if (this.#cancelled) {
      fn(this.#cancelReason);
      return noop;
    }
    const set = (this.#onCancel ??= new Set());
    set.add(fn);
    return () => {
      set.delete(fn);
    };
  }

  /**
   * Detaches this context from its parent (and from an outside signal), so a long-lived
   * parent does not keep finished children. The runtime calls it when a step ends.
   */
  dispose(): void {
    const parent = this.parent;
    if (parent) parent.#children.delete(this);
    this.#detachOuter?.();
    this.#detachOuter = null;
  }

  /**
   * A child context for the actor `name`. Throws {@link WideningError} if the narrowing
   * asks for a permission or budget the parent does not have.
   */
  child(name: string, narrowing?: ContextNarrowing, internals?: ContextInternals): ExecContext {
    if (typeof name !== 'string' || name.length === 0) {
      throw new InvalidParamsError('ExecContext.child: name must be a non-empty string', {
        param: 'name',
      });
    }
    const budgets = narrowing?.budgets;
    checkTimeout('ExecContext.child', narrowing?.timeoutMs);
    const now = this.clock.now();
    let deadline = this.deadline;
    let wallDeadline = this.wallDeadline;
    if (budgets?.maxWallMs !== undefined) {
      if (!(Number.isFinite(budgets.maxWallMs) && budgets.maxWallMs >= 0)) {
        throw new RangeError(
          `ExecContext.child: budgets.maxWallMs must be a finite number >= 0, got ${budgets.maxWallMs}`,
        );
      }
      const left = this.remainingMs();
      if (left !== null && budgets.maxWallMs > left) {
        throw new WideningError('budgets.maxWallMs', budgets.maxWallMs, left);
      }
      deadline = minDeadline(deadline, now + budgets.maxWallMs);
      wallDeadline = minDeadline(wallDeadline, now + budgets.maxWallMs);
    }
    if (narrowing?.timeoutMs !== undefined)
      deadline = minDeadline(deadline, now + narrowing.timeoutMs);
    const child = new ExecContext({
      name,
      requestId: this.ids.id('request'),
      traceId: this.traceId,
      userId: this.userId,
      sessionId: this.sessionId,
      runId: internals?.runId ?? this.runId,
      stepId: internals?.stepId ?? this.stepId,
      permissions: narrowPermissions(this.permissions, narrowing?.permissions),
      memoryScope: this.memoryScope,
      ledger:
        internals?.ledger ??
        (budgets ? this.ledger.child(name, budgets) : new BudgetLedger(name, {}, this.ledger)),
      deadline,
      wallDeadline,
      depth: this.depth + 1,
      path: internals?.path ?? [...this.path, name],
      metadata: narrowing?.metadata ? { ...this.metadata, ...narrowing.metadata } : this.metadata,
      parent: this,
      clock: this.clock,
      ids: this.ids,
      stream: internals?.stream ?? DETACHED_SINK,
      span: internals?.span ?? this.span,
      tap: internals?.tap === undefined ? this.tap : internals.tap,
      baseLogger: this.#baseLogger,
      createdAt: now,
    });
    if (this.#cancelled) child.cancel(this.#cancelReason);
    else this.#children.add(child);
    return child;
  }

  /**
   * The wire form of this context. Budgets travel as what is left (the far side cannot reach
   * this ledger), the deadline as an absolute time, the span as a W3C `traceparent`.
   */
  toWire(): WireContext {
    return toWireContext(this);
  }

  /**
   * Rebuilds a context on the far side of a thread or host: same ids, trace, permissions,
   * scope, deadline, depth and path; a ledger limited to the budget that was left; a fresh
   * signal (wire your cancel message to `ctx.cancel()`).
   *
   * Throws {@link InvalidWireContextError} listing every problem when `wire` is malformed.
   */
  static fromWire(
    wire: unknown,
    options: {
      readonly clock?: Clock;
      readonly ids?: IdSource;
      readonly logger?: Logger;
      /** Where `ctx.stream` pushes go on this side (a worker's stream back to its host). */
      readonly stream?: StreamSink;
    } = {},
  ): ExecContext {
    const w = fieldsFromWire(wire);
    // Field by field, not a spread: a spread's object costs the constructor its fast path
    // (measured: 15 µs a context instead of 2).
    return new ExecContext({
      name: w.name,
      requestId: w.requestId,
      traceId: w.traceId,
      userId: w.userId,
      sessionId: w.sessionId,
      runId: w.runId,
      stepId: w.stepId,
      permissions: w.permissions,
      memoryScope: w.memoryScope,
      ledger: w.ledger,
      deadline: w.deadline,
      depth: w.depth,
      path: w.path,
      metadata: w.metadata,
      span: w.span,
      parent: null,
      clock: options.clock ?? systemClock,
      ids: options.ids ?? defaultIdSource,
      stream: options.stream ?? DETACHED_SINK,
      tap: null,
      baseLogger: options.logger ?? null,
    });
  }

  /** @internal Links an outside signal: aborting it cancels this context. */
  linkSignal(signal: AbortSignal): void {
    // An outside abort is a cancel, whatever reason it carries (a plain `abort()` gives a
    // DOMException); keep the original as the cause.
    const reasonOf = (): unknown =>
      signal.reason instanceof AxonError
        ? signal.reason
        : new CancelledError(`context "${this.name}" cancelled by its outside signal`, {
            cause: signal.reason,
          });
    if (signal.aborted) {
      this.cancel(reasonOf());
      return;
    }
    const onAbort = (): void => {
      this.cancel(reasonOf());
    };
    signal.addEventListener('abort', onAbort, { once: true });
    this.#detachOuter = () => {
      signal.removeEventListener('abort', onAbort);
    };
  }
}

function noop(): void {
  /* nothing to remove */
}

/** @internal The earlier of two deadlines, `null` meaning none. */
export function minDeadline(a: number | null, b: number): number {
  return a === null ? b : Math.min(a, b);
}
