/**
 * `axon serve` over real HTTP: the step types of API.md's table, submitted with `fetch` and
 * read back from their SSE streams — client tokens (NERVE-4003), `llm_call` and `llm_plan`,
 * `tool_call` with its arguments checked, `fs_op` through the run's `fs_policy`, `checkpoint`,
 * `agent`, budgets and cancel. `gate_eval` and facts are in facts.int.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { defineTool } from '../../src/tools/define-tool.js';
import {
  expectApiError,
  openStream,
  parseSse,
  streamFrames,
  useTestServers,
  type SseFrame,
  type TestServer,
} from '../support/server.js';

const servers = useTestServers('server-steps');

/** A server with a counting agent, a counting tool and an engine that suggests tool calls. */
async function start(): Promise<{ s: TestServer; agentRuns: () => number; tallies: () => number }> {
  let agentRuns = 0;
  let tallies = 0;
  const counter = defineAgent({
    name: 'counter',
    handler: (input) => {
      agentRuns++;
      return `counted ${input.message}`;
    },
  });
  const tally = defineTool({
    name: 'tally',
    description: 'Counts its calls',
    input: z.strictObject({ n: z.number().int() }),
    handler: ({ n }) => {
      tallies++;
      return { n };
    },
  });
  const planning = createScriptedEngine({
    name: 'planning',
    tokenDelayMs: 0,
    script: () => ({
      text: 'I would add them',
      toolCalls: [
        { name: 'add', arguments: { a: 1, b: 2 } },
        { name: 'tally', arguments: { n: 'x' } },
      ],
    }),
  });
  const s = await servers.start({
    runtime: { agents: [counter], tools: [tally], engines: [planning] },
  });
  return { s, agentRuns: () => agentRuns, tallies: () => tallies };
}

const last = (frames: readonly SseFrame[]): SseFrame | undefined => frames.at(-1);
const llm = (content: string, maxTokens: number): Record<string, unknown> => ({
  messages: [{ role: 'user', content }],
  params: { max_tokens: maxTokens },
});

