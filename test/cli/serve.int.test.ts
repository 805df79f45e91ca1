import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

/** The package root, where `npm run build` writes dist/. */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin/axon.js');
const BUILD_INFO = join(ROOT, 'dist/.tsbuildinfo');
const BUILT_SERVE = join(ROOT, 'dist/src/cli/serve/serve-command.js');

/** The newest modification time of the `.ts` files under `dir`. */
function newestSource(dir: string): number {
  let newest = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = statSync(path);
    if (stat.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (name.endsWith('.ts')) newest = Math.max(newest, stat.mtimeMs);
  }
  return newest;
}

/** Whether dist/ is missing, or older than a source it is built from. */
function buildIsStale(): boolean {
  if (!existsSync(BUILT_SERVE) || !existsSync(BUILD_INFO)) return true;
  const built = statSync(BUILD_INFO).mtimeMs;
  return Math.max(newestSource(join(ROOT, 'src')), newestSource(join(ROOT, 'examples'))) > built;
}

/** A running `axon serve` and what it printed. */
interface Served {
  readonly child: ChildProcess;
  readonly url: string;
  stdout(): string;
  stderr(): string;
  /** Resolves the exit code (or the signal that killed it). */
  readonly exited: Promise<{ readonly code: number | null; readonly signal: string | null }>;
}

/** Variables of the test's own environment the child does not inherit: they would change it. */
const NOT_INHERITED: ReadonlySet<string> = new Set([
  'NODE_OPTIONS',
  'AXON_HOST',
  'AXON_PORT',
  'AXON_DATA_DIR',
  'AXON_API_KEYS',
  'AXON_ENGINE_URL',
  'AXON_SCRIPTED_TOKEN_MS',
]);

/** The child's environment: the test's own, minus what would change the output, plus `env`. */
function childEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const inherited = Object.entries(process.env).filter(([name]) => !NOT_INHERITED.has(name));
  return { ...Object.fromEntries(inherited), AXON_LOG_LEVEL: 'warn', ...env };
}

/** Spawns the built `axon` with `args` in `cwd`; resolves how it exited. */
function spawnAxon(
  args: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv = {},
): {
  readonly child: ChildProcess;
  readonly out: { stdout: string; stderr: string };
  readonly exited: Served['exited'];
} {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd,
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = { stdout: '', stderr: '' };
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    out.stdout += chunk;
  });
  child.stderr.on('data', (chunk: string) => {
    out.stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    child.on('close', (code, signal) => {
      resolve({ code, signal });
    });
  });
  return { child, out, exited };
}

const running = new Set<ChildProcess>();

/** `axon serve --port 0 --data-dir <dataDir> ...args`, once it prints where it listens. */
async function serve(
  dataDir: string,
  cwd: string,
  args: readonly string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<Served> {
  const { child, out, exited } = spawnAxon(
    ['serve', '--port', '0', '--data-dir', dataDir, ...args],
    cwd,
    env,
  );
  running.add(child);
  void exited.then(() => running.delete(child));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`axon serve did not listen in time:\n${out.stdout}\n${out.stderr}`));
    }, 20_000);
    const look = (): void => {
      const m = /^axon serve: listening on (http:\/\/\S+) /m.exec(out.stdout);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout?.on('data', look);
    void exited.then(({ code }) => {
      clearTimeout(timer);
      reject(
        new Error(`axon serve exited ${code} before listening:\n${out.stdout}\n${out.stderr}`),
      );
    });
  });
  return { child, url, exited, stdout: () => out.stdout, stderr: () => out.stderr };
}

/** A JSON request to the server; resolves the status and the body. */
async function call(
  url: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ readonly status: number; readonly body: Record<string, unknown> }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A flow and a run on it; resolves the run's id. */
async function newRun(url: string, headers: Record<string, string> = {}): Promise<string> {
  const flow = await call(url, 'POST', '/v1/flows', { name: `f-${randomUUID()}` }, headers);
  expect(flow.status).toBe(201);
  const run = await call(
    url,
    'POST',
    `/v1/flows/${String(flow.body['flow_id'])}/runs`,
    { seed: 7 },
    headers,
  );
  expect(run.status).toBe(201);
  return String(run.body['run_id']);
}

/** Submits an `llm_call` of `maxTokens` scripted tokens; resolves its step id. */
async function llmStep(url: string, runId: string, maxTokens: number): Promise<string> {
  const step = await call(url, 'POST', `/v1/runs/${runId}/steps`, {
    type: 'llm_call',
    client_token: `c-${randomUUID()}`,
    input: { messages: [{ role: 'user', content: 'Hello' }], params: { max_tokens: maxTokens } },
  });
  expect(step.status).toBe(201);
  return String(step.body['step_id']);
}

interface Frame {
  readonly id: string;
  readonly event: string;
  readonly data: Record<string, unknown>;
}

