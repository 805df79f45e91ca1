/**
 * @module The {@link RunSource} of a running server (`--url`): API.md's run and step
 * bodies over `fetch`, with the API key as `Authorization: Bearer <key>` (`server/auth.ts`).
 * The server decides what the key may see: a key without `admin` lists its own runs only.
 * Each failure becomes a `CliError` whose code says whether to fix the request
 * (`NOT_FOUND`, `REQUEST_FAILED`) or the connection (`UNREACHABLE`).
 */
import { z } from 'zod';
import { CliError } from './cli-error.js';
import type { RunInfo, RunQuery, RunSource, StepInfo } from './run-source.js';

/** Options of {@link createServerSource}. */
export interface ServerSourceOptions {
  /** The server's base URL, `http://127.0.0.1:7070` (a path prefix is kept). */
  readonly url: string;
  /** Sent as `Authorization: Bearer <key>` when given. */
  readonly apiKey?: string | undefined;
  /** Aborting it abandons the request in flight. */
  readonly signal?: AbortSignal | undefined;
  /** How long one request may take; default 30 000 ms. */
  readonly timeoutMs?: number;
}

const usageSchema = z.object({
  tokens_in: z.number().default(0),
  tokens_out: z.number().default(0),
  cost_usd: z.number().default(0),
  wall_ms: z.number().default(0),
});
const ZERO = { tokens_in: 0, tokens_out: 0, cost_usd: 0, wall_ms: 0 };

/** What the CLI reads of a Run body; fields it does not use are ignored. */
const runSchema = z.object({
  run_id: z.string(),
  entry: z.string().nullable().default(null),
  flow_id: z.string().nullable().default(null),
  status: z.string(),
  mode: z.string().default('record'),
  created_at: z.string(),
  ended_at: z.string().nullable().default(null),
  budget_usage: usageSchema.default(ZERO),
});

/** What the CLI reads of a Step body. */
const stepSchema = z.object({
  step_id: z.string(),
  run_id: z.string(),
  parent_step_id: z.string().nullable().default(null),
  type: z.string(),
  name: z.string().nullable().default(null),
  status: z.string(),
  budget_usage: usageSchema.default(ZERO),
  created_at: z.string(),
  started_at: z.string().nullable().default(null),
  ended_at: z.string().nullable().default(null),
  error: z.object({ code: z.string(), message: z.string() }).nullable().default(null),
  actor_path: z.array(z.string()).optional(),
  input: z.unknown().optional(),
});

/** An API error body (API.md). */
export const errorSchema = z.object({ error: z.object({ code: z.string(), message: z.string() }) });

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

/** A step body as the CLI reads it, its name from its path or input where it has none. */
function stepInfo(body: z.output<typeof stepSchema>): StepInfo {
  const { input, actor_path, ...step } = body;
  return { ...step, name: step.name ?? actor_path?.at(-1) ?? nameFromInput(step.type, input) };
}

/** `url` checked (`CliError` `USAGE` otherwise), ending in `/` so paths join under it. */
export function baseUrl(url: string): URL {
  let base: URL;
  try {
    base = new URL(url);
  } catch {
    throw new CliError('USAGE', `--url must be an http:// or https:// URL, got "${url}"`);
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw new CliError('USAGE', `--url must be an http:// or https:// URL, got "${url}"`);
  }
  if (!base.pathname.endsWith('/')) base.pathname += '/';
  base.search = '';
  base.hash = '';
  return base;
}

/** Why a request failed, from the error `fetch` throws. */
export function networkReason(err: unknown): string {
  const cause = err instanceof Error ? err.cause : undefined;
  if (cause instanceof Error && cause.message !== '') return cause.message;
  if (typeof cause === 'object' && cause !== null && 'code' in cause) return String(cause.code);
  return err instanceof Error ? err.message : String(err);
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
  const base = baseUrl(options.url);
  const shown = options.url.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 30_000;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.apiKey !== undefined) headers['authorization'] = `Bearer ${options.apiKey}`;

  /** GET `path` (below the base); `notFound` says what a 404 means there. */
  async function get(path: string, notFound: () => CliError): Promise<unknown> {
    const url = new URL(path, base);
    const what = `GET /${path.split('?')[0] ?? ''}`;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, { headers, signal });
      text = await res.text();
    } catch (err) {
      const why = options.signal?.aborted
        ? 'interrupted'
        : timeout.aborted
          ? `no answer within ${timeoutMs.toLocaleString('en-US')} ms`
          : networkReason(err);
      throw new CliError('UNREACHABLE', `cannot reach the server at ${shown}: ${why}`, {
        cause: err,
      });
    }
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (res.ok) {
      if (body === undefined) {
        throw new CliError(
          'UNREACHABLE',
          `the server at ${shown} answered ${what} with no JSON: is it axon serve?`,
        );
      }
      return body;
    }
    const error = errorSchema.safeParse(body);
    const detail = error.success
      ? `${res.status} ${error.data.error.code}: ${error.data.error.message}`
      : `${res.status} ${res.statusText}`;
    if (res.status === 404 && error.success && error.data.error.code === 'NOT_FOUND')
      throw notFound();
    if (res.status === 401 || res.status === 403) {
      const hint = options.apiKey === undefined ? ' (give --api-key or set AXON_API_KEY)' : '';
      throw new CliError('REQUEST_FAILED', `the server refused ${what}: ${detail}${hint}`);
    }
    // A proxy in front of a stopped server, or a draining one: ask again later.
    if (res.status === 502 || res.status === 503 || res.status === 504 || !error.success) {
      throw new CliError(
        'UNREACHABLE',
        `the server at ${shown} could not answer ${what}: ${detail}`,
      );
    }
    throw new CliError('REQUEST_FAILED', `${what} failed: ${detail}`);
  }

  /** `body` parsed with `schema`, or `UNREACHABLE`: whatever answered is not this API. */
  function parse<T>(schema: z.ZodType<T>, body: unknown, what: string): T {
    const parsed = schema.safeParse(body);
    if (!parsed.success) {
      throw new CliError(
        'UNREACHABLE',
        `the server at ${shown} answered ${what} with something other than API.md's bodies: is it axon serve?`,
      );
    }
    return parsed.data;
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
      const body = await get(`v1/runs?${params.toString()}`, missingRoute('GET /v1/runs'));
      return parse(z.array(runSchema), body, 'GET /v1/runs');
    },
    async getRun(runId: string): Promise<RunInfo> {
      const path = `v1/runs/${encodeURIComponent(runId)}`;
      const body = await get(
        path,
        () =>
          new CliError('NOT_FOUND', `no run "${runId}" at ${shown} (or not one this key may see)`),
      );
      return parse(runSchema, body, 'GET /v1/runs/{run_id}');
    },
    async listSteps(runId: string): Promise<StepInfo[]> {
      const path = `v1/runs/${encodeURIComponent(runId)}/steps`;
      const body = await get(path, missingRoute('GET /v1/runs/{run_id}/steps'));
      return parse(z.array(stepSchema), body, 'GET /v1/runs/{run_id}/steps').map(stepInfo);
    },
    close: () => Promise.resolve(),
  };
}
