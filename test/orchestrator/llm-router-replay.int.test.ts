/**
 * A run routed by the LLM router (and by the hybrid router, which asks the same model) is
 * recorded and replayed like any other engine call (NERVE-4021, NERVE-4022): the router's
 * calls to a real OpenAI-compatible server are the run's recorded calls, and a
 * `strict_replay` of the run — by another runtime over the same store, as after a restart —
 * routes the same, answers the same, streams the same bytes and stores the same step logs,
 * while the server hears no request at all.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { ChatRequest } from '../../src/engines/chat-request.js';
import {
  startOpenAICompatibleServer,
  type OpenAICompatibleServer,
} from '../../src/engines/openai-compatible-server.js';
import { createOpenAIEngine } from '../../src/engines/openai-engine.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { createEmbeddingRouter } from '../../src/orchestrator/embedding-router.js';
import {
  HYBRID_PREFILTER_TOP_K,
  createHybridRouter,
} from '../../src/orchestrator/hybrid-router.js';
import { createLlmRouter } from '../../src/orchestrator/llm-router.js';
import { createOrchestrator, type Orchestrator } from '../../src/orchestrator/orchestrator.js';
import type { Router } from '../../src/orchestrator/route-result.js';
import { sseChunk } from '../../src/orchestrator/stream-chunks.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { StepEvent } from '../../src/streams/events.js';
import { postgresStore } from '../../src/store/postgres/postgres-store.js';
import type { RunStore } from '../../src/store/run-store.js';
import { sqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { dropSchemas, POSTGRES_URL } from '../support/postgres.js';
import { quietRuntime } from '../support/runtime.js';

const dir = mkdtempSync(join(tmpdir(), 'axon-llm-router-replay-'));
const schemas: string[] = [];
let server: OpenAICompatibleServer | null = null;
const runtimes: Runtime[] = [];
/** Set once a run is recorded: the model then routes every message to the other handler. */
let changedMind = false;

afterEach(async () => {
  changedMind = false;
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
});
afterAll(async () => {
  await server?.close();
  await dropSchemas(schemas);
  rmSync(dir, { recursive: true, force: true });
});

/** The router's model, served over HTTP: JSON routes; prose first for a message about Oslo. */
function routerScript(request: ChatRequest): string | null {
  const system = request.messages.find((m) => m.role === 'system')?.content ?? '';
  if (!system.includes('- planner:')) return null;
  const last = request.messages.at(-1)?.content ?? '';
  // The router sends an invalid answer back once: this one is answered with JSON.
  if (last.includes('was not valid')) {
    return 'Sorry. {"handler": "planner", "confidence": 0.7, "reason": "a trip, on second thought"}';
  }
  if (last.includes('Oslo')) return 'The planner, I would say.';
  const handler = /weather|rain/i.test(last) !== changedMind ? 'weather' : 'planner';
  return JSON.stringify({ handler, confidence: 0.9, reason: 'scripted' });
}

async function theServer(): Promise<OpenAICompatibleServer> {
  server ??= await startOpenAICompatibleServer({
    engine: createScriptedEngine({ tokenDelayMs: 0, script: routerScript }),
  });
  return server;
}

const HANDLERS = [
  { name: 'planner', description: 'Plans trips: flights, trains and dates for a journey' },
  { name: 'weather', description: 'Tells the weather forecast: rain, sun and temperature' },
];

