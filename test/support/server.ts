/**
 * @module Test helpers for `axon serve` (test/server/): a real server on a free port over a
 * runtime with the SQLite store in a scratch folder — or, with `AXON_TEST_STORE=postgres`
 * (the `http-on-postgres` project), the PostgreSQL store in a schema of its own per data
 * file, dropped after the test file — and the examples registered, what a
 * client needs to call it (JSON over `fetch`, SSE frames parsed from the wire, `curl`), and
 * the checks every error answer must pass (API.md's error body, its status list).
 */
import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, expect } from 'vitest';
import { EXAMPLES, EXAMPLE_TOOLS } from '../../examples/index.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { createLogger } from '../../src/observability/logger.js';
import { createRuntime, type Runtime, type RuntimeOptions } from '../../src/runtime/runtime.js';
import {
  createServer,
  type AxonServer,
  type ServerOptions,
} from '../../src/server/create-server.js';
import pg from 'pg';
import { postgresStore } from '../../src/store/postgres/postgres-store.js';
import type { RunStore } from '../../src/store/run-store.js';
import { sqliteStore } from '../../src/store/sqlite/sqlite-store.js';

/** Whether the servers keep their runs in PostgreSQL (`AXON_TEST_STORE=postgres`). */
const ON_POSTGRES = process.env['AXON_TEST_STORE'] === 'postgres';
const POSTGRES_URL =
  process.env['AXON_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const postgresSchemas = new Set<string>();
/** Drops the file's schemas after it; nothing in a server process a test spawns (no suite). */
function dropSchemasAfterAll(): void {
  try {
    afterAll(async () => {
      const admin = new pg.Client({ connectionString: POSTGRES_URL });
      await admin.connect();
      for (const s of postgresSchemas) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
      await admin.end();
    });
  } catch {
    // Not in a test file: the test that spawned this process drops the schema it named.
  }
}
if (ON_POSTGRES) dropSchemasAfterAll();

/**
 * The store of a server whose data file is `db`: SQLite there, or on PostgreSQL a schema
 * named after the file, so a server started again on the same file finds the same runs.
 */
export function testStore(db: string): RunStore {
  if (!ON_POSTGRES) return sqliteStore(db);
  const schema = `axon_test_${createHash('sha256').update(db).digest('hex').slice(0, 20)}`;
  postgresSchemas.add(schema);
  return postgresStore({ connection: POSTGRES_URL, schema });
}

/** The statuses API.md allows an error answer to have. */
export const API_ERROR_STATUSES: readonly number[] = [
  400, 401, 403, 404, 405, 409, 413, 415, 422, 429, 500, 501, 503,
];

/**
 * The error codes of API.md, typed here from the document and not imported from
 * `src/errors/error-code.ts`: the server is checked against the contract, so a code added to
 * the source alone fails the fuzz test instead of widening what it accepts.
 */
export const API_ERROR_CODES: readonly string[] = [
  'INVALID_PARAMS',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'CONFLICT',
  'PAYLOAD_TOO_LARGE',
  'SCHEMA_VIOLATION',
  'POLICY_DENIED',
  'BUDGET_EXCEEDED',
  'RATE_LIMITED',
  'QUEUE_FULL',
  'POOL_UNAVAILABLE',
  'REPLAY_MISMATCH',
  'CANCELLED',
  'TIMEOUT',
  'WORKER_RESET',
  'WORKER_LOST',
  'NOT_IMPLEMENTED',
  'INTERNAL',
];

/** A response as a test reads it. */
export interface ApiResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The body parsed as JSON, or `undefined` when it is not JSON. */
  readonly body: unknown;
}

