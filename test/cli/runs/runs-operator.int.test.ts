/**
 * What `axon runs list` and `axon trace` tell an operator (issue 45), the same from a real
 * `axon serve` (`--url`) as from its data dir: a run that goes on after some of its steps
 * failed says so beside its status (`running · 2 failed steps`, `failed_steps` in `--json`),
 * counted from the run's steps as the API gives them; and a run made under the name its
 * caller posted the flow with — the same content as the stored flow `hello`, posted as `trip`
 * — is listed as `trip`, and `--entry trip` finds it.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type AxonServer } from '../../../src/server/create-server.js';
import { request } from '../../support/server.js';
import { axon, createDataDir, tableRows, type DataDir } from '../run-fixtures.js';

let data: DataDir;
let server: AxonServer;
/** The run made as `trip` (two failed steps, one succeeded, still running) and as `hello`. */
const ids = { trip: '', hello: '' };

/** `POST`s `body` to `path` of the server; its answer's body, expecting `status`. */
async function post<T>(path: string, body: unknown, status = 201): Promise<T> {
  const res = await request(server.url, 'POST', path, body);
  expect(res.status, res.text).toBe(status);
  return res.body as T;
}

/** Submits a step to `runId` and reads its stream to its end; the step's status then. */
async function ended(runId: string, step: unknown): Promise<string> {
  const { step_id } = await post<{ step_id: string }>(`/v1/runs/${runId}/steps`, step);
  const stream = await fetch(`${server.url}/v1/steps/${step_id}/stream`);
  await stream.text();
  return ((await request(server.url, 'GET', `/v1/steps/${step_id}`)).body as { status: string })
    .status;
}

beforeAll(async () => {
  data = createDataDir();
  server = await createServer(data.runtime, { port: 0, version: '0.0.0-test' });
  const content = { ast: { steps: ['greet'], id: randomUUID() } };
  const hello = await post<{ flow_id: string }>('/v1/flows', { name: 'hello', ...content });
  const again = await post<{ flow_id: string; posted_name: string }>(
    '/v1/flows',
    { name: 'trip', ...content },
    200,
  );
  expect(again).toMatchObject({ flow_id: hello.flow_id, posted_name: 'trip' });

  const helloRun = await post<{ run_id: string }>(`/v1/flows/${hello.flow_id}/runs`, {});
  ids.hello = helloRun.run_id;
  expect(
    await ended(ids.hello, { type: 'tool_call', input: { tool: 'lookup', args: { q: 'a' } } }),
  ).toBe('succeeded');
  await post(`/v1/runs/${ids.hello}/complete`, undefined, 200);

  const tripRun = await post<{ run_id: string }>(`/v1/flows/${hello.flow_id}/runs`, {
    entry: 'trip',
  });
  ids.trip = tripRun.run_id;
  const broken = { type: 'agent', input: { agent: 'broken', message: 'now' } };
  expect(await ended(ids.trip, broken)).toBe('failed');
  expect(
    await ended(ids.trip, { type: 'tool_call', input: { tool: 'lookup', args: { q: 'b' } } }),
  ).toBe('succeeded');
  expect(await ended(ids.trip, broken)).toBe('failed');
});

afterAll(async () => {
  await server.close();
  await data.dispose();
});

/** The source flags of both sources: the server, and the data dir it writes. */
const sources = (): [string, string[]][] => [
  ['--url', ['--url', server.url]],
  ['--data-dir', ['--data-dir', data.dir]],
];

describe('runs list', () => {
  it('a running run whose steps failed says how many beside its status; the posted name is its entry — from the server and the data dir alike', async () => {
    const outputs: string[] = [];
    for (const [, flags] of sources()) {
      const { code, stdout, stderr } = await axon(['runs', 'list', ...flags]);
      expect(stderr).toBe('');
      expect(code).toBe(0);
      const rows = tableRows(stdout);
      expect(rows[0]?.slice(0, 3)).toEqual(['RUN', 'ENTRY', 'STATUS']);
      expect(rows.slice(1).map((r) => r.slice(0, 3))).toEqual([
        [ids.trip, 'trip', 'running · 2 failed steps'],
        [ids.hello, 'hello', 'completed'],
      ]);
      outputs.push(stdout);
    }
    expect(outputs[0]).toBe(outputs[1]);
  });

  it('--json: each run with failed_steps and its entry', async () => {
    for (const [, flags] of sources()) {
      const { code, stdout } = await axon(['runs', 'list', ...flags, '--json']);
      expect(code).toBe(0);
      const runs = JSON.parse(stdout) as Record<string, unknown>[];
      expect(runs.map((r) => [r['run_id'], r['entry'], r['status'], r['failed_steps']])).toEqual([
        [ids.trip, 'trip', 'running', 2],
        [ids.hello, 'hello', 'completed', 0],
      ]);
    }
  });

  it.each([
    ['trip', 'trip'],
    ['hello', 'hello'],
  ] as const)('--entry %s keeps the runs listed under that name', async (entry, which) => {
    for (const [, flags] of sources()) {
      const { code, stdout } = await axon(['runs', 'list', ...flags, '--entry', entry]);
      expect(code).toBe(0);
      expect(
        tableRows(stdout)
          .slice(1)
          .map((r) => [r[0], r[1]]),
      ).toEqual([[ids[which], entry]]);
    }
  });

  it('--entry that lists nothing says so; an empty one is a usage error, exit 2', async () => {
    const none = await axon(['runs', 'list', '--data-dir', data.dir, '--entry', 'nope']);
    expect(none).toEqual({
      code: 0,
      stdout: `no runs of entry nope in data dir ${data.dir}\n`,
      stderr: '',
    });
    const empty = await axon(['runs', 'list', '--data-dir', data.dir, '--entry', '']);
    expect(empty.code).toBe(2);
    expect(empty.stdout).toBe('');
    expect(empty.stderr).toBe('axon runs list: --entry must be 1 to 256 characters, got ""\n');
  });
});

describe('trace', () => {
  it("the run's line says its entry and how many of its steps failed; --json says failed_steps", async () => {
    const texts: string[] = [];
    for (const [, flags] of sources()) {
      const text = await axon(['trace', ids.trip, ...flags]);
      expect(text.code).toBe(0);
      expect(text.stdout.split('\n')[0]).toMatch(
        new RegExp(`^run ${ids.trip}: trip, running · 2 failed steps, created \\S+ \\S+Z$`),
      );
      texts.push(text.stdout);
      const json = await axon(['trace', ids.trip, ...flags, '--json']);
      expect(JSON.parse(json.stdout)).toMatchObject({
        run: { run_id: ids.trip, entry: 'trip', status: 'running', failed_steps: 2 },
        totals: { steps: 3 },
      });
    }
    expect(texts[0]).toBe(texts[1]);
    const hello = await axon(['trace', ids.hello, '--url', server.url]);
    expect(hello.stdout.split('\n')[0]).toMatch(new RegExp(`^run ${ids.hello}: hello, completed,`));
  });
});
