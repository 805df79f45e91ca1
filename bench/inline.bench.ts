/**
 * @module bench:inline — a two-step run (agent A delegates to agent B, no-op handlers,
 * in-memory store) against the same two-node graph in LangGraph.js, interleaved in one
 * process. Target: `ratios.vs_langgraph` ≥ 30.
 */
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { defineAgent } from '../src/actors/define-agent.js';
import { createRuntime, type Runtime } from '../src/runtime/runtime.js';
import { createLogger } from '../src/observability/logger.js';
import { memoryStore } from '../src/store/memory/memory-store.js';
import { interleave, report } from './harness.js';

const b = defineAgent({ name: 'b', handler: () => 'b' });
const a = defineAgent({
  name: 'a',
  handler: async (input, ctx, runtime) => (await runtime.delegate('b', input, ctx)).output,
});
let runtime: Runtime = createRuntime();

const State = Annotation.Root({
  x: Annotation<number>({ reducer: (_prev, next) => next, default: () => 0 }),
});
const graph = new StateGraph(State)
  .addNode('a', (s) => ({ x: s.x + 1 }))
  .addNode('b', (s) => ({ x: s.x + 1 }))
  .addEdge(START, 'a')
  .addEdge('a', 'b')
  .addEdge('b', END)
  .compile();

const rounds = Number(process.env['AXON_BENCH_ROUNDS'] ?? '6');
const roundMs = Number(process.env['AXON_BENCH_ROUND_MS'] ?? '1500');
const stats = await interleave(
  [
    {
      name: 'axon',
      // A fresh runtime and store per round, so the in-memory log does not grow across
      // rounds, and none kept while LangGraph runs.
      setup: () => {
        runtime = createRuntime({
          agents: [a, b],
          store: memoryStore(),
          logger: createLogger({ level: 'silent' }),
        });
      },
      teardown: async () => {
        await runtime.close();
        runtime = createRuntime();
      },
      run: async () => {
        const r = await runtime.invoke('a', 'x');
        if (r.status !== 'success')
          throw new Error(`axon run failed: ${r.error?.message ?? r.status}`);
      },
    },
    {
      name: 'langgraph',
      run: async () => {
        const out = await graph.invoke({ x: 0 });
        if (out.x !== 2) throw new Error('langgraph run failed');
      },
    },
  ],
  { rounds, roundMs },
);
const axon = stats.find((s) => s.name === 'axon')?.median ?? 0;
const lg = stats.find((s) => s.name === 'langgraph')?.median ?? 0;
report({
  bench: 'inline',
  metrics: {
    axon_runs_per_s: Math.round(axon),
    langgraph_runs_per_s: Math.round(lg),
    axon_us_per_run: Number((1e6 / axon).toFixed(1)),
    langgraph_us_per_run: Number((1e6 / lg).toFixed(1)),
  },
  ratios: { vs_langgraph: Number((axon / lg).toFixed(2)) },
});
