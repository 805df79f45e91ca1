/**
 * @module Every step event of API.md as one zod discriminated union; the TypeScript types
 * are inferred from these schemas, never written twice.
 */
import { z } from 'zod';
import type { CallFacts } from '../context/call-facts.js';
import { errorCodeSchema } from '../errors/error-code.js';

const count = z.number().int().nonnegative();
const nullableString = z.string().nullable();

/** Determinism and cost facts of a step or call (NERVE-4020). */
export const provenanceSchema = z.object({
  seed: z.number().int().nullable(),
  prompt_hash: nullableString,
  params_hash: nullableString,
  engine: nullableString,
  model_hash: nullableString,
  pool_id: nullableString,
  replica_id: nullableString,
  tokens_in: count,
  tokens_out: count,
  cost_usd: z.number().nonnegative(),
  decode_time_ms: z.number().nonnegative().nullable(),
  /** The version of the price table `cost_usd` was computed from; `null` with no engine call. */
  price_table: nullableString,
});
export type Provenance = z.infer<typeof provenanceSchema>;

/** What a step or run has used of its budgets. */
export const budgetUsageSchema = z.object({
  tokens_in: count,
  tokens_out: count,
  cost_usd: z.number().nonnegative(),
  wall_ms: z.number().nonnegative(),
});
export type BudgetUsage = z.infer<typeof budgetUsageSchema>;

/** A typed, append-only fact (NERVE-4004). */
export const factSchema = z.object({
  fact_id: z.string(),
  run_id: z.string(),
  type: z.string().min(1),
  schema_uri: nullableString,
  data: z.unknown(),
  emitted_by_step: nullableString,
  ts: z.number(),
});
export type Fact = z.infer<typeof factSchema>;

/** The `error` payload of API.md. */
export const errorPayloadSchema = z.object({
  code: errorCodeSchema,
  message: z.string(),
  retriable: z.boolean(),
  details: z.record(z.string(), z.unknown()).optional(),
});

const base = {
  step_id: z.string(),
  /** Position in the step's log: 1, 2, 3, … */
  seq: z.number().int().positive(),
  /** Milliseconds since the epoch, from the runtime's clock. */
  ts: z.number(),
};

export const startedEventSchema = z.object({
  type: z.literal('started'),
  ...base,
  queue_position: count.optional(),
  pool_id: z.string().optional(),
  replica_id: z.string().optional(),
  provenance: provenanceSchema,
});

export const tokenEventSchema = z.object({
  type: z.literal('token'),
  ...base,
  /** The token's text. */
  t: z.string(),
  /** Index of the token in the step, from 0. */
  i: count,
});

export const toolSuggestEventSchema = z.object({
  type: z.literal('tool_suggest'),
  ...base,
  tool: z.string(),
  args: z.record(z.string(), z.unknown()),
  reason: z.string().optional(),
});

/**
 * A fact emitted by the step. On the wire (SSE) `data` is the Fact itself plus `step_id`,
 * `seq`, `ts`; here the Fact is nested because its own `type` field would collide with the
 * event tag.
 */
export const factEventSchema = z.object({
  type: z.literal('fact'),
  ...base,
  fact: factSchema,
});

export const metricsEventSchema = z.object({
  type: z.literal('metrics'),
  ...base,
  tokens_in: count,
  tokens_out: count,
  cost_usd: z.number().nonnegative(),
  queue_depth: count.optional(),
  budget_remaining: z.record(z.string(), z.number().nullable()).optional(),
});

export const narrationEventSchema = z.object({
  type: z.literal('narration'),
  ...base,
  text: z.string(),
});

export const checkpointEventSchema = z.object({
  type: z.literal('checkpoint'),
  ...base,
  checkpoint_id: z.string(),
});

export const endEventSchema = z.object({
  type: z.literal('end'),
  ...base,
  output: z.unknown(),
  budget_usage: budgetUsageSchema,
  provenance: provenanceSchema,
});

export const errorEventSchema = z.object({
  type: z.literal('error'),
  ...base,
  ...errorPayloadSchema.shape,
});

/** May come outside the step order (POLICY-3002). */
export const escalationEventSchema = z.object({
  type: z.literal('escalation'),
  ...base,
  reason: z.string(),
  target: z.string(),
  breaker_state: z.enum(['closed', 'open', 'half_open']).optional(),
});

/** Every event a step can log or stream, tagged by `type`. */
export const stepEventSchema = z.discriminatedUnion('type', [
  startedEventSchema,
  tokenEventSchema,
  toolSuggestEventSchema,
  factEventSchema,
  metricsEventSchema,
  narrationEventSchema,
  checkpointEventSchema,
  endEventSchema,
  errorEventSchema,
  escalationEventSchema,
]);

