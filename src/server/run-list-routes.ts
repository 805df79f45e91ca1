/**
 * @module The two list endpoints the server adds to API.md, for people and pages following
 * runs (the trace UI): `GET /v1/runs` (the caller's recent runs, newest first, by status)
 * and `GET /v1/runs/{run_id}/steps` (a run's steps in creation order). Each item is the very
 * body `GET /v1/runs/{run_id}` or `GET /v1/steps/{step_id}` answers (`views.ts`).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import type { Runtime } from '../runtime/runtime.js';
import type { RunStatus } from '../store/records.js';
import { isIdOf } from '../context/id-source.js';
import { mayUse } from './auth.js';
import { pathId } from './path-ids.js';
import { callerOf } from './routes.js';
import { RESPONSE_SCHEMAS, runView, stepView } from './views.js';

/** How many runs `GET /v1/runs` answers without a `limit`. */
export const DEFAULT_RUN_LIMIT = 50;
/** The largest `limit` of `GET /v1/runs`. */
export const MAX_RUN_LIMIT = 500;

/** Every status a run can have, as the Run body lists them (`status` takes these). */
export const RUN_STATUSES: readonly RunStatus[] = RESPONSE_SCHEMAS.Run.shape.status.options;
const RUN_QUERY_KEYS: ReadonlySet<string> = new Set(['status', 'limit', 'before']);

/**
 * What `GET /v1/runs` was asked: the statuses to keep (`null`: all), how many at most, and
 * the run the page goes on after (the last of the page before), if any.
 */
export interface RunListQuery {
  readonly status: readonly RunStatus[] | null;
  readonly limit: number;
  readonly before: string | null;
}

/**
 * The query of `GET /v1/runs` checked: `status` a comma-separated list of run statuses,
 * `limit` a whole number 1..500 (default 50), `before` a run id, nothing else.
 * `InvalidParamsError` (400) naming the parameter otherwise — a repeated one too.
 */
export function parseRunListQuery(query: unknown): RunListQuery {
  const given = (query ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(given)) {
    if (!RUN_QUERY_KEYS.has(key)) {
      throw new InvalidParamsError(`unknown query parameter "${key.slice(0, 64)}"`, {
        param: key.slice(0, 64),
      });
    }
  }
  const before = single('before', given['before']);
  if (before !== undefined && !isIdOf('run', before)) {
    throw new InvalidParamsError(`before must be a run id; got "${before.slice(0, 64)}"`, {
      param: 'before',
    });
  }
  return {
    status: statusesOf(given['status']),
    limit: limitOf(given['limit']),
    before: before ?? null,
  };
}

function single(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') {
    throw new InvalidParamsError(`${name} must be given once`, { param: name });
  }
  return value;
}

function statusesOf(value: unknown): RunStatus[] | null {
  const text = single('status', value);
  if (text === undefined) return null;
  const items = text.split(',').map((s) => s.trim());
  const unknown = items.filter((s) => !(RUN_STATUSES as readonly string[]).includes(s));
  if (unknown.length > 0) {
    throw new InvalidParamsError(
      `status must be one or more of ${RUN_STATUSES.join(', ')}, comma-separated; got "${text.slice(0, 128)}"`,
      { param: 'status', details: { allowed: RUN_STATUSES } },
    );
  }
  return [...new Set(items as RunStatus[])];
}

function limitOf(value: unknown): number {
  const text = single('limit', value);
  if (text === undefined) return DEFAULT_RUN_LIMIT;
  const n = /^\d{1,4}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1 && n <= MAX_RUN_LIMIT)) {
    throw new InvalidParamsError(
      `limit must be a whole number from 1 to ${MAX_RUN_LIMIT}; got "${text.slice(0, 32)}"`,
      { param: 'limit' },
    );
  }
  return n;
}

/**
 * Registers `GET /v1/runs` and `GET /v1/runs/{run_id}/steps` on `app`. A caller sees only
 * the runs it may use (its own; every run with `admin`); another user's run is 404, as an
 * unknown one is — as `before` too. A page is read from the store's indexes (by user,
 * status and time): its cost grows with `limit`, not with how many runs the store holds.
 */
export function registerRunListRoutes(app: FastifyInstance, runtime: Runtime): void {
  app.get('/v1/runs', async (req) => {
    const { status, limit, before } = parseRunListQuery(req.query);
    const caller = callerOf(req);
    if (before !== null) {
      const after = await runtime.getRun(before);
      if (!after || !mayUse(caller, after.user_id)) throw new NotFoundError('run', before);
    }
    const runs = await runtime.store.pageRuns({
      limit,
      ...(status === null ? {} : { status }),
      ...(caller.permissions.has('admin') ? {} : { userId: caller.userId }),
      ...(before === null ? {} : { before }),
    });
    return runs.map(runView);
  });

  app.get('/v1/runs/:run_id/steps', async (req: FastifyRequest) => {
    const { run_id = '' } = req.params as Record<string, string>;
    const run = await runtime.getRun(pathId('run', run_id));
    if (!run || !mayUse(callerOf(req), run.user_id)) throw new NotFoundError('run', run_id);
    return (await runtime.listSteps(run_id)).map(stepView);
  });
}