/**
 * Reads a step's SSE stream to its end; calls `onFrame` with each frame as it comes.
 * Resolves the frames.
 */
async function readStream(
  url: string,
  stepId: string,
  onFrame: (frame: Frame) => void = () => undefined,
): Promise<Frame[]> {
  const res = await fetch(`${url}/v1/steps/${stepId}/stream`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const frames: Frame[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let at: number;
    while ((at = buffer.indexOf('\n\n')) >= 0) {
      const text = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      const fields = new Map<string, string>();
      for (const line of text.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(': ');
        fields.set(line.slice(0, colon), line.slice(colon + 2));
      }
      if (!fields.has('event')) continue;
      const frame = {
        id: fields.get('id') ?? '',
        event: fields.get('event') ?? '',
        data: JSON.parse(fields.get('data') ?? '{}') as Record<string, unknown>,
      };
      frames.push(frame);
      onFrame(frame);
    }
  }
  return frames;
}

beforeAll(async () => {
  if (!buildIsStale()) return;
  const { out, exited } = spawnAxonBuild();
  const { code } = await exited;
  // Type errors elsewhere in a shared working tree still emit: what matters is the output.
  expect(
    existsSync(BUILT_SERVE),
    `npm run build (exit ${code}):\n${out.stdout}\n${out.stderr}`,
  ).toBe(true);
}, 180_000);

function spawnAxonBuild(): ReturnType<typeof spawnAxon> {
  const child = spawn('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (c: Buffer) => (out.stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out.stderr += c.toString()));
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    child.on('close', (code, signal) => {
      resolve({ code, signal });
    });
  });
  return { child, out, exited };
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), `axon-serve-${randomUUID().slice(0, 8)}-`));
});
afterEach(() => {
  for (const child of running) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('axon serve (the built binary, a real child process)', () => {
  it('prints its URL and one curl line, answers /healthz, /v1/pools, a flow, a run and steps, and exits 0 on SIGINT', async () => {
    const data = join(dir, 'data');
    const server = await serve(data, dir);
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const lines = server.stdout().trimEnd().split('\n');
    expect(lines).toEqual([
      expect.stringMatching(
        /^axon serve: listening on http:\/\/127\.0\.0\.1:\d+ \(data in .*data, no config file\)$/,
      ),
      'axon serve: workflows: code-review',
      `trace UI: ${server.url}/ui`,
      `try: curl -s ${server.url}/v1/pools`,
    ]);
    // The UI is where the banner says.
    const ui = await fetch(`${server.url}/ui`);
    expect(ui.status).toBe(200);
    expect(ui.headers.get('content-type')).toMatch(/^text\/html/);
    // The example workflow is served, its scripted model beside the default engine.
    const workflows = await call(server.url, 'GET', '/v1/workflows');
    expect(workflows.status).toBe(200);
    expect(workflows.body).toEqual([expect.objectContaining({ name: 'code-review' })]);

    expect(await call(server.url, 'GET', '/healthz')).toEqual({
      status: 200,
      body: { status: 'ok' },
    });
    const pools = await fetch(`${server.url}/v1/pools`);
    expect(await pools.json()).toEqual([
      expect.objectContaining({ pool_id: 'local', engines: ['code-review-model', 'scripted'] }),
    ]);

    const runId = await newRun(server.url);
    const stepId = await llmStep(server.url, runId, 8);
    const frames = await readStream(server.url, stepId);
    expect(frames.map((f) => f.event)).toEqual([
      'started',
      ...Array<string>(8).fill('token'),
      'metrics',
      'end',
    ]);
    expect(frames.map((f) => f.id)).toEqual(frames.map((_, i) => String(i + 1)));
    const step = await call(server.url, 'GET', `/v1/steps/${stepId}`);
    expect(step.body).toMatchObject({ status: 'succeeded', run_id: runId, type: 'llm_call' });
    expect(step.body['provenance']).toMatchObject({
      engine: 'scripted',
      tokens_out: 8,
      cost_usd: 0,
    });

    // API.md's embedded defaults: the example tool `add`.
    const add = await call(server.url, 'POST', `/v1/runs/${runId}/steps`, {
      type: 'tool_call',
      input: { tool: 'add', args: { a: 2, b: 3 } },
    });
    const addFrames = await readStream(server.url, String(add.body['step_id']));
    expect(addFrames.at(-1)).toMatchObject({ event: 'end', data: { output: { sum: 5 } } });

    server.child.kill('SIGINT');
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect(server.stdout()).toMatch(/^axon serve: SIGINT: draining .*\naxon serve: stopped\n$/m);
    expect(server.stderr()).toBe('');
  });

  it('on SIGTERM while a step runs: the step ends, its stream gets its end, exit 0; a new serve on the same data dir shows the run', async () => {
    const data = join(dir, 'data');
    const first = await serve(data, dir, [], { AXON_SCRIPTED_TOKEN_MS: '20' });
    const runId = await newRun(first.url);
    const stepId = await llmStep(first.url, runId, 40); // about 0.8 s of tokens
    let signalled = false;
    const frames = await readStream(first.url, stepId, (frame) => {
      if (frame.event === 'token' && !signalled) {
        signalled = true;
        first.child.kill('SIGTERM');
      }
    });
    expect(signalled).toBe(true);
    expect(frames.at(-1)?.event).toBe('end');
    expect(frames.filter((f) => f.event === 'token')).toHaveLength(40);
    expect(await first.exited).toEqual({ code: 0, signal: null });
    expect(first.stdout()).toContain('axon serve: SIGTERM: draining');

    // Closed cleanly: the WAL was checkpointed into the file and removed, and the file is whole.
    expect(readdirSync(data).sort()).toEqual(['axon.db']);
    const db = new Database(join(data, 'axon.db'), { readonly: true });
    try {
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      db.close();
    }

    const second = await serve(data, dir);
    // Nothing was left running, so nothing is resumed.
    expect(second.stdout()).not.toContain('resumed');
    const run = await call(second.url, 'GET', `/v1/runs/${runId}`);
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ run_id: runId, status: 'running', seed: 7 });
    const step = await call(second.url, 'GET', `/v1/steps/${stepId}`);
    expect(step.body).toMatchObject({ status: 'succeeded' });
    // The log outlived the process: a stream opened now replays it whole and closes.
    const replay = await readStream(second.url, stepId);
    expect(replay.map((f) => f.event)).toEqual(frames.map((f) => f.event));
    second.child.kill('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });
  });

  it('on SIGTERM with a step longer than server.drain_ms: the step is cancelled, its stream ends with error CANCELLED, exit 0', async () => {
    writeFileSync(join(dir, 'axon.yaml'), 'server:\n  drain_ms: 300\n');
    const server = await serve(join(dir, 'data'), dir, [], { AXON_SCRIPTED_TOKEN_MS: '20' });
    expect(server.stdout()).toContain('config axon.yaml)');
    const stepId = await llmStep(server.url, await newRun(server.url), 1_000); // 20 s
    let signalled = false;
    const frames = await readStream(server.url, stepId, (frame) => {
      if (frame.event === 'token' && !signalled) {
        signalled = true;
        server.child.kill('SIGTERM');
      }
    });
    expect(frames.at(-1)).toMatchObject({ event: 'error', data: { code: 'CANCELLED' } });
    expect(frames.filter((f) => f.event === 'token').length).toBeLessThan(1_000);
    expect(await server.exited).toEqual({ code: 0, signal: null });
  });

  it('a second signal during the drain exits at once with 130', async () => {
    writeFileSync(join(dir, 'axon.yaml'), 'server:\n  drain_ms: 60000\n');
    const server = await serve(join(dir, 'data'), dir, [], { AXON_SCRIPTED_TOKEN_MS: '20' });
    await llmStep(server.url, await newRun(server.url), 3_000); // a minute
    server.child.kill('SIGTERM');
    await expect.poll(() => server.stdout(), { timeout: 5_000 }).toContain('draining');
    const at = Date.now();
    server.child.kill('SIGINT');
    expect(await server.exited).toEqual({ code: 130, signal: null });
    expect(Date.now() - at).toBeLessThan(3_000);
  });

  it('resumes on restart the run a killed server left running: the step is closed with WORKER_RESET and submitted again', async () => {
    const data = join(dir, 'data');
    const first = await serve(data, dir, [], { AXON_SCRIPTED_TOKEN_MS: '50' });
    const runId = await newRun(first.url);
    const stepId = await llmStep(first.url, runId, 200); // 10 s
    await readStream(first.url, stepId, (frame) => {
      if (frame.event === 'token') first.child.kill('SIGKILL');
    }).catch(() => []);
    expect((await first.exited).signal).toBe('SIGKILL');

    const second = await serve(data, dir, [], { AXON_SCRIPTED_TOKEN_MS: '0' });
    expect(second.stdout()).toMatch(
      /^axon serve: resumed 1 run a stop interrupted: 1 step closed with WORKER_RESET, 1 submitted again$/m,
    );
    const old = await call(second.url, 'GET', `/v1/steps/${stepId}`);
    expect(old.body).toMatchObject({ status: 'failed', error: { code: 'WORKER_RESET' } });
    second.child.kill('SIGINT');
    expect(await second.exited).toEqual({ code: 0, signal: null });
  });

  it('with --postgres: runs live in PostgreSQL (the schema axon.yaml names); a killed server’s run is resumed by the next', async () => {
    const url = process.env['AXON_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
    const schema = `axon_test_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
    // The file names a server that does not exist: --postgres overrides its URL, not its schema.
    writeFileSync(
      join(dir, 'axon.yaml'),
      `store:\n  postgres: postgres://nobody@127.0.0.1:1/none\n  schema: ${schema}\n`,
    );
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const data = join(dir, 'data');
      const first = await serve(data, dir, ['--postgres', url], { AXON_SCRIPTED_TOKEN_MS: '50' });
      expect(first.stdout()).toMatch(
        new RegExp(
          `listening on \\S+ \\(store in PostgreSQL at postgres://\\S+, schema ${schema},`,
        ),
      );
      const runId = await newRun(first.url);
      const stepId = await llmStep(first.url, runId, 200); // 10 s
      await readStream(first.url, stepId, (frame) => {
        if (frame.event === 'token') first.child.kill('SIGKILL');
      }).catch(() => []);
      expect((await first.exited).signal).toBe('SIGKILL');
      // Nothing in the data dir: the records are in the schema.
      expect(existsSync(join(data, 'axon.db'))).toBe(false);
      const { rows } = await admin.query(`SELECT status FROM "${schema}".runs WHERE run_id = $1`, [
        runId,
      ]);
      expect(rows).toEqual([{ status: 'running' }]);

      const second = await serve(data, dir, ['--postgres', url], { AXON_SCRIPTED_TOKEN_MS: '0' });
      expect(second.stdout()).toMatch(
        /^axon serve: resumed 1 run a stop interrupted: 1 step closed with WORKER_RESET, 1 submitted again$/m,
      );
      const old = await call(second.url, 'GET', `/v1/steps/${stepId}`);
      expect(old.body).toMatchObject({ status: 'failed', error: { code: 'WORKER_RESET' } });
      second.child.kill('SIGINT');
      expect(await second.exited).toEqual({ code: 0, signal: null });
    } finally {
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin.end();
    }
  });

  it('refuses a PostgreSQL URL that is not postgres://', async () => {
    const bad = spawnAxon(['serve', '--port', '0'], dir, { AXON_POSTGRES_URL: 'mysql://x@h/db' });
    expect((await bad.exited).code).toBe(2);
    expect(bad.out.stderr).toMatch(
      /AXON_POSTGRES_URL.*must be a postgres:\/\/ or postgresql:\/\/ URL/,
    );
  });

  it('with AXON_API_KEYS: 401 without the key, 200 with it, /healthz open; the curl line shows a key placeholder', async () => {
    const key = `k-${randomUUID()}`;
    const server = await serve(join(dir, 'data'), dir, [], { AXON_API_KEYS: `${key}:alice` });
    expect(server.stdout()).toContain(
      `try: curl -s -H 'Authorization: Bearer <key>' ${server.url}/v1/pools`,
    );
    expect(server.stdout()).not.toContain(key);
    expect((await fetch(`${server.url}/v1/pools`)).status).toBe(401);
    const ok = await fetch(`${server.url}/v1/pools`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(ok.status).toBe(200);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    server.child.kill('SIGTERM');
    expect((await server.exited).code).toBe(0);
  });

  it('a bad config file exits 2 with one line naming the key and its line', async () => {
    writeFileSync(join(dir, 'axon.yaml'), 'server:\n  port: 7070\n  prot: 7071\n');
    const { out, exited } = spawnAxon(['serve', '--data-dir', join(dir, 'data')], dir);
    expect(await exited).toEqual({ code: 2, signal: null });
    expect(out.stdout).toBe('');
    expect(out.stderr).toBe('axon serve: axon.yaml line 3: server.prot: unknown key "prot"\n');
    // Refused before anything was opened.
    expect(existsSync(join(dir, 'data'))).toBe(false);
  });

  it('a memory backend axon does not have exits 2 naming the key and its line', async () => {
    writeFileSync(join(dir, 'conf.yaml'), 'memory:\n  warm:\n    backend: mongodb\n');
    const { out, exited } = spawnAxon(
      ['serve', '--config', 'conf.yaml', '--data-dir', join(dir, 'data')],
      dir,
    );
    expect(await exited).toEqual({ code: 2, signal: null });
    expect(out.stderr).toMatch(
      /^axon serve: conf\.yaml line 3: memory\.warm\.backend "mongodb" is not supported: axon has sqlite, redis, postgres\n$/,
    );
  });

  it('listening elsewhere than loopback without keys exits 2 with one line', async () => {
    const { out, exited } = spawnAxon(
      ['serve', '--host', '0.0.0.0', '--port', '0', '--data-dir', join(dir, 'data')],
      dir,
    );
    expect(await exited).toEqual({ code: 2, signal: null });
    expect(out.stderr.split('\n')).toHaveLength(2);
    expect(out.stderr).toMatch(/^axon serve: .*127\.0\.0\.1 only.*0\.0\.0\.0/);
  });
});
