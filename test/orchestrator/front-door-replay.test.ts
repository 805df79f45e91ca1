/**
 * The front door inside a run (`handle(message, { run })`): the LLM router's model call, and
 * the invoked agent's, are the run's calls, recorded in `record` and served in `replay` and
 * `strict_replay` (NERVE-4021, NERVE-4022), so a request replays with the same route and
 * answer while the model would now answer otherwise.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { ChatRequest } from '../../src/engines/chat-request.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { createLlmRouter } from '../../src/orchestrator/llm-router.js';
import { defineMiddleware } from '../../src/orchestrator/middleware.js';
import { createOrchestrator, type Orchestrator } from '../../src/orchestrator/orchestrator.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { JoinRunOptions } from '../../src/steps/run-join.js';
import { quietRuntime } from '../support/runtime.js';

const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
});

interface Setup {
  readonly rt: Runtime;
  readonly door: Orchestrator;
  /** Model requests made (router's and planner's). */
  readonly asked: ChatRequest[];
  /** Where the model routes to now. */
  route: string;
  /** What the planner's model call answers now. */
  plan: string;
}

function setup(): Setup {
  const asked: ChatRequest[] = [];
  const state = { route: 'planner', plan: 'fly on Monday' } as Setup;
  const engine = createScriptedEngine({
    tokenDelayMs: 0,
    script: (request) => {
      asked.push(request);
      const system = request.messages.find((m) => m.role === 'system')?.content ?? '';
      if (system.includes('- planner:')) {
        return JSON.stringify({ handler: state.route, confidence: 0.9, reason: 'scripted' });
      }
      return state.plan;
    },
  });
  const planner = defineAgent({
    name: 'planner',
    description: 'plans trips',
    handler: async (input, ctx, runtime) =>
      (await runtime.chat({ messages: [{ role: 'user', content: input.message }] }, ctx)).text,
  });
  const weather = defineAgent({
    name: 'weather',
    description: 'tells the weather',
    handler: () => 'sunny',
  });
  const rt = quietRuntime({ engines: [engine], agents: [planner, weather] });
  runtimes.push(rt);
  const handlers = [
    { name: 'planner', description: 'plans trips' },
    { name: 'weather', description: 'tells the weather' },
  ];
  const door = createOrchestrator({
    runtime: rt,
    router: createLlmRouter({
      handlers: { handlers: () => Promise.resolve(handlers) },
      chat: (call, ctx, options) => rt.chat(call, ctx, options),
    }),
  });
  return Object.assign(state, { rt, door, asked });
}

async function newRun(rt: Runtime, body: Record<string, unknown> = {}): Promise<string> {
  const { flow } = await rt.createFlow({ name: 'front-door', ast: { id: randomUUID() } });
  return (await rt.createRun(flow.flow_id, body)).run_id;
}

const who = { userId: 'ann', sessionId: 's1' };