/** A runtime on `store` whose router asks the server's model and whose planner writes with it. */
async function frontDoor(store: RunStore, kind: 'llm' | 'hybrid'): Promise<Orchestrator> {
  const { baseURL } = await theServer();
  const planner = defineAgent({
    name: 'planner',
    description: HANDLERS[0]?.description ?? '',
    handler: async (input, ctx, runtime) => {
      const reply = await runtime.chat(
        {
          engine: 'openai',
          messages: [{ role: 'user', content: input.message }],
          params: { max_tokens: 12 },
        },
        ctx,
      );
      return reply.text;
    },
  });
  const weather = defineAgent({
    name: 'weather',
    description: HANDLERS[1]?.description ?? '',
    handler: () => 'sunny',
  });
  // A submitted step that routes for itself: the router's calls are the step's.
  const desk = defineAgent({
    name: 'desk',
    handler: async (input, ctx, runtime) => {
      const router = createLlmRouter({
        handlers: { handlers: () => Promise.resolve(HANDLERS) },
        chat: (call, at, options) => runtime.chat(call, at, options),
        engine: 'openai',
      });
      const route = await router.classify(input.message, ctx);
      const answer = await runtime.delegate(route.bestHandler ?? 'weather', input.message, ctx);
      return { handler: route.bestHandler, answer: answer.output };
    },
  });
  const rt = quietRuntime({
    store,
    agents: [planner, weather, desk],
    engines: [createOpenAIEngine({ baseURL, model: 'router-model', maxRetries: 0 })],
  });
  runtimes.push(rt);
  const handlers = { handlers: () => Promise.resolve(HANDLERS) };
  const llm = { handlers, chat: rt.chat.bind(rt), engine: 'openai' };
  const router: Router =
    kind === 'llm'
      ? createLlmRouter(llm)
      : createHybridRouter({
          embedding: createEmbeddingRouter({
            handlers,
            topK: HYBRID_PREFILTER_TOP_K,
            threshold: 0,
          }),
          llm,
        });
  return createOrchestrator({ runtime: rt, router, memory: false });
}

/** A step's log without what differs by nature between two runs: ids, times, wall time. */
function comparable(events: readonly StepEvent[]): string {
  return JSON.stringify(
    events.map((e) => {
      const { step_id: _id, ts: _ts, ...rest } = e;
      if (rest.type !== 'end') return rest;
      const { wall_ms: _wall, ...usage } = rest.budget_usage;
      return { ...rest, budget_usage: usage };
    }),
  );
}

/** Every step log of `runId`, in the order the steps were made. */
async function logs(rt: Runtime, runId: string): Promise<string[]> {
  const steps = await rt.listSteps(runId);
  return Promise.all(steps.map(async (s) => comparable(await rt.store.readEvents(s.step_id))));
}

const who = { userId: 'ann', sessionId: 's1' };
const MESSAGES = ['Plan a trip to Rome next Friday', 'Plan a trip to Oslo', 'Will it rain?'];

interface Handled {
  readonly route: unknown;
  readonly text: string;
  /** The SSE frames of the streamed answer, as a client receives them. */
  readonly sse: Buffer;
}

/** Each message of {@link MESSAGES} through `door` inside `runId`, streamed. */
async function handleAll(door: Orchestrator, runId: string): Promise<Handled[]> {
  const out: Handled[] = [];
  for (const [i, message] of MESSAGES.entries()) {
    const frames: Buffer[] = [];
    let route: unknown = null;
    let text = '';
    for await (const chunk of door.stream(message, {
      context: who,
      run: { runId, clientToken: `req-${i}` },
    })) {
      frames.push(Buffer.from(sseChunk(chunk), 'utf8'));
      if (chunk.done) text = chunk.response?.text ?? '';
    }
    const handled = await door.handle(message, {
      context: who,
      run: { runId, clientToken: `again-${i}` },
    });
    expect(handled.error, message).toBeNull();
    expect(handled.response.text, message).toBe(text);
    route = handled.route;
    out.push({ route, text, sse: Buffer.concat(frames) });
  }
  return out;
}

