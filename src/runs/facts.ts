/**
 * @module A run's facts (NERVE-4004): appended, never updated or deleted; checked against
 * the flow's `config.fact_schemas` for their type; listed by run or by flow.
 */
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { z } from 'zod';
import type { ExecContext } from '../context/exec-context.js';
import { ConflictError } from '../errors/conflict-error.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { SchemaViolationError } from '../errors/schema-violation-error.js';
import type { FactQuery, FactRecord } from '../store/records.js';
import { flushed } from '../store/run-store.js';
import { checkJsonSchema, compileJsonSchema, type JsonSchema } from '../tools/json-schema.js';
import type { FlowApiDeps } from './flow-api.js';
import { parseBody } from './request-bodies.js';
import { runCallsOf } from './run-calls.js';

/** The body of `POST /v1/runs/{run_id}/facts`. */
export const factInputSchema = z
  .object({
    type: z.string().min(1),
    data: z.unknown(),
    schema_uri: z.string().min(1).nullable().optional(),
  })
  .strict();
export type FactInput = z.input<typeof factInputSchema>;

/** Compiled fact schemas, by flow hash and fact type (a flow's content never changes). */
const factValidators = new Map<string, ValidateFunction>();

/**
 * Appends a fact to a run (NERVE-4004). If the run's flow has a schema for the fact's type
 * in `config.fact_schemas`, `data` must match it; if the fact names a `schema_uri`, `data`
 * must match the schema registered at that URI too, and a URI with no schema registered is
 * refused (`SchemaViolationError` listing each path; nothing is stored). Facts are never
 * updated or deleted.
 */
export async function appendFact(
  deps: FlowApiDeps,
  runId: string,
  body: unknown,
  emittedByStep: string | null = null,
  factId: string | null = null,
): Promise<FactRecord> {
  const input = parseBody(factInputSchema, 'fact', body);
  const uri = input.schema_uri ?? null;
  const byUri = uri === null ? null : deps.schemas.validator(uri);
  if (byUri === undefined) {
    throw new SchemaViolationError(`fact ${input.type}`, [
      { path: ['schema_uri'], message: `no schema is registered at "${String(uri)}"` },
    ]);
  }
  const run = await deps.store.getRun(runId);
  if (!run) throw new NotFoundError('run', runId);
  if (run.flow_id !== null) {
    const flow = await deps.store.getFlow(run.flow_id);
    const schemas = flow?.config['fact_schemas'] as Record<string, JsonSchema> | undefined;
    const schema = schemas?.[input.type];
    if (flow && schema) {
      const key = `${flow.hash}\u0000${input.type}`;
      let validate = factValidators.get(key);
      if (!validate) {
        validate = compileJsonSchema(`fact type ${input.type}`, schema);
        factValidators.set(key, validate);
      }
      checkJsonSchema(`fact ${input.type}`, validate, input.data);
    }
  }
  if (byUri) checkJsonSchema(`fact ${input.type} (schema ${String(uri)})`, byUri, input.data);
  const fact: FactRecord = {
    fact_id: factId ?? deps.ids.id('fact'),
    run_id: runId,
    type: input.type,
    schema_uri: input.schema_uri ?? null,
    data: input.data ?? null,
    emitted_by_step: emittedByStep,
    ts: deps.clock.now(),
  };
  try {
    await deps.store.appendFact(fact);
  } catch (err) {
    // An idempotent fact stored before (by the same step, run again): that one stands.
    if (factId === null || !(err instanceof ConflictError)) throw err;
    const stored = (await deps.store.listFacts({ runId, type: input.type })).find(
      (f) => f.fact_id === factId,
    );
    if (!stored) throw err;
    return stored;
  }
  await flushed(deps.store);
  return fact;
}

/** A fact of the run of `ctx`'s step, stored and then published as the step's `fact` event. */
export async function emitStepFact(
  deps: FlowApiDeps,
  fact: { readonly type: string; readonly data: unknown; readonly schema_uri?: string | null },
  ctx: ExecContext,
): Promise<FactRecord> {
  if (ctx.runId === null || ctx.stepId === null) {
    throw new InvalidParamsError('emitFact: ctx must be the context of a running step');
  }
  const factId = runCallsOf(ctx)?.nextFactId(ctx.path) ?? null;
  const stored = await appendFact(deps, ctx.runId, fact, ctx.stepId, factId);
  ctx.stream.emit({ type: 'fact', fact: stored });
  return stored;
}

/** A run's facts (API.md's `?type=&after=&limit=`); `NotFoundError` for an unknown run. */
export async function listRunFacts(
  deps: FlowApiDeps,
  runId: string,
  query: Omit<FactQuery, 'runId' | 'flowId'> = {},
): Promise<FactRecord[]> {
  if (!(await deps.store.getRun(runId))) throw new NotFoundError('run', runId);
  return deps.store.listFacts({ ...query, runId });
}

/** A flow's facts across its runs, in append order (NERVE-4004); `NotFoundError` for an unknown flow. */
export async function listFlowFacts(
  deps: FlowApiDeps,
  flowId: string,
  query: Omit<FactQuery, 'runId' | 'flowId'> = {},
): Promise<FactRecord[]> {
  if (!(await deps.store.getFlow(flowId))) throw new NotFoundError('flow', flowId);
  return deps.store.listFacts({ ...query, flowId });
}
