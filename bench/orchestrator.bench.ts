/**
 * @module bench:orchestrator — the front door (issue 20), two figures:
 * - `handle()` of a message that a rule routes to a no-op agent, with the runtime's default
 *   memory (hot recall before routing, the exchange stored after), against a bare
 *   `runtime.invoke` of the same agent; `AXON_BENCH_IN_FLIGHT` requests in flight (default
 *   16) on both sides, interleaved rounds (`AXON_BENCH_ROUNDS`, default 6, of
 *   `AXON_BENCH_ROUND_MS`, default 1500), a fresh runtime each round. Metrics
 *   `handle_per_s`, `invoke_per_s`; `ratios.handle_vs_invoke` = their quotient (target
 *   ≥ 0.5).
 * - `createEmbeddingRouter` (default hashed embedder) over 100 handlers with distinct
 *   descriptions: `classify` of varied messages, one at a time after a warm-up,
 *   `AXON_BENCH_ROUTE_SAMPLES` of them (default 5 000): `embedding_route_p50_ms` (target
 *   ≤ 1), `embedding_route_p99_ms`, and `embedding_route_top1`, the share of messages whose
 *   best handler is the one their words were drawn from (a check that the router routes).
 */
import { defineAgent } from '../src/actors/define-agent.js';
import { createLogger } from '../src/observability/logger.js';
import { createEmbeddingRouter } from '../src/orchestrator/embedding-router.js';
import { createOrchestrator, type Orchestrator } from '../src/orchestrator/orchestrator.js';
import type { HandlerDescription } from '../src/orchestrator/route-result.js';
import { createRuleRouter } from '../src/orchestrator/rule-router.js';
import { createRuntime, type Runtime } from '../src/runtime/runtime.js';
import { interleave, report } from './harness.js';

const rounds = Number(process.env['AXON_BENCH_ROUNDS'] ?? '6');
const roundMs = Number(process.env['AXON_BENCH_ROUND_MS'] ?? '1500');
/** Requests kept in flight, as a service has them; the same for both sides. */
const inFlight = Number(process.env['AXON_BENCH_IN_FLIGHT'] ?? '16');
const routeSamples = Number(process.env['AXON_BENCH_ROUTE_SAMPLES'] ?? '5000');

/** What the memory scope needs: the default `'session'` scope keys on user and session. */
const who = { userId: 'u', sessionId: 's' } as const;
const message = 'Plan a trip to Berlin';

const noop = defineAgent({
  name: 'noop',
  description: 'does nothing',
  handler: () => 'ok',
});

/** A runtime with the no-op agent and the default memory (on, hot tier in process). */
function freshRuntime(): Runtime {
  return createRuntime({ agents: [noop], logger: createLogger({ level: 'silent' }) });
}

function frontDoor(runtime: Runtime): Orchestrator {
  return createOrchestrator({
    runtime,
    router: createRuleRouter({ rules: [{ pattern: /\btrip\b/i, handler: 'noop' }] }),
  });
}

/**
 * Fails unless `handle` routes to the agent, succeeds, recalls and stores without a memory
 * error, and a second request recalls the first exchange: else the bench would time a door
 * that skips memory.
 */
async function checkFrontDoor(): Promise<void> {
  const runtime = freshRuntime();
  try {
    const door = frontDoor(runtime);
    const first = await door.handle(message, { context: who });
    const second = await door.handle(message, { context: who });
    for (const h of [first, second]) {
      if (h.memoryErrors.length > 0) {
        throw new Error('bench:orchestrator: memory failed in handle()', {
          cause: h.memoryErrors[0],
        });
      }
      if (h.route?.bestHandler !== 'noop' || h.result?.status !== 'success') {
        throw new Error(
          `bench:orchestrator: handle() did not run the no-op agent: ${JSON.stringify(h.response)}`,
        );
      }
      if (h.recalled === null) throw new Error('bench:orchestrator: handle() recalled nothing');
    }
    if ((second.recalled?.conversation.length ?? 0) < 2) {
      throw new Error('bench:orchestrator: the second request did not recall the first exchange');
    }
  } finally {
    await runtime.close();
  }
}

