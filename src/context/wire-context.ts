/**
 * @module The plain, validated form of an ExecContext that crosses threads and hosts, and
 * the two conversions: what of a context goes on the wire, and what a context is rebuilt
 * from on the far side (`ExecContext.toWire` / `ExecContext.fromWire` call these).
 */
import { trace, TraceFlags, type Span } from '@opentelemetry/api';
import { z } from 'zod';
import { InvalidWireContextError } from '../errors/invalid-wire-context-error.js';
import { BudgetLedger, type BudgetRemaining } from './budget-ledger.js';
import type { MemoryScope } from './context-options.js';
import { createPermissions, type Permissions } from './permissions.js';
import { formatTraceparent, parseTraceparent } from './traceparent.js';

const nullableCount = z.number().nonnegative().nullable();

/** Zod schema of {@link WireContext}; unknown fields are refused. */
export const wireContextSchema = z.strictObject({
  v: z.literal(1),
  name: z.string().min(1),
  request_id: z.string().min(1),
  trace_id: z
    .string()
    .regex(/^(?!0{32})[0-9a-f]{32}$/, 'a 32-digit lowercase hex trace id, not all zero'),
  traceparent: z
    .string()
    .refine((s) => parseTraceparent(s) !== null, 'a W3C traceparent')
    .nullable(),
  user_id: z.string().nullable(),
  session_id: z.string().nullable(),
  run_id: z.string().nullable(),
  step_id: z.string().nullable(),
  permissions: z.strictObject({
    roles: z.array(z.string()),
    allowed_tools: z.array(z.string()).nullable(),
    allowed_agents: z.array(z.string()).nullable(),
  }),
  memory_scope: z.enum(['user', 'session', 'agent', 'global']),
  budget_remaining: z.strictObject({
    tokens_in: nullableCount,
    tokens_out: nullableCount,
    cost_usd: nullableCount,
  }),
  deadline: z.number().nonnegative().nullable(),
  depth: z.number().int().nonnegative(),
  path: z.array(z.string()),
  metadata: z.record(z.string(), z.json()),
});

/** A context as plain JSON: ids, W3C traceparent, permissions, scope, budget left, deadline. */
export type WireContext = z.infer<typeof wireContextSchema>;

/** The fields of a context that cross, as a context holds them. */
export interface WireIdentity {
  readonly name: string;
  readonly requestId: string;
  readonly traceId: string;
  readonly userId: string | null;
  readonly sessionId: string | null;
  readonly runId: string | null;
  readonly stepId: string | null;
  readonly permissions: Permissions;
  readonly memoryScope: MemoryScope;
  readonly deadline: number | null;
  readonly depth: number;
  readonly path: readonly string[];
  readonly metadata: Readonly<Record<string, unknown>>;
  /** The span of the running step; on the far side, the caller's span as a remote parent. */
  readonly span: Span | undefined;
}

/** What a wire form is made from: an `ExecContext` is one. */
export interface WireSource extends WireIdentity {
  budgetRemaining(): BudgetRemaining;
}

/**
 * The wire form of a context. Budgets travel as what is left (the far side cannot reach the
 * ledger), the deadline as an absolute time, the span as a W3C `traceparent`.
 */
export function toWireContext(ctx: WireSource): WireContext {
  const left = ctx.budgetRemaining();
  const sc = ctx.span?.spanContext();
  const traceparent =
    sc && trace.isSpanContextValid(sc)
      ? formatTraceparent({
          traceId: sc.traceId,
          spanId: sc.spanId,
          sampled: (sc.traceFlags & TraceFlags.SAMPLED) !== 0,
        })
      : null;
  const p = ctx.permissions;
  return {
    v: 1,
    name: ctx.name,
    request_id: ctx.requestId,
    trace_id: ctx.traceId,
    traceparent,
    user_id: ctx.userId,
    session_id: ctx.sessionId,
    run_id: ctx.runId,
    step_id: ctx.stepId,
    permissions: {
      roles: [...p.roles],
      allowed_tools: p.allowedTools ? [...p.allowedTools] : null,
      allowed_agents: p.allowedAgents ? [...p.allowedAgents] : null,
    },
    memory_scope: ctx.memoryScope,
    // An overrun leaves a negative remainder; on the wire that is simply nothing left.
    budget_remaining: {
      tokens_in: left.tokensIn === null ? null : Math.max(0, left.tokensIn),
      tokens_out: left.tokensOut === null ? null : Math.max(0, left.tokensOut),
      cost_usd: left.costUsd === null ? null : Math.max(0, left.costUsd),
    },
    deadline: ctx.deadline,
    depth: ctx.depth,
    path: [...ctx.path],
    metadata: ctx.metadata as WireContext['metadata'],
  };
}

/** What a context is rebuilt from on the far side (see {@link fieldsFromWire}). */
export interface WireFields extends WireIdentity {
  /** A ledger limited to the budget that was left. */
  readonly ledger: BudgetLedger;
}

/**
 * Checks a wire context and gives the fields a context is rebuilt from. Throws
 * {@link InvalidWireContextError} listing every problem when `wire` is malformed.
 */
export function fieldsFromWire(wire: unknown): WireFields {
  const parsed = wireContextSchema.safeParse(wire);
  if (!parsed.success) {
    throw new InvalidWireContextError(
      parsed.error.issues.map((i) => ({
        path: i.path.map((seg) => (typeof seg === 'symbol' ? String(seg) : seg)),
        message: i.message,
      })),
    );
  }
  const w = parsed.data;
  const tp = w.traceparent === null ? null : parseTraceparent(w.traceparent);
  const span = tp
    ? trace.wrapSpanContext({
        traceId: tp.traceId,
        spanId: tp.spanId,
        traceFlags: tp.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
        isRemote: true,
      })
    : undefined;
  const b = w.budget_remaining;
  return {
    name: w.name,
    requestId: w.request_id,
    traceId: w.trace_id,
    userId: w.user_id,
    sessionId: w.session_id,
    runId: w.run_id,
    stepId: w.step_id,
    permissions: createPermissions({
      roles: w.permissions.roles,
      allowedTools: w.permissions.allowed_tools,
      allowedAgents: w.permissions.allowed_agents,
    }),
    memoryScope: w.memory_scope,
    ledger: new BudgetLedger(w.name, {
      ...(b.tokens_in === null ? {} : { maxTokensIn: b.tokens_in }),
      ...(b.tokens_out === null ? {} : { maxTokensOut: b.tokens_out }),
      ...(b.cost_usd === null ? {} : { maxCostUsd: b.cost_usd }),
    }),
    deadline: w.deadline,
    depth: w.depth,
    path: w.path,
    metadata: w.metadata,
    span,
  };
}