describe('steps: submission (NERVE-4003)', () => {
  it('NERVE-4003: the same client_token in the same run is 200 with the same step_id, and nothing runs again', async () => {
    const { s, agentRuns } = await start();
    const run = await s.newRun();
    const body = {
      type: 'agent',
      client_token: 'c-1',
      input: { agent: 'counter', message: 'one' },
    };
    const first = await s.api('POST', `/v1/runs/${run.run_id}/steps`, body);
    expect(first.status).toBe(201);
    expect(first.body).toEqual({ step_id: expect.any(String) as string, status: 'running' });
    const stepId = (first.body as { step_id: string }).step_id;
    expect(last(await streamFrames(s, stepId))?.event).toBe('end');

    const again = await s.api('POST', `/v1/runs/${run.run_id}/steps`, body);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ step_id: stepId, status: 'succeeded' });
    // Concurrent repeats while it runs: one step, run once.
    const parallel = await Promise.all(
      Array.from({ length: 8 }, () =>
        s.api('POST', `/v1/runs/${run.run_id}/steps`, { ...body, client_token: 'c-2' }),
      ),
    );
    expect(parallel.filter((r) => r.status === 201)).toHaveLength(1);
    expect(parallel.filter((r) => r.status === 200)).toHaveLength(7);
    expect(new Set(parallel.map((r) => (r.body as { step_id: string }).step_id)).size).toBe(1);
    await s.streamText((parallel[0]?.body as { step_id: string }).step_id);
    expect(agentRuns()).toBe(2);

    // In another run the token is another step.
    const other = await s.newRun();
    expect((await s.api('POST', `/v1/runs/${other.run_id}/steps`, body)).status).toBe(201);
  });

  it("a step's own placement overrides its run's pool_policy (API.md, seed 003 §6): kept in placement_decision; a pool that does not exist is 503 POOL_UNAVAILABLE, a malformed one 400", async () => {
    const { s } = await start();
    const run = await s.newRun();
    const id = await s.submit(run.run_id, {
      type: 'checkpoint',
      input: {},
      placement: { pin: 'local' },
    });
    await s.streamText(id);
    expect((await s.api('GET', `/v1/steps/${id}`)).body).toMatchObject({
      status: 'succeeded',
      placement_decision: { pool_id: 'local', policy: 'pin' },
    });
    for (const placement of [{ pin: 'gpu' }, { affinity: { tags: ['a100'] } }]) {
      expectApiError(
        await s.api('POST', `/v1/runs/${run.run_id}/steps`, {
          type: 'checkpoint',
          input: {},
          placement,
        }),
        503,
        'POOL_UNAVAILABLE',
      );
    }
    for (const placement of ['gpu', { pin: '' }, { pool: 'local' }, { affinity: { tags: 'x' } }]) {
      expectApiError(
        await s.api('POST', `/v1/runs/${run.run_id}/steps`, {
          type: 'checkpoint',
          input: {},
          placement,
        }),
        400,
        'INVALID_PARAMS',
      );
    }
  });

  it('GET /v1/steps/{id} is the Step of API.md', async () => {
    const { s } = await start();
    const run = await s.newRun({ seed: 5 });
    const id = await s.submit(run.run_id, {
      type: 'llm_call',
      client_token: 'g',
      input: llm('hi', 3),
      placement: 'auto',
      budgets: { max_tokens_out: 500 },
    });
    await s.streamText(id);
    const step = await s.api('GET', `/v1/steps/${id}`);
    expect(step.status).toBe(200);
    expect(step.body).toMatchObject({
      step_id: id,
      run_id: run.run_id,
      type: 'llm_call',
      client_token: 'g',
      input: llm('hi', 3),
      placement: expect.any(String) as string,
      status: 'succeeded',
      budget_usage: { tokens_out: 3 },
      provenance: { seed: 5, engine: 'scripted', tokens_out: 3 },
      output: { text: expect.any(String) as string },
      error: null,
      created_at: expect.any(String) as string,
      ended_at: expect.any(String) as string,
    });
    expectApiError(await s.api('GET', '/v1/steps/step_nope'), 404, 'NOT_FOUND');
    expectApiError(
      await s.api('POST', '/v1/runs/run_nope/steps', { type: 'checkpoint', input: {} }),
      404,
      'NOT_FOUND',
    );
    expectApiError(
      await s.api('POST', `/v1/runs/${run.run_id}/steps`, { type: 'dance', input: {} }),
      400,
      'INVALID_PARAMS',
    );
  });
});

