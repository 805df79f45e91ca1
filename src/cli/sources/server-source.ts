/**
 * @module The {@link RunSource} of a running server (`--url`): API.md's run and step
 * bodies over `fetch` (`server-client.ts`: the key, the timeout, the errors). The server
 * decides what the key may see: a key without `admin` lists its own runs only. The bodies
 * are checked by hand, not with a schema library, so that `axon runs list --url` starts fast.
 */
import { CliError } from '../cli-error.js';
import type { RunInfo, RunQuery, RunSource, StepInfo } from './run-source.js';
import { createServerClient, type ServerClientOptions } from './server-client.js';

/** Options of {@link createServerSource}. */
export type ServerSourceOptions = ServerClientOptions;

/** A body that is not what API.md says: the caller turns it into `notAxon`. */
class NotApiBody extends Error {}

type Body = Readonly<Record<string, unknown>>;

function objectOf(value: unknown): Body {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new NotApiBody();
  return value as Body;
}

function arrayOf(value: unknown): readonly unknown[] {
  if (!Array.isArray(value)) throw new NotApiBody();
  return value;
}

/** `body[key]`, a string. */
function text(body: Body, key: string): string {
  const v = body[key];
  if (typeof v !== 'string') throw new NotApiBody();
  return v;
}

/** `body[key]`, a string or null; `fallback` when absent. */
function textOr<F extends string | null>(body: Body, key: string, fallback: F): string | F {
  const v = body[key];
  if (v === undefined) return fallback;
  if (v === null && fallback === null) return fallback;
  if (typeof v !== 'string') throw new NotApiBody();
  return v;
}

/** `body[key]`, a number; 0 when absent. */
function count(body: Body, key: string): number {
  const v = body[key];
  if (v === undefined) return 0;
  if (typeof v !== 'number') throw new NotApiBody();
  return v;
}

/** A BudgetUsage body, each figure 0 when absent. */
function usageOf(value: unknown): RunInfo['budget_usage'] {
  const u = value === undefined ? {} : objectOf(value);
  return {
    tokens_in: count(u, 'tokens_in'),
    tokens_out: count(u, 'tokens_out'),
    cost_usd: count(u, 'cost_usd'),
    wall_ms: count(u, 'wall_ms'),
  };
}

/** What the CLI reads of a Run body; fields it does not use are left out. */
function runOf(value: unknown): RunInfo {
  const b = objectOf(value);
  return {
    run_id: text(b, 'run_id'),
    entry: textOr(b, 'entry', null),
    flow_id: textOr(b, 'flow_id', null),
    status: text(b, 'status'),
    mode: textOr(b, 'mode', 'record'),
    created_at: text(b, 'created_at'),
    ended_at: textOr(b, 'ended_at', null),
    budget_usage: usageOf(b['budget_usage']),
  };
}

/** A step's name where the body has none: what its input says it runs (API.md's inputs). */
function nameFromInput(type: string, input: unknown): string | null {
  if (typeof input !== 'object' || input === null) return null;
  const field = (key: string): string | null => {
    const v = (input as Record<string, unknown>)[key];
    return typeof v === 'string' && v !== '' ? v : null;
  };
  switch (type) {
    case 'agent':
      return field('agent');
    case 'tool_call':
      return field('tool');
    case 'llm_call':
    case 'llm_plan':
      return field('model') ?? field('engine');
    case 'fs_op':
      return field('op');
    case 'gate_eval':
      return field('fact_type');
    case 'checkpoint':
      return field('label');
    default:
      return null;
  }
}

/** What the CLI reads of a Step body, its name from its path or input where it has none. */
function stepOf(value: unknown): StepInfo {
  const b = objectOf(value);
  const type = text(b, 'type');
  const path = b['actor_path'] === undefined ? [] : arrayOf(b['actor_path']);
  const last = path.at(-1);
  if (last !== undefined && typeof last !== 'string') throw new NotApiBody();
  const error = b['error'] === undefined || b['error'] === null ? null : objectOf(b['error']);
  return {
    step_id: text(b, 'step_id'),
    run_id: text(b, 'run_id'),
    parent_step_id: textOr(b, 'parent_step_id', null),
    type,
    name: textOr(b, 'name', null) ?? last ?? nameFromInput(type, b['input']),
    status: text(b, 'status'),
    budget_usage: usageOf(b['budget_usage']),
    created_at: text(b, 'created_at'),
    started_at: textOr(b, 'started_at', null),
    ended_at: textOr(b, 'ended_at', null),
    error: error && { code: text(error, 'code'), message: text(error, 'message') },
  };
}

/**
 * A source reading the server at `options.url`. Throws `CliError` `USAGE` for a URL that is
 * not http(s); nothing is sent until a method is called.
 *
 * @example
 * const source = createServerSource({ url: 'http://127.0.0.1:7070', apiKey: process.env.AXON_API_KEY });
 * const [latest] = await source.listRuns({ limit: 1 });
 */
export function createServerSource(options: ServerSourceOptions): RunSource {
  const client = createServerClient(options);
  const { shown } = client;

  /** GET `path`, read by `read`; `UNREACHABLE` when the body is not API.md's. */
  async function get<T>(
    path: string,
    what: string,
    notFound: () => CliError,
    read: (body: unknown) => T,
  ): Promise<T> {
    const body = await client.request('GET', path, what, notFound);
    try {
      return read(body);
    } catch (err) {
      if (err instanceof NotApiBody) throw client.notAxon(what);
      throw err;
    }
  }

  const missingRoute = (what: string) => (): CliError =>
    new CliError(
      'UNREACHABLE',
      `the server at ${shown} has no ${what}: it is older than this axon (or not axon serve)`,
    );

  return {
    description: shown,
    async listRuns(query: RunQuery): Promise<RunInfo[]> {
      const params = new URLSearchParams({ limit: String(query.limit) });
      if (query.status) params.set('status', query.status.join(','));
      if (query.entry !== undefined) params.set('entry', query.entry);
      return get(
        `v1/runs?${params.toString()}`,
        'GET /v1/runs',
        missingRoute('GET /v1/runs'),
        (b) => arrayOf(b).map(runOf),
      );
    },
    async getRun(runId: string): Promise<RunInfo> {
      return get(
        `v1/runs/${encodeURIComponent(runId)}`,
        'GET /v1/runs/{run_id}',
        () =>
          new CliError('NOT_FOUND', `no run "${runId}" at ${shown} (or not one this key may see)`),
        runOf,
      );
    },
    async listSteps(runId: string): Promise<StepInfo[]> {
      const what = 'GET /v1/runs/{run_id}/steps';
      return get(`v1/runs/${encodeURIComponent(runId)}/steps`, what, missingRoute(what), (b) =>
        arrayOf(b).map(stepOf),
      );
    },
    close: () => Promise.resolve(),
  };
}
