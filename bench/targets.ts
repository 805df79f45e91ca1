/**
 * @module The benchmark targets, in one place: for each bench, the metrics and ratios that
 * have a target, the comparison and the threshold, in DESIGN.md's words ("Performance
 * targets") or docs/benchmarks.md's where DESIGN.md has none. `bench/summary.ts` judges the
 * figures in `bench/results/*.json` against them.
 */

/** How a figure is held to its threshold. */
export type Comparison = '>=' | '<=' | '<';

/** One figure with a target. */
export interface Target {
  /** The bench that reports it: `bench/results/<bench>.json`, `npm run bench:<bench>`. */
  readonly bench: string;
  /** Where in the result it is. */
  readonly kind: 'metrics' | 'ratios';
  /** Its key in `metrics` or `ratios`, exactly as the bench reports it. */
  readonly name: string;
  readonly comparison: Comparison;
  readonly threshold: number;
  /** What is measured and the target, in the words of the document the target comes from. */
  readonly what: string;
  readonly source:
    | 'DESIGN.md'
    | 'docs/benchmarks.md'
    | 'issue 19'
    | 'issue 20'
    | 'issue 21'
    | 'issue 30'
    | 'issue 31'
    | 'issue 32'
    | 'issue 33'
    | 'issue 45'
    | 'issue 46'
    | 'issue 47';
}

/** What a figure is against its target; `not measured` when the result has no such figure. */
export type Verdict = 'met' | 'missed' | 'not measured';

/**
 * Every target. Not here: figures DESIGN.md gives no threshold for (`bench:stream`'s
 * `slow_consumer_heap_mb`: "memory stays bounded; no token or fact dropped", which the bench
 * enforces by failing when a token is missing).
 */