/** What a test gets from {@link TestServers.start}. */
export interface TestServer {
  readonly server: AxonServer;
  readonly runtime: Runtime;
  readonly url: string;
  /** The runtime's data folder (its sandbox roots live under `<dataDir>/sandbox/`). */
  readonly dataDir: string;
  /** The SQLite file. */
  readonly db: string;
  /** A JSON request: `body` is sent as JSON unless it is a string or a Buffer (sent as is). */
  api(
    method: string,
    path: string,
    body?: unknown,
    headers?: Readonly<Record<string, string>>,
  ): Promise<ApiResponse>;
  /** A flow, then a run of it with `run` as the body; the run's record. */
  newRun(run?: Record<string, unknown>, headers?: Readonly<Record<string, string>>): Promise<Run>;
  /** Submits a step to `runId`, expecting 201; its id. */
  submit(runId: string, step: unknown, headers?: Readonly<Record<string, string>>): Promise<string>;
  /** The whole stream of a step, read with `fetch` until the server closes it. */
  streamText(stepId: string, headers?: Readonly<Record<string, string>>): Promise<string>;
  close(): Promise<void>;
}

/** What a test reads of a run. */
export interface Run {
  readonly run_id: string;
  readonly flow_id: string;
  readonly status: string;
  readonly [key: string]: unknown;
}

/** Options of {@link TestServers.start}. */
export interface StartOptions {
  readonly server?: ServerOptions;
  /** More runtime options (agents, tools and engines are added to the examples'). */
  readonly runtime?: RuntimeOptions;
  /** The scripted engine's delay per token; default 1 ms. */
  readonly tokenDelayMs?: number;
  /** A SQLite file to use (a restart); default a new one. */
  readonly db?: string;
  /** A data folder to use; default a new one. */
  readonly dataDir?: string;
}

/** What {@link useTestServers} gives a test file. */
export interface TestServers {
  start(options?: StartOptions): Promise<TestServer>;
  /** A new scratch folder of the file's own. */
  folder(): string;
  /**
   * A quiet runtime on the project's store — SQLite in a new folder of the file's, or a
   * PostgreSQL schema of its own under `http-on-postgres` — for a test that serves it itself
   * (a workflow server, a framework's bridge). Closing the runtime, or the server that owns
   * it, closes the store.
   */
  runtime(options?: Omit<RuntimeOptions, 'store'>): Runtime;
}

/**
 * Registers the file's teardown (every server started closes after its test, the scratch
 * folder goes after the file) and returns how to start servers, or runtimes on the
 * project's store. Call it at a file's top level or in a `describe`.
 */
export function useTestServers(name: string): TestServers {
  const root = mkdtempSync(join(tmpdir(), `axon-${name}-`));
  const open = new Set<TestServer>();
  afterEach(async () => {
    const all = [...open];
    open.clear();
    await Promise.all(all.map((s) => s.close()));
  });
  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });
  const folder = (): string => mkdtempSync(join(root, 'd-'));
  return {
    folder,
    runtime: (options = {}) =>
      createRuntime({
        logger: createLogger({ level: 'silent' }),
        ...options,
        store: testStore(join(folder(), 'axon.db')),
      }),
    async start(options = {}) {
      const dataDir = options.dataDir ?? folder();
      const db = options.db ?? join(dataDir, 'axon.db');
      const runtime = exampleRuntime(db, dataDir, options);
      // A short drain: steps a test leaves waiting are cancelled when it closes the server.
      const server = await createServer(runtime, { port: 0, drainMs: 100, ...options.server });
      const made = testServer(server, runtime, dataDir, db);
      open.add(made);
      return made;
    },
  };
}

/** The runtime of API.md's embedded defaults, on `db`: the examples' agents and tools. */
export function exampleRuntime(db: string, dataDir: string, options: StartOptions = {}): Runtime {
  const tokenDelayMs = options.tokenDelayMs ?? 1;
  const example = EXAMPLES['trip-planner']?.({ tokenDelayMs });
  if (!example) throw new Error('the trip-planner example is missing');
  const extra = options.runtime ?? {};
  return createRuntime({
    logger: createLogger({ level: 'silent' }),
    ...extra,
    store: extra.store ?? testStore(db),
    dataDir,
    agents: [...example.agents, ...(extra.agents ?? [])],
    tools: [...example.tools, ...EXAMPLE_TOOLS, ...(extra.tools ?? [])],
    engines: [createScriptedEngine({ tokenDelayMs }), ...(extra.engines ?? [])],
  });
}

