/**
 * @module The two list endpoints the server adds to API.md, for people and pages following
 * runs (the trace UI): `GET /v1/runs` (the caller's recent runs, newest first, by status,
 * entry and creation time) and `GET /v1/runs/{run_id}/steps` (a run's steps in creation order). Each item is the very
 * body `GET /v1/runs/{run_id}` or `GET /v1/steps/{step_id}` answers (`views.ts`).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import type { Runtime } from '../runtime/runtime.js';
import type { RunRecord, RunStatus } from '../store/records.js';
import type { RunPageQuery } from '../store/run-store.js';
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
const RUN_QUERY_KEYS: ReadonlySet<string> = new Set([
  'status',
  'limit',
  'before',
  'entry',
  'since',
  'until',
]);
/**
 * The most runs created at or after `until` that one `GET /v1/runs` passes over (20 reads of
 * {@link MAX_RUN_LIMIT}): the store's indexes are by creation order, not by time, so a window
 * further back is refused rather than read without bound.
 */
export const MAX_RUNS_PASSED = 10_000;
/** The longest `entry` asked for (a flow's or agent's name, `workflow:<name>`). */
const MAX_ENTRY = 256;
/** An ISO 8601 date-time with its zone: `2026-11-28T18:05:19Z`, `…:19.123+01:00`. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * What `GET /v1/runs` was asked: the statuses to keep (`null`: all), the entry (`null`: any),
 * the creation times (ms since the epoch; `since` inclusive, `until` exclusive, `null`: no
 * bound), how many at most, and the run the page goes on after (the last of the page
 * before), if any.
 */
export interface RunListQuery {
  readonly status: readonly RunStatus[] | null;
  readonly entry: string | null;
  readonly since: number | null;
  readonly until: number | null;
  readonly limit: number;
  readonly before: string | null;
}

/**
 * The query of `GET /v1/runs` checked: `status` a comma-separated list of run statuses,
 * `entry` a run's entry (1..256 characters), `since` and `until` ISO 8601 date-times with a
 * zone (`since` not after `until`), `limit` a whole number 1..500 (default 50), `before` a
 * run id, nothing else. `InvalidParamsError` (400) naming the parameter otherwise — a
 * repeated one too.
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
  const entry = single('entry', given['entry']);
  if (entry !== undefined && (entry.length === 0 || entry.length > MAX_ENTRY)) {
    throw new InvalidParamsError(`entry must be 1 to ${MAX_ENTRY} characters`, {
      param: 'entry',
    });
  }
  const since = timeOf('since', given['since']);
  const until = timeOf('until', given['until']);
  if (since !== null && until !== null && since > until) {
    throw new InvalidParamsError('since must not be after until', { param: 'since' });
  }
  return {
    status: statusesOf(given['status']),
    entry: entry ?? null,
    since,
    until,
    limit: limitOf(given['limit']),
    before: before ?? null,
  };
}

function timeOf(name: 'since' | 'until', value: unknown): number | null {
  const text = single(name, value);
  if (text === undefined) return null;
  const ms = ISO_TIME.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(ms)) {
    throw new InvalidParamsError(
      `${name} must be an ISO 8601 date-time with a zone, e.g. 2026-11-28T18:05:19Z; got "${text.slice(0, 64)}"`,
      { param: name },
    );
  }
  return ms;
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
 * The runs of `query` created in its time window, newest first, `query.limit` at most: pages
 * of the store's indexes read newest first, those created at or after `until` passed over,
 * the reading stopped at the first created before `since` (runs are indexed in creation
 * order). `since` costs nothing more than a page; `until` costs the runs newer than it, at
 * most {@link MAX_RUNS_PASSED} (400 `INVALID_PARAMS` past them).
 */
export async function pageRunsInWindow(
  pageRuns: (query: RunPageQuery) => Promise<RunRecord[]>,
  query: RunPageQuery,
  since: number | null,
  until: number | null,
): Promise<RunRecord[]> {
  if (since === null && until === null) return pageRuns(query);
  const out: RunRecord[] = [];
  // Past an `until`, read in larger pages: the runs passed over are not answered.
  const chunk = until === null ? query.limit : MAX_RUN_LIMIT;
  let before = query.before;
  let passed = 0;
  for (;;) {
    const page = await pageRuns({
      ...query,
      limit: chunk,
      ...(before === undefined ? {} : { before }),
    });
    for (const run of page) {
      const at = Date.parse(run.created_at);
      if (since !== null && at < since) return out;
      if (until !== null && at >= until) {
        if (++passed > MAX_RUNS_PASSED) {
          throw new InvalidParamsError(
            `until is more than ${MAX_RUNS_PASSED} runs back: page with before=<run_id> instead`,
            { param: 'until' },
          );
        }
        continue;
      }
      out.push(run);
      if (out.length >= query.limit) return out;
    }
    const last = page.at(-1);
    if (page.length < chunk || last === undefined) return out;
    before = last.run_id;
  }
}

/**
 * Registers `GET /v1/runs` and `GET /v1/runs/{run_id}/steps` on `app`. A caller sees only
 * the runs it may use (its own; every run with `admin`); another user's run is 404, as an
 * unknown one is — as `before` too. A page is read from the store's indexes (by user,
 * status, entry and time): its cost grows with `limit`, not with how many runs the store
 * holds — but for `until`, whose page costs the runs created after it too.
 */
export function registerRunListRoutes(app: FastifyInstance, runtime: Runtime): void {
  app.get('/v1/runs', async (req) => {
    const { status, entry, since, until, limit, before } = parseRunListQuery(req.query);
    const caller = callerOf(req);
    if (before !== null) {
      const after = await runtime.getRun(before);
      if (!after || !mayUse(caller, after.user_id)) throw new NotFoundError('run', before);
    }
    const query: RunPageQuery = {
      limit,
      ...(status === null ? {} : { status }),
      ...(entry === null ? {} : { entry }),
      ...(caller.permissions.has('admin') ? {} : { userId: caller.userId }),
      ...(before === null ? {} : { before }),
    };
    const runs = await pageRunsInWindow((q) => runtime.store.pageRuns(q), query, since, until);
    return runs.map(runView);
  });

  app.get('/v1/runs/:run_id/steps', async (req: FastifyRequest) => {
    const { run_id = '' } = req.params as Record<string, string>;
    const run = await runtime.getRun(pathId('run', run_id));
    if (!run || !mayUse(callerOf(req), run.user_id)) throw new NotFoundError('run', run_id);
    return (await runtime.listSteps(run_id)).map(stepView);
  });
}
