/**
 * @module The shapes an ExecContext is made from: the options of `createContext`, what a
 * child may narrow, the runtime's internal slots, budgets, memory scope and token usage.
 */
import type { TraceParent } from './traceparent.js';
import type { Span } from '@opentelemetry/api';
import type { Logger } from '../observability/logger.js';
import type { BudgetLedger, BudgetLimits, SharedBudget } from './budget-ledger.js';
import type { Clock } from './clock.js';
import type { IdSource } from './id-source.js';
import type { PermissionsNarrowing } from './permissions.js';
import type { StreamSink, StreamTap } from './stream-sink.js';

/** Whose memories a context reads and writes (seed 002). */
export type MemoryScope = 'user' | 'session' | 'agent' | 'global';

/** Run and step budgets (POLICY-3000). `maxWallMs` becomes a deadline. */
export interface Budgets extends BudgetLimits {
  readonly maxWallMs?: number;
}

/** Nerva's token usage: this context plus everything its descendants used. */
export interface TokenUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly totalTokens: number;
  readonly costUsd: number;
}

/** Options of `createContext`. */
export interface CreateContextOptions {
  readonly name?: string;
  readonly userId?: string | null;
  readonly sessionId?: string | null;
  readonly runId?: string | null;
  readonly traceId?: string;
  /**
   * The span this context's work is a child of, in another process (a W3C `traceparent`,
   * parsed): its spans join that trace. Its trace id is the context's unless `traceId` is given.
   */
  readonly remoteParent?: TraceParent;
  readonly permissions?: PermissionsNarrowing;
  readonly memoryScope?: MemoryScope;
  readonly budgets?: Budgets;
  /**
   * A ledger this context's draws on as well, as on a parent's: every reservation must fit
   * both. A run's steps share their run's this way, so steps running at once cannot
   * together spend more than the run has.
   */
  readonly ledgerParent?: BudgetLedger;
  /**
   * A budget outside this process that this context's reservations must fit too (a fleet's
   * ledger of the run, `BudgetLedger.claim`).
   */
  readonly sharedBudget?: SharedBudget;
  /** Relative deadline; combined with `budgets.maxWallMs`, the earlier wins. */
  readonly timeoutMs?: number;
  /** An outside signal (e.g. an HTTP request's); aborting it cancels the context. */
  readonly signal?: AbortSignal;
  readonly metadata?: Readonly<Record<string, unknown>>;
  readonly clock?: Clock;
  readonly ids?: IdSource;
  /** A sink that receives every event of the step tree run under this context. */
  readonly tap?: StreamTap;
  /** The logger `ctx.logger` derives from; default a silent one. */
  readonly logger?: Logger;
}

/** What a child may narrow. Everything not named is inherited. */
export interface ContextNarrowing {
  readonly permissions?: PermissionsNarrowing;
  readonly budgets?: Budgets;
  /** The child's own timeout; its deadline is still no later than the parent's. */
  readonly timeoutMs?: number;
  /** Merged over the parent's metadata. */
  readonly metadata?: Readonly<Record<string, unknown>>;
}

/** @internal Slots the runtime sets on a child; not part of the narrowing contract. */
export interface ContextInternals {
  readonly stream?: StreamSink;
  readonly span?: Span;
  readonly runId?: string;
  readonly stepId?: string;
  /** The child's path when the caller already built it (it must be `[...parent.path, name]`). */
  readonly path?: readonly string[];
  readonly tap?: StreamTap | null;
  readonly ledger?: BudgetLedger;
}
