/**
 * @module bench:workflow — a thread of a two-role workflow of no-op roles for 10 rounds (the
 * moderator alternates `a` and `b`; the thread ends at `maxRounds` 10), each thread a durable
 * run with its lifecycle facts and ten turn steps in the in-memory store, against the same
 * loop in LangGraph.js (two nodes, a conditional edge back until 10 rounds, its in-memory
 * state), threads per second, `AXON_BENCH_IN_FLIGHT` threads at once on both sides (default
 * 16), interleaved rounds in one process. Target: `ratios.vs_langgraph` ≥ 10.
 *
 * The durable pair beside it: the same threads on the SQLite store (a temp file, the default
 * durability `process`; and `power` beside it) against the same graph with LangGraph.js's
 * SQLite checkpointer (`@langchain/langgraph-checkpoint-sqlite`, a temp file, WAL, its own
 * default `synchronous`), a thread id per invoke. Target: `ratios.vs_langgraph_sqlite` ≥ 3;
 * `ratios.vs_langgraph_sqlite_power` beside it. Both sides get the same files: a fresh one for
 * the warm-up and for each round (opened before the round, closed after it, outside the
 * timing), so neither works on a file the others' rounds have grown.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Annotation, END as LG_END, START, StateGraph } from '@langchain/langgraph';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import type { Role } from '../src/adapters/create-role.js';
import { createLogger } from '../src/observability/logger.js';
import { createRuntime, type Runtime } from '../src/runtime/runtime.js';
import { memoryStore } from '../src/store/memory/memory-store.js';
import type { RunStore } from '../src/store/run-store.js';
import { sqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { defineWorkflow } from '../src/workflows/workflow-definition.js';
import { WorkflowEngine } from '../src/workflows/workflow-engine.js';
import { interleave, report } from './harness.js';

const rounds = Number(process.env['AXON_BENCH_ROUNDS'] ?? '6');
const roundMs = Number(process.env['AXON_BENCH_ROUND_MS'] ?? '1500');
const inFlight = Number(process.env['AXON_BENCH_IN_FLIGHT'] ?? '16');
const ROUNDS = 10;

/** A role that answers at once. */
const noop: Role<string> = {
  prompt: '',
  schema: undefined as never,
  extractConfig: {},
  run: () => Promise.resolve({ raw: 'ok', meta: 'ok' }),
};
const workflow = defineWorkflow({
  name: 'pingpong',
  roles: { a: { role: noop }, b: { role: noop } },
  moderator: (t) => (t.turns.at(-1)?.role === 'a' ? 'b' : 'a'),
  maxRounds: ROUNDS,
  concurrency: { max: inFlight },
});

const State = Annotation.Root({
  rounds: Annotation<number>({ reducer: (_prev, next) => next, default: () => 0 }),
  last: Annotation<string>({ reducer: (_prev, next) => next, default: () => '' }),
});
const builder = new StateGraph(State)
  .addNode('a', (s) => ({ rounds: s.rounds + 1, last: 'a' }))
  .addNode('b', (s) => ({ rounds: s.rounds + 1, last: 'b' }))
  .addEdge(START, 'a')
  .addConditionalEdges('a', (s) => (s.rounds >= ROUNDS ? LG_END : 'b'))
  .addConditionalEdges('b', (s) => (s.rounds >= ROUNDS ? LG_END : 'a'));
const graph = builder.compile();
const dir = mkdtempSync(join(tmpdir(), 'axon-bench-workflow-'));
let files = 0;

/** Fails unless a thread takes ten turns and ends `max_rounds`, and the graph ten rounds. */
async function check(): Promise<void> {
  const rt = createRuntime({ store: memoryStore(), logger: createLogger({ level: 'silent' }) });
  const e = new WorkflowEngine(rt, [workflow]);
  const t = await e.wait((await e.trigger('pingpong', 'go')).thread_id);
  await e.close();
  await rt.close();
  if (t.end_reason !== 'max_rounds' || t.turns.length !== ROUNDS) {
    throw new Error(
      `bench:workflow: the thread did not take ${ROUNDS} turns: ${JSON.stringify(t)}`,
    );
  }
  const out = await graph.invoke({}, { recursionLimit: ROUNDS + 5 });
  if (out.rounds !== ROUNDS) throw new Error('bench:workflow: the graph did not take 10 rounds');
}