describe('steps: the types of API.md', () => {
  it('llm_call streams params.max_tokens tokens of a text deterministic in the seed and the messages (STREAM-2001)', async () => {
    const { s } = await start();
    const texts: string[] = [];
    for (const seed of [42, 42, 43]) {
      const run = await s.newRun({ seed });
      const frames = await streamFrames(
        s,
        await s.submit(run.run_id, { type: 'llm_call', input: llm('Plan a trip', 12) }),
      );
      const tokens = frames.filter((f) => f.event === 'token');
      expect(tokens.map((t) => t.data['i'])).toEqual([...Array(12).keys()]);
      const text = tokens.map((t) => String(t.data['t'])).join('');
      expect(last(frames)).toMatchObject({ event: 'end', data: { output: { text } } });
      expect(frames[0]?.data).toMatchObject({ provenance: expect.any(Object) as object });
      texts.push(text);
    }
    expect(texts[1]).toBe(texts[0]);
    expect(texts[2]).not.toBe(texts[0]);
  });

  it('llm_plan emits tool_suggest events for valid suggestions and runs none of them', async () => {
    const { s, tallies } = await start();
    const run = await s.newRun();
    const frames = await streamFrames(
      s,
      await s.submit(run.run_id, {
        type: 'llm_plan',
        input: {
          engine: 'planning',
          messages: [{ role: 'user', content: 'sum' }],
          tools: ['add', 'tally'],
        },
      }),
    );
    const suggestions = frames.filter((f) => f.event === 'tool_suggest');
    expect(suggestions.map((f) => f.data)).toEqual([
      expect.objectContaining({ tool: 'add', args: { a: 1, b: 2 } }),
    ]);
    expect(last(frames)).toMatchObject({
      event: 'end',
      data: { output: { suggestions: [{ tool: 'add', args: { a: 1, b: 2 } }] } },
    });
    expect(tallies()).toBe(0);
    // Without tools an llm_plan has nothing to plan with.
    const bare = await streamFrames(
      s,
      await s.submit(run.run_id, { type: 'llm_plan', input: llm('x', 3) }),
    );
    expect(last(bare)).toMatchObject({ event: 'error', data: { code: 'SCHEMA_VIOLATION' } });
  });

  it('tool_call: args are validated against the tool schema: error SCHEMA_VIOLATION and the tool not run; valid args run it', async () => {
    const { s, tallies } = await start();
    const run = await s.newRun();
    const sum = await streamFrames(
      s,
      await s.submit(run.run_id, {
        type: 'tool_call',
        input: { tool: 'add', args: { a: 2, b: 40 } },
      }),
    );
    expect(last(sum)).toMatchObject({ event: 'end', data: { output: { sum: 42 } } });

    for (const args of [{ n: 'seven' }, {}, { n: 1, extra: true }]) {
      const bad = await streamFrames(
        s,
        await s.submit(run.run_id, { type: 'tool_call', input: { tool: 'tally', args } }),
      );
      expect(bad.map((f) => f.event)).toEqual(['started', 'error']);
      expect(last(bad)?.data).toMatchObject({ code: 'SCHEMA_VIOLATION', retriable: false });
    }
    expect(tallies()).toBe(0);
    expect(
      last(
        await streamFrames(
          s,
          await s.submit(run.run_id, {
            type: 'tool_call',
            input: { tool: 'tally', args: { n: 1 } },
          }),
        ),
      )?.event,
    ).toBe('end');
    expect(tallies()).toBe(1);
    // An unknown tool is refused before any step.
    expectApiError(
      await s.api('POST', `/v1/runs/${run.run_id}/steps`, {
        type: 'tool_call',
        input: { tool: 'nope', args: {} },
      }),
      404,
      'NOT_FOUND',
    );
  });

  it("tool_call: a tool the run's policy does not allow ends with error POLICY_DENIED, and the tool does not run", async () => {
    const { s, tallies } = await start();
    for (const policy of [{ tools: { allow: ['add'] } }, { tools: { deny: ['tally'] } }]) {
      const run = await s.newRun({ policy });
      const frames = await streamFrames(
        s,
        await s.submit(run.run_id, { type: 'tool_call', input: { tool: 'tally', args: { n: 1 } } }),
      );
      expect(last(frames)).toMatchObject({ event: 'error', data: { code: 'POLICY_DENIED' } });
    }
    expect(tallies()).toBe(0);
  });

  it("fs_op goes through the run's fs_policy: read, write, list, stat, delete; `..`, a glob miss and the quota are POLICY_DENIED", async () => {
    const { s } = await start();
    const run = await s.newRun({
      fs_policy: { roots: ['./notes'], allow: ['**/*.md'], quota_bytes: 32 },
    });
    const op = async (input: Record<string, unknown>): Promise<SseFrame | undefined> =>
      last(await streamFrames(s, await s.submit(run.run_id, { type: 'fs_op', input })));

    expect(await op({ op: 'write', path: 'plan.md', content: 'hello' })).toMatchObject({
      event: 'end',
      data: { output: { bytes: 5 } },
    });
    // Relative roots live under <data-dir>/sandbox/.
    expect(readFileSync(join(s.dataDir, 'sandbox', 'notes', 'plan.md'), 'utf8')).toBe('hello');
    expect(await op({ op: 'read', path: 'plan.md' })).toMatchObject({
      data: { output: { content: 'hello' } },
    });
    expect(await op({ op: 'list', path: '.' })).toMatchObject({
      data: { output: { entries: [{ name: 'plan.md', type: 'file', size: 5 }] } },
    });
    expect(await op({ op: 'stat', path: 'plan.md' })).toMatchObject({
      data: { output: { type: 'file', size: 5, mtime: expect.anything() as unknown } },
    });
    for (const path of ['../escape.md', '../../axon.db', '/etc/passwd', 'notes.txt']) {
      const denied = await op({ op: 'read', path });
      expect(denied, path).toMatchObject({ event: 'error', data: { code: 'POLICY_DENIED' } });
    }
    const quota = await op({ op: 'write', path: 'big.md', content: 'x'.repeat(40) });
    expect(quota).toMatchObject({
      event: 'error',
      data: { code: 'POLICY_DENIED', details: { reason: 'quota' } },
    });
    expect(await op({ op: 'delete', path: 'plan.md' })).toMatchObject({
      data: { output: { deleted: true } },
    });

    // A run without an fs_policy may not touch files at all.
    const bare = await s.newRun();
    const frames = await streamFrames(
      s,
      await s.submit(bare.run_id, { type: 'fs_op', input: { op: 'list', path: '.' } }),
    );
    expect(last(frames)).toMatchObject({ event: 'error', data: { code: 'POLICY_DENIED' } });
  });

  it('checkpoint: started → checkpoint {checkpoint_id} → end, and the checkpoint is listed with its step', async () => {
    const { s } = await start();
    const run = await s.newRun();
    const id = await s.submit(run.run_id, { type: 'checkpoint', input: { label: 'mid' } });
    const frames = await streamFrames(s, id);
    expect(frames.map((f) => f.event)).toEqual(['started', 'checkpoint', 'end']);
    const checkpointId = frames[1]?.data['checkpoint_id'];
    expect(checkpointId).toEqual(expect.any(String));
    const list = (await s.api('GET', `/v1/runs/${run.run_id}/checkpoints`)).body;
    expect(list).toEqual([
      expect.objectContaining({ checkpoint_id: checkpointId, step_id: id, run_id: run.run_id }),
    ]);
  });

  it('agent: invokes a registered agent, which delegates (the trip planner) and streams its answer', async () => {
    const { s } = await start();
    const run = await s.newRun({ seed: 42 });
    const frames = await streamFrames(
      s,
      await s.submit(run.run_id, {
        type: 'agent',
        input: { agent: 'planner', message: 'Plan a trip to Rome next Friday' },
      }),
    );
    expect(frames.filter((f) => f.event === 'narration').length).toBeGreaterThan(0);
    const text = frames
      .filter((f) => f.event === 'token')
      .map((f) => String(f.data['t']))
      .join('');
    expect(text).toMatch(/^Here is your plan for Rome\./);
    expect(last(frames)).toMatchObject({ event: 'end', data: { output: text } });
    expectApiError(
      await s.api('POST', `/v1/runs/${run.run_id}/steps`, {
        type: 'agent',
        input: { agent: 'nobody', message: 'x' },
      }),
      404,
      'NOT_FOUND',
    );
  });

  it('budgets: a step whose reservation does not fit ends with error BUDGET_EXCEEDED before any token, details naming the limit', async () => {
    const { s } = await start();
    const run = await s.newRun();
    const frames = await streamFrames(
      s,
      await s.submit(run.run_id, {
        type: 'llm_call',
        input: llm('x', 50),
        budgets: { max_tokens_out: 5 },
      }),
    );
    expect(frames.some((f) => f.event === 'token')).toBe(false);
    expect(last(frames)).toMatchObject({
      event: 'error',
      data: { code: 'BUDGET_EXCEEDED', details: { limit: 'max_tokens_out' } },
    });
  });

  it('POST /v1/steps/{id}/cancel is 202 cancelling; the step ends with error CANCELLED, no token after it', async () => {
    const { s } = await start();
    const run = await s.newRun();
    const id = await s.submit(run.run_id, { type: 'llm_call', input: llm('long', 1_000_000) });
    const stream = await openStream(`${s.url}/v1/steps/${id}/stream`);
    await stream.readUntil((t) => t.includes('event: token'));
    const cancel = await s.api('POST', `/v1/steps/${id}/cancel`);
    expect(cancel.status).toBe(202);
    expect(cancel.body).toEqual({ status: 'cancelling' });
    const text = await stream.readToEnd();
    const frames = parseSse(text).frames;
    expect(last(frames)).toMatchObject({ event: 'error', data: { code: 'CANCELLED' } });
    expect(frames.filter((f) => f.event === 'error')).toHaveLength(1);
    // The log agrees: it ends with the error.
    expect(parseSse(await s.streamText(id)).frames.at(-1)?.event).toBe('error');
    expectApiError(await s.api('POST', `/v1/steps/${id}/cancel`), 409, 'CONFLICT');
    expectApiError(await s.api('POST', '/v1/steps/step_nope/cancel'), 404, 'NOT_FOUND');
  });
});
