/**
 * @module Every benchmark, in the order `npm run bench` runs them, with what it measures:
 * with `bench/targets.ts` the source of docs/benchmarks.md's table of benches and targets
 * (`target-table.ts`), so the doc cannot say other than the code.
 */

/** One bench: `npm run bench:<name>`, writing `bench/results/<name>.json`. */
export interface Bench {
  readonly name: string;
  /** What it measures and against what, as the table says it. */
  readonly measures: string;
}

/** Every bench, in the order `npm run bench` runs them. */
export const BENCHES: readonly Bench[] = [
  {
    name: 'inline',
    measures:
      'a two-step run (agent `a` delegates to agent `b`, no-op handlers, in-memory store) against the same two-node graph in LangGraph.js',
  },
  {
    name: 'actors',
    measures: 'heap per idle agent actor (`--expose-gc`, heap delta ÷ N) and how many stay alive',
  },
  {
    name: 'worker',
    measures:
      "no-op steps through worker placement against raw piscina (same pool size, requests kept in flight, interleaved); one step's round trip against a raw `postMessage` ping-pong",
  },
  {
    name: 'stream',
    measures:
      'tokens/s from a worker-placed scripted engine (no delay) to a host consumer, through the log and the bounded stream; the heap high-water mark under a slow consumer',
  },
  {
    name: 'engine',
    measures:
      'tokens/s through the OpenAI binding against a bare `openai` SDK streaming loop, both reading the same local OpenAI-compatible server (scripted engine, no delay, its own process), 2 000 tokens a call, interleaved',
  },
  {
    name: 'store',
    measures:
      'two-step runs/s on the in-memory, SQLite (`durability` `process`, the default, and `power`), Redis and PostgreSQL stores, 16 in flight; on PostgreSQL against the same two-node graph in LangGraph.js with its PostgreSQL checkpointer and against a two-step DBOS Transact workflow on the same server; steps/s against each database’s own ceiling — one `INSERT` of a step’s row a transaction on a pool of the store’s size (PostgreSQL), one insert a step under axon’s group commit (SQLite) — at the same concurrency; events appended/s (batches of 8); milliseconds to read events 5 001–10 000 of a 10 000-event log; a page of 50 runs from 1 000 and from 100 000',
  },
  {
    name: 'memory',
    measures:
      "recall p50 / p99 over the hot, warm and cold tiers at 1k / 10k / 100k items; the cold index against an exact scan, for queries over one user's scope and the global one, and over 100 000 memories in one scope",
  },
  {
    name: 'sse',
    measures:
      "`axon serve` (in-memory store) with 1 000 SSE clients in another process, each with a run of its own, each streaming `llm_call` steps of 1 000 tokens 5 ms apart (the scripted engine's default), one after another: the server's event-loop lag p99 over 10 s while all of them stream, and the tokens/s they receive; one connection following a 200 000-token `llm_call` on a scripted engine with no delay (every token received, in order; a worker-placed agent's tokens beside it)",
  },
  {
    name: 'http',
    measures:
      'step submissions/s (`POST /v1/runs/{run_id}/steps`, a `tool_call` of `add`, a client token each) against a bare Fastify route that claims the same step record through the same store and flushes it; both on SQLite (a temp file, what `axon serve` runs on), both in memory beside; one client in another process, 16 keep-alive connections, interleaved',
  },
  {
    name: 'fleet',
    measures:
      "no-op `gate_eval` steps through pool placement over BullMQ (this process the API on the Redis store, `axon worker` processes of concurrency 16) against raw BullMQ no-op jobs (`Queue.add`, completion from `QueueEvents`, one worker process of the same concurrency), 64 in flight, interleaved; steps/s with 1, 2 and 4 worker processes, and on a Redis Cluster of three masters; submit-to-start of one step at a time on an idle pool; the Redis commands a step costs (`redis_calls_per_step`: sent by the clients, counted with MONITOR; `redis_commands_per_step`: run by Redis, scripts' included) and a raw job's",
  },
  {
    name: 'orchestrator',
    measures:
      "the front door: `handle()` of a message a rule routes to a no-op agent, with the runtime's default memory (hot recall before routing, the exchange stored after; user `u`, session `s`), against a bare `runtime.invoke` of the same agent, 16 requests in flight on both sides, interleaved; `classify` p50 / p99 of the embedding router (hashed embedder) over 100 handlers, one message at a time after a warm-up",
  },
  {
    name: 'workflow',
    measures:
      "a thread of a two-role workflow of no-op roles (the moderator alternates them; it ends at `maxRounds` 10), each a durable run with its lifecycle facts and ten turn steps in the in-memory store, against the same loop in LangGraph.js (two nodes, a conditional edge back, the same round limit); 16 threads in flight on both sides, interleaved; the durable pair: the same threads on the SQLite store (both durabilities) against the graph with LangGraph.js's SQLite checkpointer, each side on a fresh file for each round",
  },
  {
    name: 'container',
    measures:
      "one no-op step at a time through container placement (podman): in a started container against the same step over a pipe to the container's own runner in a plain child process (the same messages, handler and runtime; no container), interleaved; in a container started for the step (`reuse: false`) against `podman run --rm --network=none` of the same image running `node -e ''`, alternated; a step taking a container started before it (`warm: 1`)",
  },
  {
    name: 'cli',
    measures:
      '`axon --help` and `axon runs list --url` against a running `axon serve`, the built CLI, a whole process per sample from spawn to exit, in turn',
  },
  {
    name: 'durable-agents',
    measures:
      'durable agents on the SQLite store: 1 000 000 actors sent a message each with at most 100 000 awake; heap per asleep and per awake actor (`--expose-gc`); a message to an asleep actor until its handler starts (p50 / p99); messages/s to random actors against a one-node LangGraph.js graph with its SQLite checkpointer, a thread per key, interleaved',
  },
];