/** Threads of the workflow on a fresh runtime over `store()`, `inFlight` at once. */
function axonCase(name: string, store: () => RunStore) {
  let runtime: Runtime | null = null;
  let engine: WorkflowEngine | null = null;
  return {
    name,
    setup: () => {
      runtime = createRuntime({ store: store(), logger: createLogger({ level: 'silent' }) });
      engine = new WorkflowEngine(runtime, [workflow]);
    },
    teardown: async () => {
      await engine?.close();
      await runtime?.close();
      engine = null;
      runtime = null;
    },
    run: async () => {
      const e = engine;
      if (!e) return;
      const ends = await Promise.all(
        Array.from({ length: inFlight }, async () =>
          e.wait((await e.trigger('pingpong', 'go')).thread_id),
        ),
      );
      if (ends.some((t) => t.status !== 'completed')) {
        throw new Error(`bench:workflow: a thread of ${name} did not complete`);
      }
    },
  };
}

/** The graph with LangGraph.js's SQLite checkpointer on a fresh file, as `axonCase`'s store. */
function langgraphSqliteCase() {
  let checkpointer: SqliteSaver | null = null;
  let durableGraph: ReturnType<typeof builder.compile> | null = null;
  return {
    name: 'langgraph_sqlite',
    setup: () => {
      checkpointer = SqliteSaver.fromConnString(join(dir, `langgraph-${++files}.db`));
      durableGraph = builder.compile({ checkpointer });
    },
    teardown: () => {
      checkpointer?.db.close();
      checkpointer = null;
      durableGraph = null;
    },
    run: async () => {
      const g = durableGraph;
      if (!g) return;
      const outs = await Promise.all(
        Array.from({ length: inFlight }, () =>
          g.invoke({}, { recursionLimit: ROUNDS + 5, configurable: { thread_id: randomUUID() } }),
        ),
      );
      if (outs.some((o) => o.rounds !== ROUNDS)) throw new Error('langgraph_sqlite run failed');
    },
  };
}

await check();
const stats = await interleave(
  [
    axonCase('axon', () => memoryStore()),
    {
      name: 'langgraph',
      run: async () => {
        const outs = await Promise.all(
          Array.from({ length: inFlight }, () => graph.invoke({}, { recursionLimit: ROUNDS + 5 })),
        );
        if (outs.some((o) => o.rounds !== ROUNDS)) throw new Error('langgraph run failed');
      },
    },
    axonCase('axon_sqlite', () => sqliteStore(join(dir, `axon-${++files}.db`))),
    axonCase('axon_sqlite_power', () =>
      sqliteStore(join(dir, `axon-${++files}.db`), { durability: 'power' }),
    ),
    langgraphSqliteCase(),
  ],
  { rounds, roundMs },
);
rmSync(dir, { recursive: true, force: true });
const perS = (name: string): number => (stats.find((s) => s.name === name)?.median ?? 0) * inFlight;
const axon = perS('axon');
const lg = perS('langgraph');
const axonSqlite = perS('axon_sqlite');
const axonSqlitePower = perS('axon_sqlite_power');
const lgSqlite = perS('langgraph_sqlite');
report({
  bench: 'workflow',
  metrics: {
    threads_in_flight: inFlight,
    rounds_per_thread: ROUNDS,
    axon_threads_per_s: Math.round(axon),
    langgraph_threads_per_s: Math.round(lg),
    axon_sqlite_threads_per_s: Math.round(axonSqlite),
    axon_sqlite_power_threads_per_s: Math.round(axonSqlitePower),
    langgraph_sqlite_threads_per_s: Math.round(lgSqlite),
  },
  ratios: {
    vs_langgraph: Number((axon / lg).toFixed(2)),
    vs_langgraph_sqlite: Number((axonSqlite / lgSqlite).toFixed(2)),
    vs_langgraph_sqlite_power: Number((axonSqlitePower / lgSqlite).toFixed(2)),
  },
});