describe('the front door inside a run (record and replay)', () => {
  it('records the router’s and the agent’s model calls under the client token; the invocation is the run’s', async () => {
    const s = setup();
    const runId = await newRun(s.rt);
    const out = await s.door.handle('Plan a trip to Rome', {
      context: who,
      run: { runId, clientToken: 'req-1' },
    });
    expect(out.error).toBeNull();
    expect(out.route?.bestHandler).toBe('planner');
    expect(out.response.text).toBe('fly on Monday');
    expect(out.result?.runId).toBe(runId);
    expect(s.asked).toHaveLength(2);
    const recordings = await s.rt.listRecordings(runId);
    expect(recordings.map((r) => [r.client_token, r.kind, r.actor_path.join('/'), r.seq])).toEqual([
      ['req-1', 'engine', '', 1],
      ['req-1', 'engine', '', 2],
    ]);
    // The run stays open for more requests.
    expect((await s.rt.getRun(runId))?.status).toBe('running');
    expect((await s.rt.listSteps(runId)).map((st) => st.step_id)).toContain(out.result?.stepId);
  });

  it('replays the same route and answer from the recording while the model would now answer otherwise (NERVE-4021)', async () => {
    const s = setup();
    const recorded = await newRun(s.rt, { seed: 3 });
    const first = await s.door.handle('Plan a trip to Rome', {
      context: who,
      run: { runId: recorded, clientToken: 'req-1' },
    });
    s.route = 'weather';
    s.plan = 'take the train';
    const calls = s.asked.length;
    for (const mode of ['replay', 'strict_replay'] as const) {
      const replay = await newRun(s.rt, { mode, replay_of: recorded });
      const again = await s.door.handle('Plan a trip to Rome', {
        context: who,
        run: { runId: replay, clientToken: 'req-1' },
      });
      expect(again.error).toBeNull();
      expect(again.route?.bestHandler).toBe('planner');
      expect(again.route?.confidence).toBe(first.route?.confidence);
      expect(again.response.text).toBe(first.response.text);
    }
    // No model was asked during the replays.
    expect(s.asked).toHaveLength(calls);
    // Outside a run the model is asked, and now routes elsewhere.
    const live = await s.door.handle('Plan a trip to Rome', { context: who });
    expect(live.route?.bestHandler).toBe('weather');
  });

  it('strict_replay of another message fails the request with a replay mismatch (NERVE-4022)', async () => {
    const s = setup();
    const recorded = await newRun(s.rt);
    await s.door.handle('Plan a trip to Rome', {
      context: who,
      run: { runId: recorded, clientToken: 'req-1' },
    });
    const strict = await newRun(s.rt, { mode: 'strict_replay', replay_of: recorded });
    const out = await s.door.handle('Plan a trip to Oslo', {
      context: who,
      run: { runId: strict, clientToken: 'req-1' },
    });
    expect(out.error).toMatchObject({ code: 'REPLAY_MISMATCH' });
    expect(out.result).toBeNull();
    expect(out.response.text).toMatch(/error/i);
  });

  it('an unknown run, another user’s, or one that ended fails the request at stage run, asking no model', async () => {
    const s = setup();
    const failedAt: string[] = [];
    s.door.use(
      defineMiddleware({
        name: 'watch',
        stage: 'on_error',
        run: ({ stage }) => {
          failedAt.push(stage);
        },
      }),
    );
    const unknown = await s.door.handle('Plan a trip', {
      context: who,
      run: { runId: 'run_nope', clientToken: 't' },
    });
    expect(unknown.error).toMatchObject({ code: 'NOT_FOUND' });
    expect(unknown.stages).toEqual([]);
    expect(unknown.response.metadata).toMatchObject({ status: 'error' });

    const { flow } = await s.rt.createFlow({ name: 'owned', ast: { id: randomUUID() } });
    const bobs = await s.rt.createRun(flow.flow_id, {}, { userId: 'bob' });
    const notYours = await s.door.handle('Plan a trip', {
      context: who,
      run: { runId: bobs.run_id, clientToken: 't' },
    });
    expect(notYours.error).toMatchObject({ code: 'NOT_FOUND' });

    const ended = await newRun(s.rt);
    await s.rt.completeRun(ended);
    const late = await s.door.handle('Plan a trip', {
      context: who,
      run: { runId: ended, clientToken: 't' },
    });
    expect(late.error).toMatchObject({ code: 'CONFLICT' });
    expect(failedAt).toEqual(['run', 'run', 'run']);
    expect(s.asked).toHaveLength(0);
  });

  it('refuses a run with ctx, without a client token, or with context keys the run decides', async () => {
    const s = setup();
    const runId = await newRun(s.rt);
    await expect(
      s.door.handle('x', { ctx: s.rt.createContext(), run: { runId, clientToken: 't' } }),
    ).rejects.toThrow(/give context, not ctx/);
    await expect(
      s.door.handle('x', {
        context: { ...who, budgets: { maxCostUsd: 1 } },
        run: { runId, clientToken: 't' },
      }),
    ).rejects.toThrow(/may not set budgets/);
    const empty = await s.door.handle('x', { context: who, run: { runId, clientToken: '' } });
    expect(empty.error).toMatchObject({ code: 'INVALID_PARAMS' });
    // runtime.joinRun itself refuses what the run decides, rather than dropping it.
    await expect(
      s.rt.joinRun(runId, 't', { budgets: { maxCostUsd: 1 } } as JoinRunOptions),
    ).rejects.toThrow(/not budgets/);
    await expect(
      s.rt.joinRun(runId, 't', { budgets: { maxCostUsd: 1 } } as JoinRunOptions),
    ).rejects.toMatchObject({ code: 'INVALID_PARAMS' });
  });

  it('streams inside a run as well: the replayed answer arrives as chunks', async () => {
    const s = setup();
    const recorded = await newRun(s.rt);
    await s.door.handle('Plan a trip', {
      context: who,
      run: { runId: recorded, clientToken: 'a' },
    });
    s.plan = 'something else';
    const replay = await newRun(s.rt, { mode: 'replay', replay_of: recorded });
    let text = '';
    let final = '';
    for await (const chunk of s.door.stream('Plan a trip', {
      context: who,
      run: { runId: replay, clientToken: 'a' },
    })) {
      if (chunk.done) final = chunk.response?.text ?? '';
      else text += chunk.text;
    }
    expect(text).toBe('fly on Monday');
    expect(final).toBe('fly on Monday');
  });
});