describe.each([
  [
    'sqlite',
    (): (() => RunStore) => {
      const file = join(dir, `${randomUUID()}.db`);
      return () => sqliteStore(file);
    },
  ],
  [
    'postgres',
    (): (() => RunStore) => {
      const schema = `axon_test_router_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
      schemas.push(schema);
      return () => postgresStore({ connection: POSTGRES_URL, schema });
    },
  ],
])('on the %s store', (_name, storeOn) => {
  it.each(['llm', 'hybrid'] as const)(
    'a run routed by the %s router: strict_replay after a restart is byte-equal and asks no model (NERVE-4021)',
    async (kind) => {
      const open = storeOn();
      const recorder = await frontDoor(open(), kind);
      const rt = runtimes[0] as Runtime;
      const { flow } = await rt.createFlow({ name: 'routed', ast: { id: randomUUID() } });
      const recorded = await rt.createRun(flow.flow_id, { seed: 11 });
      const first = await handleAll(recorder, recorded.run_id);
      expect(first.map((h) => (h.route as { bestHandler: string }).bestHandler)).toEqual([
        'planner',
        'planner',
        'weather',
      ]);
      // Every model call was recorded: per message, the router's (two for Oslo, whose first
      // answer was sent back) and the planner's; the weather agent asks no model.
      const recordings = await rt.listRecordings(recorded.run_id);
      const perToken = (token: string): number =>
        recordings.filter((r) => r.client_token === token && r.kind === 'engine').length;
      expect([0, 1, 2].map((i) => perToken(`req-${i}`))).toEqual([2, 3, 1]);
      expect([0, 1, 2].map((i) => perToken(`again-${i}`))).toEqual([2, 3, 1]);
      await rt.completeRun(recorded.run_id);
      const recordedLogs = await logs(rt, recorded.run_id);
      // Each message was handled twice (streamed, then not): six agent steps.
      expect(recordedLogs).toHaveLength(6);
      await rt.close();

      // Another runtime on the same store, as after a restart; the model now routes
      // elsewhere, so an answer from it would show.
      changedMind = true;
      const requests = (await theServer()).requests.length;
      const replayer = await frontDoor(open(), kind);
      const rt2 = runtimes[1] as Runtime;
      const strict = await rt2.createRun(flow.flow_id, {
        mode: 'strict_replay',
        seed: 11,
        replay_of: recorded.run_id,
      });
      const again = await handleAll(replayer, strict.run_id);
      expect((await theServer()).requests.length).toBe(requests);
      for (const [i, h] of again.entries()) {
        const was = first[i] as Handled;
        expect(h.route, MESSAGES[i]).toEqual(was.route);
        expect(h.text, MESSAGES[i]).toBe(was.text);
        expect(h.sse.length, MESSAGES[i]).toBeGreaterThan(0);
        expect(h.sse.equals(was.sse), `${MESSAGES[i]}: the streamed bytes`).toBe(true);
      }
      expect(await logs(rt2, strict.run_id)).toEqual(recordedLogs);
      // A replay records nothing of its own.
      expect(await rt2.listRecordings(strict.run_id)).toEqual([]);
    },
  );

  it('a submitted step that routes with the LLM router: strict_replay after a restart streams the same bytes', async () => {
    const open = storeOn();
    await frontDoor(open(), 'llm');
    const rt = runtimes[0] as Runtime;
    const { flow } = await rt.createFlow({ name: 'desk', ast: { id: randomUUID() } });
    const recorded = await rt.createRun(flow.flow_id, { seed: 5 });
    const body = (i: number): unknown => ({
      type: 'agent',
      client_token: `desk-${i}`,
      input: { agent: 'desk', message: MESSAGES[i] },
    });
    const submit = async (r: Runtime, runId: string, i: number) => {
      const submitted = await r.submitStep(runId, body(i));
      await submitted.done;
      return r.store.getStep(submitted.step_id);
    };
    const first = [];
    for (const i of [0, 1, 2]) first.push(await submit(rt, recorded.run_id, i));
    expect(first.map((s) => (s?.output as { handler: string }).handler)).toEqual([
      'planner',
      'planner',
      'weather',
    ]);
    const recordedLogs = await logs(rt, recorded.run_id);
    await rt.close();

    changedMind = true;
    const requests = (await theServer()).requests.length;
    await frontDoor(open(), 'llm');
    const rt2 = runtimes[1] as Runtime;
    const strict = await rt2.createRun(flow.flow_id, {
      mode: 'strict_replay',
      seed: 5,
      replay_of: recorded.run_id,
    });
    for (const i of [0, 1, 2]) {
      const step = await submit(rt2, strict.run_id, i);
      expect(step?.status).toBe('succeeded');
      expect(step?.output).toEqual(first[i]?.output);
    }
    expect((await theServer()).requests.length).toBe(requests);
    expect(await logs(rt2, strict.run_id)).toEqual(recordedLogs);
  });
});