/** A step event (API.md's table), discriminated by `type`. */
export type StepEvent = z.infer<typeof stepEventSchema>;
/** One of the event tags. */
export type StepEventType = StepEvent['type'];
/** The event of a given tag. */
export type StepEventOf<TType extends StepEventType> = Extract<StepEvent, { type: TType }>;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** An event before the step has stamped it with `step_id`, `seq` and `ts`. */
export type StepEventBody = DistributiveOmit<StepEvent, 'step_id' | 'seq' | 'ts'>;

/** The events a handler may emit itself through `ctx.stream.emit`. */
export const EMITTABLE_TYPES = ['tool_suggest', 'fact', 'metrics', 'narration'] as const;

/** Schema of an event a handler emits: the body of one of {@link EMITTABLE_TYPES}. */
export const emittableEventSchema = z.discriminatedUnion('type', [
  toolSuggestEventSchema.omit({ step_id: true, seq: true, ts: true }),
  factEventSchema.omit({ step_id: true, seq: true, ts: true }),
  metricsEventSchema.omit({ step_id: true, seq: true, ts: true }),
  narrationEventSchema.omit({ step_id: true, seq: true, ts: true }),
]);
export type EmittableEvent = z.infer<typeof emittableEventSchema>;

/** An event of a step tree, as `runtime.stream` yields it: who emitted it, and the event. */
export interface StreamItem {
  /** Actor names from the root step down to the emitting one, e.g. `['planner', 'flights']`. */
  readonly path: readonly string[];
  readonly event: StepEvent;
}

const NO_USAGE: Pick<BudgetUsage, 'tokens_in' | 'tokens_out' | 'cost_usd'> = {
  tokens_in: 0,
  tokens_out: 0,
  cost_usd: 0,
};

/** Provenance of a step that made no engine call, before it has used anything. */
export function emptyProvenance(seed: number | null = null): Provenance {
  return usageProvenance(NO_USAGE, seed);
}

/**
 * The provenance of a step as it starts (NERVE-4020): its run's seed, the pool and replica it
 * runs on, nothing used yet.
 */
export function startProvenance(
  seed: number | null,
  poolId: string | null,
  replicaId: string | null,
): Provenance {
  return usageProvenance(NO_USAGE, seed, poolId, replicaId);
}

/**
 * The provenance of a step (or run) that made no engine call: its usage, its seed, where it
 * ran, and nothing else.
 */
export function usageProvenance(
  usage: Pick<BudgetUsage, 'tokens_in' | 'tokens_out' | 'cost_usd'>,
  seed: number | null = null,
  poolId: string | null = null,
  replicaId: string | null = null,
): Provenance {
  return {
    seed,
    prompt_hash: null,
    params_hash: null,
    engine: null,
    model_hash: null,
    pool_id: poolId,
    replica_id: replicaId,
    tokens_in: usage.tokens_in,
    tokens_out: usage.tokens_out,
    cost_usd: usage.cost_usd,
    decode_time_ms: null,
    price_table: null,
  };
}

/**
 * The provenance of a step: its usage, where it ran, and the determinism facts of its last
 * engine call (NERVE-4020) — the hashes, engine, model and seed of that call, and the decode
 * time of all of them. Without an engine call, {@link usageProvenance} with the run's `seed`.
 */
export function stepProvenance(
  usage: Pick<BudgetUsage, 'tokens_in' | 'tokens_out' | 'cost_usd'>,
  call: CallFacts | null,
  poolId: string | null = null,
  replicaId: string | null = null,
  seed: number | null = null,
): Provenance {
  if (!call) return usageProvenance(usage, seed, poolId, replicaId);
  return {
    seed: call.seed,
    prompt_hash: call.promptHash,
    params_hash: call.paramsHash,
    engine: call.engine,
    model_hash: call.modelHash,
    pool_id: poolId,
    replica_id: replicaId,
    tokens_in: usage.tokens_in,
    tokens_out: usage.tokens_out,
    cost_usd: usage.cost_usd,
    decode_time_ms: call.decodeTimeMs,
    price_table: call.priceTable,
  };
}

/** `T` without `readonly`, for building an event field by field. */
export type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * Copies the optional fields of a `started` event onto `target`. Events are built field by
 * field on the step's hot path and in the store: an object spread over them took V8's slow
 * path and cost a quarter of an inline run (docs/benchmarks.md).
 */
export function copyStartedOptions(
  target: {
    pool_id?: string | undefined;
    replica_id?: string | undefined;
    queue_position?: number | undefined;
  },
  from: {
    readonly pool_id?: string | undefined;
    readonly replica_id?: string | undefined;
    readonly queue_position?: number | undefined;
  },
): void {
  if (from.pool_id !== undefined) target.pool_id = from.pool_id;
  if (from.replica_id !== undefined) target.replica_id = from.replica_id;
  if (from.queue_position !== undefined) target.queue_position = from.queue_position;
}

/** Copies `details` of an error payload onto `target` when it has them. */
export function copyErrorDetails(
  target: { details?: Readonly<Record<string, unknown>> | undefined },
  from: { readonly details?: Readonly<Record<string, unknown>> | undefined },
): void {
  if (from.details !== undefined) target.details = from.details;
}