/** A bench case: `inFlight` requests at once through `send`, on a fresh runtime each round. */
function side(name: string, send: (runtime: Runtime, door: Orchestrator) => Promise<boolean>) {
  let runtime: Runtime | null = null;
  let door: Orchestrator | null = null;
  return {
    name,
    setup: () => {
      runtime = freshRuntime();
      door = frontDoor(runtime);
    },
    teardown: async () => {
      await runtime?.close();
      runtime = null;
      door = null;
    },
    run: async () => {
      const rt = runtime;
      const d = door;
      if (!rt || !d) return;
      const oks = await Promise.all(Array.from({ length: inFlight }, () => send(rt, d)));
      if (oks.includes(false)) throw new Error(`bench:orchestrator: a ${name} request failed`);
    },
  };
}

await checkFrontDoor();
const stats = await interleave(
  [
    side('handle', async (_, door) => {
      const h = await door.handle(message, { context: who });
      return h.result?.status === 'success' && h.memoryErrors.length === 0;
    }),
    side('invoke', async (runtime) => {
      const r = await runtime.invoke('noop', message, runtime.createContext(who));
      return r.status === 'success';
    }),
  ],
  { rounds, roundMs, warmupOps: 50 },
);
const median = (name: string): number => stats.find((s) => s.name === name)?.median ?? 0;

// ---------------------------------------------------------------------------------------
// The embedding router over 100 handlers.

const topics = [
  'flight',
  'hotel',
  'invoice',
  'weather',
  'recipe',
  'calendar',
  'password',
  'shipment',
  'insurance',
  'fitness',
];
const actions = [
  'book',
  'cancel',
  'refund',
  'compare',
  'track',
  'schedule',
  'summarize',
  'translate',
  'reset',
  'estimate',
];
const extras = ['prices', 'options', 'status', 'history', 'reminders'];

/** 100 handlers, one per action and topic, each description its own words. */
const handlers: HandlerDescription[] = actions.flatMap((action, a) =>
  topics.map((topic, t) => ({
    name: `${action}-${topic}`,
    description: `${action} a ${topic}: ${action}s ${topic} ${extras[(a + t) % extras.length] ?? ''} for the user`,
  })),
);

/** Message `i`: the words of handler `i % 100`, phrased one of a few ways. */
function routeMessage(i: number): { text: string; expected: string } {
  const h = handlers[i % handlers.length] as HandlerDescription;
  const [action = '', topic = ''] = h.name.split('-');
  const phrasings = [
    `please ${action} my ${topic}`,
    `can you ${action} the ${topic} I told you about yesterday?`,
    `I need to ${action} a ${topic} for next week, and quickly`,
    `${topic}: ${action} it`,
  ];
  return {
    text: phrasings[Math.floor(i / handlers.length) % phrasings.length] ?? '',
    expected: h.name,
  };
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
}

const routeRuntime = freshRuntime();
const ctx = routeRuntime.createContext();
const router = createEmbeddingRouter({ handlers: { handlers: () => Promise.resolve(handlers) } });
// Warm-up: the first call embeds the 100 descriptions; the rest let the JIT settle.
for (let i = 0; i < 500; i++) await router.classify(routeMessage(i).text, ctx);
const times: number[] = [];
let top1 = 0;
for (let i = 0; i < routeSamples; i++) {
  const { text, expected } = routeMessage(i);
  const t = performance.now();
  const r = await router.classify(text, ctx);
  times.push(performance.now() - t);
  if (r.bestHandler === expected) top1++;
}
await routeRuntime.close();
times.sort((x, y) => x - y);

const handlePerS = median('handle') * inFlight;
const invokePerS = median('invoke') * inFlight;
report({
  bench: 'orchestrator',
  metrics: {
    requests_in_flight: inFlight,
    handle_per_s: Math.round(handlePerS),
    invoke_per_s: Math.round(invokePerS),
    embedding_handlers: handlers.length,
    embedding_route_p50_ms: Number(percentile(times, 0.5).toFixed(3)),
    embedding_route_p99_ms: Number(percentile(times, 0.99).toFixed(3)),
    embedding_route_top1: Number((top1 / routeSamples).toFixed(3)),
  },
  ratios: {
    handle_vs_invoke: Number((handlePerS / invokePerS).toFixed(2)),
  },
});