export const TARGETS: readonly Target[] = [
  {
    bench: 'inline',
    kind: 'ratios',
    name: 'vs_langgraph',
    comparison: '>=',
    threshold: 40,
    what: 'a two-step run, inline, no-op behaviours, in-memory store: ≥ 40× the runs/s of the same two-node graph in LangGraph.js',
    source: 'DESIGN.md',
  },
  {
    bench: 'worker',
    kind: 'ratios',
    name: 'vs_piscina',
    comparison: '>=',
    threshold: 0.9,
    what: 'no-op steps, worker placement: ≥ 0.9× raw piscina tasks/s on the same machine',
    source: 'DESIGN.md',
  },
  {
    bench: 'stream',
    kind: 'metrics',
    name: 'tokens_per_s',
    comparison: '>=',
    threshold: 200_000,
    what: 'tokens through a worker-placed engine to an SSE client: ≥ 200k tokens/s on one connection',
    source: 'DESIGN.md',
  },
  {
    bench: 'actors',
    kind: 'metrics',
    name: 'heap_bytes_per_actor',
    comparison: '<=',
    threshold: 5_120,
    what: 'idle agent actors: ≤ 5 KB heap each',
    source: 'DESIGN.md',
  },
  {
    bench: 'actors',
    kind: 'metrics',
    name: 'actors_alive',
    comparison: '>=',
    threshold: 1_000_000,
    what: 'idle agent actors: 1M alive in one process',
    source: 'DESIGN.md',
  },
  {
    bench: 'engine',
    kind: 'ratios',
    name: 'vs_openai_sdk',
    comparison: '>=',
    threshold: 0.9,
    what: 'tokens/s through the OpenAI binding: ≥ 0.9× a bare `openai` SDK streaming loop on the same server',
    source: 'docs/benchmarks.md',
  },
  {
    bench: 'store',
    kind: 'ratios',
    name: 'sqlite_vs_memory',
    comparison: '>=',
    threshold: 0.7,
    what: 'two-step runs/s on the SQLite store: ≥ 0.7× the in-memory store',
    source: 'DESIGN.md',
  },
  {
    bench: 'store',
    kind: 'ratios',
    name: 'redis_vs_memory',
    comparison: '>=',
    threshold: 0.4,
    what: 'two-step runs/s on the Redis store (a fleet’s): ≥ 0.4× the in-memory store',
    source: 'DESIGN.md',
  },
  {
    bench: 'memory',
    kind: 'metrics',
    name: 'recall_p50_ms_100k',
    comparison: '<=',
    threshold: 5,
    what: 'memory recall: p50 ≤ 5 ms with 100k warm items and 100k cold vectors',
    source: 'DESIGN.md',
  },
  {
    bench: 'memory',
    kind: 'metrics',
    name: 'cold_recall_at_10',
    comparison: '>=',
    threshold: 0.95,
    what: "cold index, one user's scope + the global one: recall@10 ≥ 0.95 against a scan",
    source: 'docs/benchmarks.md',
  },
  {
    bench: 'memory',
    kind: 'metrics',
    name: 'cold_one_scope_recall_at_10',
    comparison: '>=',
    threshold: 0.95,
    what: 'cold index, every vector in one scope: recall@10 ≥ 0.95 against a scan',
    source: 'docs/benchmarks.md',
  },
  {
    bench: 'memory',
    kind: 'metrics',
    name: 'cold_one_scope_p50_ms',
    comparison: '<=',
    threshold: 5,
    what: 'cold index, every vector in one scope: search p50 ≤ 5 ms',
    source: 'docs/benchmarks.md',
  },
  {
    bench: 'sse',
    kind: 'metrics',
    name: 'loop_lag_p99_ms_1000_clients',
    comparison: '<',
    threshold: 50,
    what: 'concurrent SSE streams in one process: 1,000 with event-loop lag p99 < 50 ms',
    source: 'DESIGN.md',
  },
  {
    bench: 'sse',
    kind: 'metrics',
    name: 'tokens_per_s_one_connection',
    comparison: '>=',
    threshold: 200_000,
    what: 'tokens through a worker-placed engine to an SSE client: ≥ 200k tokens/s on one connection',
    source: 'DESIGN.md',
  },
  {
    bench: 'http',
    kind: 'ratios',
    name: 'vs_bare_fastify',
    comparison: '>=',
    threshold: 0.6,
    what: 'step submissions/s through `axon serve`: ≥ 0.6× a bare Fastify route doing the same claim',
    source: 'DESIGN.md',
  },
  {
    bench: 'fleet',
    kind: 'ratios',
    name: 'vs_bullmq',
    comparison: '>=',
    threshold: 0.7,
    what: 'no-op steps, pool placement over BullMQ: ≥ 0.7× raw BullMQ jobs/s (one worker process each, same concurrency)',
    source: 'DESIGN.md',
  },
  {
    bench: 'fleet',
    kind: 'metrics',
    name: 'submit_to_start_p50_ms',
    comparison: '<=',
    threshold: 2,
    what: 'submit-to-start of a step on an idle pool over BullMQ on loopback: p50 ≤ 2 ms',
    source: 'DESIGN.md',
  },
  {
    bench: 'fleet',
    kind: 'metrics',
    name: 'redis_calls_per_step',
    comparison: '<=',
    threshold: 4,
    what: 'Redis commands the clients send per no-op fleet step (API and worker together): ≤ 4',
    source: 'issue 30',
  },
  {
    bench: 'fleet',
    kind: 'metrics',
    name: 'redis_calls_per_step_cluster',
    comparison: '<=',
    threshold: 4,
    what: 'the same on a Redis Cluster of three masters (every master counted): ≤ 4',
    source: 'issue 30',
  },
  {
    bench: 'fleet',
    kind: 'metrics',
    name: 'redis_commands_per_step',
    comparison: '<=',
    threshold: 40,
    what: 'commands Redis runs per no-op fleet step, scripts’ included (counted with MONITOR): ≤ 40',
    source: 'issue 47',
  },
  {
    bench: 'orchestrator',
    kind: 'ratios',
    name: 'handle_vs_invoke',
    comparison: '>=',
    threshold: 0.6,
    what: '`handle()` of a rule-routed message to a no-op agent, hot memory recall and store: ≥ 0.6× the bare `runtime.invoke` of that agent',
    source: 'DESIGN.md',
  },
  {
    bench: 'orchestrator',
    kind: 'metrics',
    name: 'embedding_route_p50_ms',
    comparison: '<=',
    threshold: 1,
    what: 'the embedding router over 100 handlers: classify p50 ≤ 1 ms',
    source: 'issue 20',
  },
  {
    bench: 'workflow',
    kind: 'ratios',
    name: 'vs_langgraph',
    comparison: '>=',
    threshold: 10,
    what: 'threads of a two-role workflow of no-op roles for 10 rounds: ≥ 10× the same loop in LangGraph.js (threads/s)',
    source: 'DESIGN.md',
  },
  {
    bench: 'workflow',
    kind: 'ratios',
    name: 'vs_langgraph_sqlite',
    comparison: '>=',
    threshold: 3,
    what: 'threads of the same workflow on the SQLite store: ≥ 3× the same loop in LangGraph.js with its SQLite checkpointer',
    source: 'issue 30',
  },
  {
    bench: 'container',
    kind: 'ratios',
    name: 'warm_vs_pipe',
    comparison: '<=',
    threshold: 1.3,
    what: "a no-op step, container placement with a started container: at most 1.3× the time of the same step over a pipe to the container's runner in a plain child process (same messages, same handler)",
    source: 'issue 45',
  },
  {
    bench: 'container',
    kind: 'ratios',
    name: 'cold_vs_podman_run',
    comparison: '<=',
    threshold: 1.2,
    what: "a no-op step in a container started for it: at most 1.2× a bare `podman run --rm` of the same image running `node -e ''` (the engine's floor)",
    source: 'issue 45',
  },
  {
    bench: 'durable-agents',
    kind: 'metrics',
    name: 'actors_addressed',
    comparison: '>=',
    threshold: 1_000_000,
    what: 'durable actors addressed by key on one machine (SQLite store), each sent a message, with at most 100 000 awake at once and the heap bounded: ≥ 1 000 000',
    source: 'issue 46',
  },
  {
    bench: 'durable-agents',
    kind: 'metrics',
    name: 'asleep_bytes_per_actor',
    comparison: '<=',
    threshold: 200,
    what: 'heap per asleep (passivated) actor: ≤ 200 bytes',
    source: 'issue 46',
  },
  {
    bench: 'durable-agents',
    kind: 'metrics',
    name: 'wake_p50_ms',
    comparison: '<=',
    threshold: 1,
    what: 'a message to an asleep actor, until its handler starts, median: ≤ 1 ms',
    source: 'issue 46',
  },
  {
    bench: 'durable-agents',
    kind: 'metrics',
    name: 'wake_p99_ms',
    comparison: '<=',
    threshold: 5,
    what: 'a message to an asleep actor, until its handler starts, 99th percentile: ≤ 5 ms',
    source: 'issue 46',
  },
  {
    bench: 'durable-agents',
    kind: 'ratios',
    name: 'vs_langgraph_threads',
    comparison: '>=',
    threshold: 10,
    what: 'messages/s to random keys among the actors: ≥ 10× a LangGraph.js graph with its SQLite checkpointer doing the same work, one thread per key, measured in the same run',
    source: 'issue 46',
  },
  {
    bench: 'store',
    kind: 'ratios',
    name: 'postgres_vs_memory',
    comparison: '>=',
    threshold: 0.3,
    what: 'two-step runs/s on the PostgreSQL store, 16 runs in flight: ≥ 0.3× the in-memory store',
    source: 'issue 32',
  },
  {
    bench: 'store',
    kind: 'ratios',
    name: 'vs_langgraph_postgres',
    comparison: '>=',
    threshold: 3,
    what: 'two-step runs/s on the PostgreSQL store, 16 in flight: ≥ 3× the same two-node graph in LangGraph.js with its PostgreSQL checkpointer',
    source: 'issue 32',
  },
  {
    bench: 'cli',
    kind: 'metrics',
    name: 'help_ms',
    comparison: '<=',
    threshold: 300,
    what: '`axon --help`, a whole process from start to exit: median ≤ 300 ms',
    source: 'issue 33',
  },
  {
    bench: 'cli',
    kind: 'metrics',
    name: 'runs_list_ms',
    comparison: '<=',
    threshold: 300,
    what: '`axon runs list --url` against a running server, a whole process: median ≤ 300 ms',
    source: 'issue 33',
  },
  {
    bench: 'store',
    kind: 'ratios',
    name: 'postgres_vs_dbos',
    comparison: '>=',
    threshold: 5,
    what: 'two-step runs/s on the PostgreSQL store, 16 in flight: ≥ 5× a two-step durable workflow of DBOS Transact on the same PostgreSQL at the same concurrency, measured in the same run',
    source: 'issue 47',
  },
  {
    bench: 'store',
    kind: 'ratios',
    name: 'postgres_vs_raw',
    comparison: '>=',
    threshold: 0.5,
    what: "steps/s of two-step runs on the PostgreSQL store, 16 in flight: ≥ 0.5× the database's own ceiling, one INSERT of a step's row a transaction at the same concurrency and durability, on a pool of the store's size",
    source: 'issue 47',
  },
  {
    bench: 'store',
    kind: 'ratios',
    name: 'sqlite_vs_raw',
    comparison: '>=',
    threshold: 0.5,
    what: "steps/s of two-step runs on the SQLite store, 16 in flight: ≥ 0.5× one insert a step under axon's own group commit at the same concurrency",
    source: 'issue 47',
  },
];

