/**
 * `axon serve` over real HTTP (`fetch`): flows by content (NERVE-4001), runs with their
 * modes, seeds and policies (NERVE-4002, NERVE-4022), cancel and complete, provenance
 * (NERVE-4020), and checkpoints with a restart on the same store (NERVE-4005).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createServer } from '../../src/server/create-server.js';
import {
  exampleRuntime,
  expectApiError,
  parseSse,
  request,
  useTestServers,
  type Run,
  POLL,
} from '../support/server.js';

const servers = useTestServers('server-flows');

/** Canonical JSON written here, not imported: the test checks the server's, independently. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const PROVENANCE_KEYS = [
  'seed',
  'prompt_hash',
  'params_hash',
  'engine',
  'model_hash',
  'pool_id',
  'replica_id',
  'tokens_in',
  'tokens_out',
  'cost_usd',
  'decode_time_ms',
];

describe('flows (NERVE-4001)', () => {
  const flow = {
    name: 'trip-planner',
    ast: { steps: ['plan', 'book'], n: 1 },
    tools: [
      {
        name: 'search_flights',
        description: 'Searches flights',
        parameters: { type: 'object', properties: { to: { type: 'string' } } },
      },
    ],
    config: { fact_schemas: { booking: { type: 'object' } }, zeta: 1, alpha: [2, 1] },
    labels: { team: 'travel' },
  };

  it('NERVE-4001: a flow is stored by the sha256 of the canonical JSON of {ast, tools, config}; the same content again is 200 with the same flow_id', async () => {
    const s = await servers.start();
    const first = await s.api('POST', '/v1/flows', flow);
    expect(first.status).toBe(201);
    const expected = createHash('sha256')
      .update(canonical({ ast: flow.ast, tools: flow.tools, config: flow.config }))
      .digest('hex');
    expect(first.body).toEqual({
      flow_id: expect.any(String) as string,
      hash: expected,
      name: 'trip-planner',
    });

    // The same content with its keys in another order and other whitespace: the same flow.
    const reordered = `{ "labels": {"team":"travel"}, "config": {"alpha":[2,1],"zeta":1,
      "fact_schemas":{"booking":{"type":"object"}}}, "tools": ${JSON.stringify(flow.tools)},
      "ast": {"n":1,"steps":["plan","book"]}, "name": "trip-planner" }`;
    const again = await s.api('POST', '/v1/flows', reordered, {
      'content-type': 'application/json',
    });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
  });

  it('NERVE-4001: any change to ast, tools or config makes a new flow; GET by id and by hash return the Flow', async () => {
    const s = await servers.start();
    const base = (await s.api('POST', '/v1/flows', flow)).body as { flow_id: string; hash: string };
    const changes = [
      { ...flow, ast: { ...flow.ast, n: 2 } },
      { ...flow, tools: [] },
      { ...flow, config: { ...flow.config, zeta: 2 } },
    ];
    const ids = new Set([base.flow_id]);
    for (const changed of changes) {
      const res = await s.api('POST', '/v1/flows', changed);
      expect(res.status).toBe(201);
      ids.add((res.body as { flow_id: string }).flow_id);
    }
    expect(ids.size).toBe(4);

    const byId = await s.api('GET', `/v1/flows/${base.flow_id}`);
    expect(byId.status).toBe(200);
    expect(byId.body).toEqual({
      flow_id: base.flow_id,
      hash: base.hash,
      name: flow.name,
      ast: flow.ast,
      tools: flow.tools,
      config: flow.config,
      labels: flow.labels,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as string,
    });
    const byHash = await s.api('GET', `/v1/flows:by-hash/${base.hash}`);
    expect(byHash.status).toBe(200);
    expect(byHash.body).toEqual(byId.body);

    expectApiError(await s.api('GET', '/v1/flows/flow_nope'), 404, 'NOT_FOUND');
    expectApiError(await s.api('GET', `/v1/flows:by-hash/${'0'.repeat(64)}`), 404, 'NOT_FOUND');
  });

  it('tools[].parameters must be valid JSON Schema 2020-12: 422 SCHEMA_VIOLATION otherwise', async () => {
    const s = await servers.start();
    for (const parameters of [
      { type: 'objekt' },
      { type: 'object', properties: { a: { minimum: 'zero' } } },
      { type: 'object', required: 'a' },
    ]) {
      const res = await s.api('POST', '/v1/flows', {
        name: 'bad',
        tools: [{ name: 'x', description: 'x', parameters }],
      });
      expectApiError(res, 422, 'SCHEMA_VIOLATION');
    }
    // An invalid fact schema is refused the same way.
    const facts = await s.api('POST', '/v1/flows', {
      name: 'bad',
      config: { fact_schemas: { booking: { type: 12 } } },
    });
    expectApiError(facts, 422, 'SCHEMA_VIOLATION');
    // A flow body that is not the shape of API.md is 400.
    expectApiError(await s.api('POST', '/v1/flows', { name: 3 }), 400, 'INVALID_PARAMS');
  });
});

describe('runs', () => {
  it('NERVE-4002: POST /v1/flows/{flow_id}/runs is 201 with the Run of API.md; GET returns it', async () => {
    const s = await servers.start();
    const body = {
      mode: 'record',
      seed: 42,
      budgets: {
        max_tokens_in: 100000,
        max_tokens_out: 20000,
        max_wall_ms: 600000,
        max_cost_usd: 2.5,
      },
      policy: { tools: { allow: ['add'], deny: [] }, max_depth: 3, steps_per_minute: 100 },
      pool_policy: { placement: 'auto' },
      fs_policy: { roots: ['./sandbox'], allow: ['**/*.md'], quota_bytes: 1048576 },
      replay_of: null,
      cancel_on_disconnect: true,
    };
    const run = await s.newRun(body);
    expect(run).toMatchObject({
      run_id: expect.any(String) as string,
      flow_id: expect.any(String) as string,
      mode: 'record',
      seed: 42,
      budgets: body.budgets,
      policy: body.policy,
      pool_policy: body.pool_policy,
      fs_policy: body.fs_policy,
      status: 'running',
      budget_usage: { tokens_in: 0, tokens_out: 0, cost_usd: 0, wall_ms: 0 },
      provenance: null,
      created_at: expect.any(String) as string,
    });
    const got = await s.api('GET', `/v1/runs/${run.run_id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(run);

    // Defaults: a run with no body is a `record` run.
    const { flow_id } = run;
    const bare = await s.api('POST', `/v1/flows/${flow_id}/runs`);
    expect(bare.status).toBe(201);
    expect(bare.body).toMatchObject({ mode: 'record', status: 'running', seed: null });
  });

  it('refuses a run it cannot make: unknown flow 404, replay without replay_of 400, a pool that is not there 503', async () => {
    const s = await servers.start();
    const run = await s.newRun();
    expectApiError(await s.api('POST', '/v1/flows/flow_nope/runs', {}), 404, 'NOT_FOUND');
    expectApiError(
      await s.api('POST', `/v1/flows/${run.flow_id}/runs`, { mode: 'replay' }),
      400,
      'INVALID_PARAMS',
    );
    expectApiError(
      await s.api('POST', `/v1/flows/${run.flow_id}/runs`, { mode: 'fast' }),
      400,
      'INVALID_PARAMS',
    );
    expectApiError(
      await s.api('POST', `/v1/flows/${run.flow_id}/runs`, {
        pool_policy: { placement: { pin: 'gpu-pool' } },
      }),
      503,
      'POOL_UNAVAILABLE',
    );
    expectApiError(await s.api('GET', '/v1/runs/run_nope'), 404, 'NOT_FOUND');
  });

  it('NERVE-4022: a strict_replay run whose seed differs from the recorded run is 409 REPLAY_MISMATCH; the same seed replays byte for byte', async () => {
    const s = await servers.start();
    const recorded = await s.newRun({ seed: 7 });
    const step = {
      type: 'llm_call',
      client_token: 'c-1',
      input: { messages: [{ role: 'user', content: 'plan' }], params: { max_tokens: 6 } },
    };
    const first = await s.submit(recorded.run_id, step);
    const recordedText = parseSse(await s.streamText(first)).frames.at(-1)?.data['output'];

    const mismatch = await s.api('POST', `/v1/flows/${recorded.flow_id}/runs`, {
      mode: 'strict_replay',
      replay_of: recorded.run_id,
      seed: 8,
    });
    expectApiError(mismatch, 409, 'REPLAY_MISMATCH');
    expect(JSON.stringify(mismatch.body)).toContain('seed');

    const replay = await s.api('POST', `/v1/flows/${recorded.flow_id}/runs`, {
      mode: 'strict_replay',
      replay_of: recorded.run_id,
    });
    expect(replay.status).toBe(201);
    const replayRun = replay.body as Run;
    expect(replayRun).toMatchObject({ mode: 'strict_replay', seed: 7, replay_of: recorded.run_id });
    const again = await s.submit(replayRun.run_id, step);
    const replayed = parseSse(await s.streamText(again)).frames;
    expect(replayed.at(-1)?.event).toBe('end');
    expect(replayed.at(-1)?.data['output']).toEqual(recordedText);

    // Another prompt under the recorded client token: the step ends REPLAY_MISMATCH.
    // The same token in the same run is the same step, whatever the body (NERVE-4003).
    const other = await s.api('POST', `/v1/runs/${replayRun.run_id}/steps`, {
      ...step,
      input: { ...step.input, messages: [{ role: 'user', content: 'other' }] },
    });
    expect(other.status).toBe(200);
    expect(other.body).toMatchObject({ step_id: again });
    const third = (
      await s.api('POST', `/v1/flows/${recorded.flow_id}/runs`, {
        mode: 'strict_replay',
        replay_of: recorded.run_id,
      })
    ).body as Run;
    const differs = await s.submit(third.run_id, {
      ...step,
      input: { ...step.input, messages: [{ role: 'user', content: 'other' }] },
    });
    const last = parseSse(await s.streamText(differs)).frames.at(-1);
    expect(last?.event).toBe('error');
    expect(last?.data['code']).toBe('REPLAY_MISMATCH');
    expect(String(last?.data['message'])).toContain('prompt_hash');
  });

  it('POST /v1/runs/{id}/cancel is 202 cancelling, and every live step of the run ends with error CANCELLED', async () => {
    const s = await servers.start();
    const run = await s.newRun();
    const steps = await Promise.all([
      s.submit(run.run_id, { type: 'gate_eval', input: { fact_type: 'never', wait_ms: 600_000 } }),
      s.submit(run.run_id, { type: 'gate_eval', input: { fact_type: 'never2', wait_ms: 600_000 } }),
      s.submit(run.run_id, {
        type: 'llm_call',
        input: { messages: [{ role: 'user', content: 'x' }], params: { max_tokens: 1_000_000 } },
      }),
    ]);
    const streams = steps.map((id) => s.streamText(id));
    const cancel = await s.api('POST', `/v1/runs/${run.run_id}/cancel`);
    expect(cancel.status).toBe(202);
    expect(cancel.body).toEqual({ status: 'cancelling' });
    for (const text of await Promise.all(streams)) {
      const last = parseSse(text).frames.at(-1);
      expect(last?.event).toBe('error');
      expect(last?.data).toMatchObject({
        code: 'CANCELLED',
        retriable: expect.any(Boolean) as boolean,
      });
    }
    for (const id of steps) {
      const step = await s.api('GET', `/v1/steps/${id}`);
      expect(step.body).toMatchObject({ status: 'cancelled', error: { code: 'CANCELLED' } });
    }
    await expect
      .poll(async () => ((await s.api('GET', `/v1/runs/${run.run_id}`)).body as Run).status, POLL)
      .toBe('cancelled');
    // A cancelled run takes no more steps, and cannot be cancelled again.
    expectApiError(
      await s.api('POST', `/v1/runs/${run.run_id}/steps`, {
        type: 'checkpoint',
        input: {},
      }),
      409,
      'CONFLICT',
    );
    expectApiError(await s.api('POST', `/v1/runs/${run.run_id}/cancel`), 409, 'CONFLICT');
    expectApiError(await s.api('POST', '/v1/runs/run_nope/cancel'), 404, 'NOT_FOUND');
  });

  it('NERVE-4020: POST /v1/runs/{id}/complete is 200 with the Run completed, its provenance and usage the sum of its steps', async () => {
    const s = await servers.start();
    const run = await s.newRun({ seed: 11 });
    const id = await s.submit(run.run_id, {
      type: 'llm_call',
      input: { messages: [{ role: 'user', content: 'hello' }], params: { max_tokens: 5 } },
    });
    const end = parseSse(await s.streamText(id)).frames.at(-1);
    expect(end?.event).toBe('end');
    const provenance = end?.data['provenance'] as Record<string, unknown>;
    for (const key of PROVENANCE_KEYS) expect(provenance).toHaveProperty(key);
    expect(provenance).toMatchObject({
      seed: 11,
      engine: 'scripted',
      pool_id: 'local',
      tokens_out: 5,
      cost_usd: 0,
      prompt_hash: expect.stringMatching(/^[0-9a-f]{64}$/) as string,
      params_hash: expect.stringMatching(/^[0-9a-f]{64}$/) as string,
      model_hash: expect.stringMatching(/^[0-9a-f]{64}$/) as string,
    });
    const step = (await s.api('GET', `/v1/steps/${id}`)).body as Record<string, unknown>;
    expect(step['provenance']).toEqual(provenance);

    const completed = await s.api('POST', `/v1/runs/${run.run_id}/complete`);
    expect(completed.status).toBe(200);
    expect(completed.body).toMatchObject({
      run_id: run.run_id,
      status: 'completed',
      budget_usage: { tokens_out: 5 },
      provenance: { seed: 11, tokens_out: 5, cost_usd: 0, pool_id: 'local' },
    });
    for (const key of PROVENANCE_KEYS) {
      expect((completed.body as Run)['provenance']).toHaveProperty(key);
    }
    expectApiError(await s.api('POST', `/v1/runs/${run.run_id}/complete`), 409, 'CONFLICT');
  });
});

describe('checkpoints (NERVE-4005)', () => {
  it('POST /v1/runs/{id}/checkpoint is 201 {checkpoint_id, run_id, step_id, ts}; GET /checkpoints lists them in order', async () => {
    const s = await servers.start();
    const run = await s.newRun();
    const first = await s.api('POST', `/v1/runs/${run.run_id}/checkpoint`);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      checkpoint_id: expect.any(String) as string,
      run_id: run.run_id,
      step_id: null,
      ts: expect.any(Number) as number,
    });
    const second = await s.api('POST', `/v1/runs/${run.run_id}/checkpoint`, { label: 'two' });
    expect(second.status).toBe(201);
    const list = await s.api('GET', `/v1/runs/${run.run_id}/checkpoints`);
    expect(list.status).toBe(200);
    expect((list.body as { checkpoint_id: string }[]).map((c) => c.checkpoint_id)).toEqual([
      (first.body as { checkpoint_id: string }).checkpoint_id,
      (second.body as { checkpoint_id: string }).checkpoint_id,
    ]);
    expectApiError(await s.api('POST', '/v1/runs/run_nope/checkpoint'), 404, 'NOT_FOUND');
    expectApiError(await s.api('GET', '/v1/runs/run_nope/checkpoints'), 404, 'NOT_FOUND');
  });

  it('NERVE-4005: a server restarted on the same store resumes a run from its latest checkpoint and the log', async () => {
    const dataDir = servers.folder();
    const db = join(dataDir, 'axon.db');
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        fileURLToPath(new URL('../fixtures/server-process.ts', import.meta.url)),
        db,
        dataDir,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
      child.on('exit', (code, signal) => {
        resolve(signal ?? code);
      }),
    );
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const line = /^listening (\S+)$/m.exec(out);
        if (line?.[1]) resolve(line[1]);
      });
      void exited.then((how) => {
        reject(new Error(`the server process ended (${String(how)}): ${stderr}`));
      });
    });
    const api = (method: string, path: string, body?: unknown) => request(url, method, path, body);

    const flow = (await api('POST', '/v1/flows', { name: 'restart' })).body as { flow_id: string };
    const run = (await api('POST', `/v1/flows/${flow.flow_id}/runs`, { seed: 3 })).body as Run;
    expect(
      (await api('POST', `/v1/runs/${run.run_id}/facts`, { type: 'ready', data: {} })).status,
    ).toBe(201);
    const a = await api('POST', `/v1/runs/${run.run_id}/steps`, {
      type: 'gate_eval',
      client_token: 'a',
      input: { fact_type: 'ready' },
    });
    expect(a.status).toBe(201);
    const aId = (a.body as { step_id: string }).step_id;
    await (await fetch(`${url}/v1/steps/${aId}/stream`)).text();
    await api('POST', `/v1/runs/${run.run_id}/checkpoint`, { label: 'after a' });
    const b = await api('POST', `/v1/runs/${run.run_id}/steps`, {
      type: 'gate_eval',
      client_token: 'b',
      input: { fact_type: 'go', wait_ms: 600_000 },
    });
    const bId = (b.body as { step_id: string }).step_id;
    const latest = (await api('POST', `/v1/runs/${run.run_id}/checkpoint`, { label: 'b live' }))
      .body as { checkpoint_id: string };
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');

    // A new server on the same store, as `axon serve` starts: resume, then listen.
    const runtime = exampleRuntime(db, dataDir);
    const [resumed] = await runtime.resumeRuns();
    expect(resumed).toMatchObject({
      run_id: run.run_id,
      checkpoint_id: latest.checkpoint_id,
      interrupted: [bId],
    });
    const server = await createServer(runtime, { port: 0 });
    try {
      const again = (m: string, p: string, body?: unknown) => request(server.url, m, p, body);
      expect(((await again('GET', `/v1/runs/${run.run_id}`)).body as Run).status).toBe('running');
      expect((await again('GET', `/v1/steps/${aId}`)).body).toMatchObject({ status: 'succeeded' });
      const old = await again('GET', `/v1/steps/${bId}`);
      expect(old.body).toMatchObject({ error: { code: 'WORKER_RESET' } });
      // b runs again under its client token: the token now names the new step.
      const same = await again('POST', `/v1/runs/${run.run_id}/steps`, {
        type: 'gate_eval',
        client_token: 'b',
        input: { fact_type: 'go', wait_ms: 600_000 },
      });
      expect(same.status).toBe(200);
      const rerun = (same.body as { step_id: string }).step_id;
      expect(rerun).not.toBe(bId);
      const stream = fetch(`${server.url}/v1/steps/${rerun}/stream`).then((r) => r.text());
      expect(
        (await again('POST', `/v1/runs/${run.run_id}/facts`, { type: 'go', data: {} })).status,
      ).toBe(201);
      const last = parseSse(await stream).frames.at(-1);
      expect(last).toMatchObject({ event: 'end', data: { output: { passed: true } } });
      const checkpoints = (await again('GET', `/v1/runs/${run.run_id}/checkpoints`)).body as {
        label: string;
      }[];
      expect(checkpoints.map((c) => c.label)).toEqual(['after a', 'b live']);
    } finally {
      await server.close();
    }
  });
});