function testServer(server: AxonServer, runtime: Runtime, dataDir: string, db: string): TestServer {
  const url = server.url;
  let closing: Promise<void> | null = null;
  const self: TestServer = {
    server,
    runtime,
    url,
    dataDir,
    db,
    api: (method, path, body, headers) => request(url, method, path, body, headers),
    async newRun(run = {}, headers = {}) {
      const flow = await self.api(
        'POST',
        '/v1/flows',
        { name: 'f', ast: { id: randomUUID() } },
        headers,
      );
      expect(flow.status).toBe(201);
      const { flow_id } = flow.body as { flow_id: string };
      const made = await self.api('POST', `/v1/flows/${flow_id}/runs`, run, headers);
      expect(made.status, made.text).toBe(201);
      return made.body as Run;
    },
    async submit(runId, step, headers = {}) {
      const res = await self.api('POST', `/v1/runs/${runId}/steps`, step, headers);
      expect(res.status, res.text).toBe(201);
      return (res.body as { step_id: string }).step_id;
    },
    async streamText(stepId, headers = {}) {
      const res = await fetch(`${url}/v1/steps/${stepId}/stream`, { headers });
      expect(res.status).toBe(200);
      return res.text();
    },
    close: () => (closing ??= server.close()),
  };
  return self;
}

/** One request to `url + path`; see {@link TestServer.api}. */
export async function request(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Readonly<Record<string, string>> = {},
): Promise<ApiResponse> {
  const raw = typeof body === 'string' || Buffer.isBuffer(body);
  const init: RequestInit = {
    method,
    headers: {
      ...(body === undefined || raw ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: raw ? body : JSON.stringify(body) }),
  };
  const res = await fetch(url + path, init);
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: parsed };
}

/** An SSE frame as it came over the wire. */
export interface SseFrame {
  readonly id: string | null;
  readonly event: string | null;
  /** The `data` parsed as JSON. */
  readonly data: Record<string, unknown>;
  /** The frame's lines as sent. */
  readonly raw: string;
}

/** A stream's text split into its event frames and its comments (`: keep-alive`). */
export function parseSse(text: string): { frames: SseFrame[]; comments: string[] } {
  const frames: SseFrame[] = [];
  const comments: string[] = [];
  for (const block of text.split('\n\n')) {
    if (block.trim() === '') continue;
    const lines = block.split('\n');
    const fields: Record<string, string> = {};
    let isEvent = false;
    for (const line of lines) {
      if (line.startsWith(':')) {
        comments.push(line);
        continue;
      }
      const at = line.indexOf(': ');
      if (at < 0) throw new Error(`not an SSE line: ${JSON.stringify(line)}`);
      fields[line.slice(0, at)] = line.slice(at + 2);
      isEvent = true;
    }
    if (!isEvent) continue;
    frames.push({
      id: fields['id'] ?? null,
      event: fields['event'] ?? null,
      data: JSON.parse(fields['data'] ?? 'null') as Record<string, unknown>,
      raw: lines.filter((l) => !l.startsWith(':')).join('\n'),
    });
  }
  return { frames, comments };
}

/**
 * The order of STREAM-2001: `started`, then tokens, suggestions, facts, metrics and
 * narration, a checkpoint at most, then `end` or `error` last (escalations anywhere).
 */
export function expectStreamOrder(types: readonly string[]): void {
  const ordered = types.filter((t) => t !== 'escalation');
  expect(ordered[0]).toBe('started');
  expect(['end', 'error']).toContain(ordered.at(-1));
  const middle = ordered.slice(1, -1);
  const body = new Set(['token', 'tool_suggest', 'fact', 'metrics', 'narration']);
  const checkpointAt = middle.indexOf('checkpoint');
  const before = checkpointAt < 0 ? middle : middle.slice(0, checkpointAt);
  for (const t of before) expect(body, `${t} in ${types.join(',')}`).toContain(t);
  if (checkpointAt >= 0) expect(middle.slice(checkpointAt)).toEqual(['checkpoint']);
}