/**
 * Judges one figure. A missing figure, or one that is not a finite number (JSON writes
 * `NaN` and `Infinity` as `null`), is `not measured`, never `met`.
 */
export function judge(target: Target, value: number | null | undefined): Verdict {
  if (typeof value !== 'number' || !Number.isFinite(value)) return 'not measured';
  switch (target.comparison) {
    case '>=':
      return value >= target.threshold ? 'met' : 'missed';
    case '<=':
      return value <= target.threshold ? 'met' : 'missed';
    case '<':
      return value < target.threshold ? 'met' : 'missed';
  }
}

/** `≥ 30`, `≤ 10 240`, `< 50`: the comparison and threshold as the docs write them. */
export function describeTarget(target: Target): string {
  const sign = { '>=': '≥', '<=': '≤', '<': '<' }[target.comparison];
  return `${sign} ${formatFigure(target.threshold)}`;
}

/**
 * A figure as the docs write them: integers grouped by thousands with spaces (`624 795`),
 * other numbers to 2 decimals (3 below 1, so a recall of `0.808` keeps its digit).
 */
export function formatFigure(value: number): string {
  const digits = Number.isInteger(value) ? 0 : Math.abs(value) < 1 ? 3 : 2;
  // Through Number again to drop trailing zeros (`0.290` → `0.29`).
  const [whole = '', fraction] = Number(value.toFixed(digits)).toString().split('.');
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
  return fraction === undefined ? grouped : `${grouped}.${fraction}`;
}