/** Expects seq 1, 2, 3, … on `frames` (and `id:` the same as `data.seq`). */
export function expectSeqsFrom(frames: readonly SseFrame[], first: number): void {
  frames.forEach((f, i) => {
    expect(f.id).toBe(String(first + i));
    expect(f.data['seq']).toBe(first + i);
  });
}

/**
 * Expects `res` to be API.md's error answer: `status`, `code`, the body
 * `{ error: { code, message, details }, correlation_id }` and the correlation id the same
 * as the `X-Correlation-Id` header.
 */
export function expectApiError(res: ApiResponse, status: number, code: string): void {
  expect(res.status, res.text).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expectErrorBody(res.body, code);
  expect((res.body as { correlation_id: string }).correlation_id).toBe(
    res.headers.get('x-correlation-id'),
  );
}

/** Expects `body` to be API.md's error body with `code`. */
export function expectErrorBody(body: unknown, code: string): void {
  expect(body).toEqual({
    error: { code, message: expect.any(String) as string, details: expect.any(Object) as object },
    correlation_id: expect.stringMatching(/.+/) as string,
  });
}

/** Runs `curl` with `args` (never throws for an HTTP status); its output and exit code. */
export function curl(args: readonly string[]): Promise<{ stdout: string; code: number }> {
  return new Promise((resolve, reject) => {
    execFile('curl', ['-sS', ...args], { encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') {
        reject(new Error(`curl could not run: ${err.message} ${stderr}`));
        return;
      }
      resolve({ stdout, code: typeof err?.code === 'number' ? err.code : 0 });
    });
  });
}

/** A stream being read as text, a chunk at a time. */
export interface StreamReading {
  readonly res: Response;
  /** What has been read so far. */
  readonly text: () => string;
  /** Reads until `done(text)` holds (or the stream ends); the text so far. */
  readUntil(done: (text: string) => boolean): Promise<string>;
  /** Reads to the end of the stream; the whole text. */
  readToEnd(): Promise<string>;
}

/** Opens `url` with `fetch` and reads its body as it comes. */
export async function openStream(
  url: string,
  headers: Readonly<Record<string, string>> = {},
): Promise<StreamReading> {
  const res = await fetch(url, { headers });
  const body = res.body as ReadableStream<Uint8Array> | null;
  if (!body) throw new Error(`no body from ${url}`);
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let ended = false;
  const readUntil = async (done: (t: string) => boolean): Promise<string> => {
    while (!ended && !done(text)) {
      const chunk = await reader.read();
      if (chunk.done) ended = true;
      else text += decoder.decode(chunk.value, { stream: true });
    }
    return text;
  };
  return { res, text: () => text, readUntil, readToEnd: () => readUntil(() => false) };
}

/** Options of `expect.poll` for what the server does soon after: generous, never a deadline. */
export const POLL = { timeout: 15_000, interval: 20 } as const;

/** The `axon_sse_clients` gauge of the server at `url` (streams open now), as text. */
export async function sseClients(url: string): Promise<string | undefined> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return /^axon_sse_clients (\d+)$/m.exec(text)?.[1];
}

/**
 * The frames of a step's whole stream (read until the server closes it), checked for
 * STREAM-2001's order, seq 1, 2, 3, …, and `step_id` and `ts` on every frame.
 */
export async function streamFrames(s: TestServer, stepId: string): Promise<SseFrame[]> {
  const { frames } = parseSse(await s.streamText(stepId));
  expectStreamOrder(frames.map((f) => f.event ?? ''));
  expectSeqsFrom(frames, 1);
  for (const f of frames) {
    expect(f.data).toMatchObject({ step_id: stepId, ts: expect.any(Number) as number });
  }
  return frames;
}
