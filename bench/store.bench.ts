/**
 * @module bench:store — each RunStore under the runtime: two-step runs per second (agent A
 * delegates to agent B, no-op handlers, `AXON_BENCH_IN_FLIGHT` runs in flight, default 16)
 * on the in-memory, SQLite (a file, WAL) and Redis (127.0.0.1:6379) stores, interleaved;
 * the same one run at a time on the in-memory and SQLite stores; events appended per second (batches of 8 to one
 * step); and the time to read the second half of a 10 000-event log (from `seq` 5 000).
 * SQLite is measured at both durabilities, interleaved with the rest: `sqlite` is the
 * default (`'process'`, `synchronous = NORMAL`), `sqlite_power` is `durability: 'power'`
 * (`synchronous = FULL`, the WAL synced at every commit).
 * `ratios.sqlite_vs_memory` = two-step runs/s on SQLite (the default) ÷ in memory (target
 * ≥ 0.5); `ratios.sqlite_power_vs_memory` the same with `'power'`.
 * PostgreSQL (issue 32): the same runs and appends on `postgresStore` (127.0.0.1:5432, or
 * `AXON_BENCH_POSTGRES`), a schema per round, dropped at the end;
 * `ratios.postgres_vs_memory` (target ≥ 0.3). Its peer, interleaved with the rest: the same
 * two-node durable graph in LangGraph.js (node `a`, then node `b`, a thread per invoke) with
 * `@langchain/langgraph-checkpoint-postgres` on the same server (a schema of its own, the same
 * 16 in flight); `ratios.vs_langgraph_postgres` = axon's two-step runs/s on PostgreSQL ÷ its
 * graphs/s (target ≥ 3).
 * Issue 47's peers and ceilings, interleaved with the rest: DBOS Transact (`@dbos-inc/dbos-sdk`)
 * running a two-step durable workflow of no-op steps on the same PostgreSQL, 16 in flight
 * (its system schema of its own each round, dropped at the end; a pool of 8, as the store's):
 * `ratios.postgres_vs_dbos` = axon's two-step runs/s on PostgreSQL ÷ its workflows/s (target ≥
 * 5). The database's own ceiling, `runs_raw_postgres`: one `INSERT` of a finished step's row a
 * transaction, 16 at once on a `pg.Pool` of the store's size (8), the server's durability as
 * the store has it; `ratios.postgres_vs_raw` = axon's steps/s (two a run) ÷ those inserts/s
 * (target ≥ 0.5). SQLite's, `runs_raw_sqlite`: one insert a step under the store's own group
 * commit (`TurnCommit`, a file opened as the store opens it), 16 at once, each waiting for its
 * commit; `ratios.sqlite_vs_raw` the same quotient (target ≥ 0.5).
 * Listings (issue 29): the time to list 50 runs — the newest, and the newest of one user in
 * one status, as `GET /v1/runs` asks — on a store of 1 000 runs and on one of 100 000
 * (`AXON_BENCH_LIST_RUNS`), SQLite and Redis; `ratios.list_<kind>_100k_vs_1k` near 1 says a
 * page costs what it holds, not what the store holds.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { defineAgent } from '../src/actors/define-agent.js';
import { createRuntime, type Runtime } from '../src/runtime/runtime.js';
import { createLogger } from '../src/observability/logger.js';
import { memoryStore } from '../src/store/memory/memory-store.js';
import { redisStore } from '../src/store/redis/redis-store.js';
import type { RunStore } from '../src/store/run-store.js';
import { sqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { postgresStore } from '../src/store/postgres/postgres-store.js';
import pg from 'pg';
import { Annotation, END as LG_END, START, StateGraph } from '@langchain/langgraph';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import type { StepEvent } from '../src/streams/events.js';
import { DBOS } from '@dbos-inc/dbos-sdk';
import type Database from 'better-sqlite3';
import { openSqlite } from '../src/store/sqlite/sqlite-open.js';
import { DEFAULT_MAX_BATCH_MS } from '../src/store/sqlite/sqlite-store.js';
import { TurnCommit } from '../src/store/sqlite/sqlite-turn-commit.js';
import { interleave, report } from './harness.js';
import { benchRun, benchStep } from './records.js';

const rounds = Number(process.env['AXON_BENCH_ROUNDS'] ?? '6');
/** Runs kept in flight in the runs rounds, as a service has them; the same for every store. */
const inFlight = Number(process.env['AXON_BENCH_IN_FLIGHT'] ?? '16');
const roundMs = Number(process.env['AXON_BENCH_ROUND_MS'] ?? '1500');
const dir = mkdtempSync(join(tmpdir(), 'axon-bench-store-'));
const redisPrefix = `axon-bench:${randomUUID()}:`;
let files = 0;

type Kind = 'memory' | 'sqlite' | 'sqlite_power' | 'redis' | 'postgres';
const postgresUrl =
  process.env['AXON_BENCH_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const postgresSchemas: string[] = [];
const makers: Record<Kind, () => RunStore> = {
  // A schema of its own each round, dropped at the end.
  postgres: () => {
    const schema = `axon_bench_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    postgresSchemas.push(schema);
    return postgresStore({ connection: postgresUrl, schema });
  },
  memory: () => memoryStore(),
  // The default durability, whatever it is: what `ratios.sqlite_vs_memory` holds to its target.
  sqlite: () => sqliteStore(join(dir, `bench-${++files}.db`)),
  sqlite_power: () => sqliteStore(join(dir, `bench-${++files}.db`), { durability: 'power' }),
  redis: () => redisStore({ prefix: `${redisPrefix}${++files}:` }),
};

const b = defineAgent({ name: 'b', handler: () => 'b' });
const a = defineAgent({
  name: 'a',
  handler: async (input, ctx, runtime) => (await runtime.delegate('b', input, ctx)).output,
});

/** A bench case running two-step runs on a fresh store of `kind` each round. */
function runsOn(kind: Kind) {
  let runtime: Runtime | null = null;
  return {
    name: `runs_${kind}`,
    setup: () => {
      runtime = createRuntime({
        agents: [a, b],
        store: makers[kind](),
        logger: createLogger({ level: 'silent' }),
      });
    },
    teardown: async () => {
      await runtime?.close();
      runtime = null;
    },
    // One harness operation is `inFlight` runs at once.
    run: async () => {
      const rt = runtime;
      if (!rt) return;
      const results = await Promise.all(
        Array.from({ length: inFlight }, () => rt.invoke('a', 'x')),
      );
      for (const r of results) {
        if (r.status !== 'success') throw new Error(`run on ${kind} failed: ${r.error?.message}`);
      }
    },
  };
}

/** A store with one run and one step, ready for its log. */
async function withStep(kind: Kind): Promise<{ store: RunStore; stepId: string }> {
  const store = makers[kind]();
  const run = benchRun();
  await store.createRun(run);
  const step = benchStep(run.run_id);
  await store.createStep(step);
  const stepId = step.step_id;
  return { store, stepId };
}

const token = (stepId: string, seq: number): StepEvent => ({
  type: 'token',
  step_id: stepId,
  seq,
  ts: Date.now(),
  t: ' word',
  i: seq - 1,
});

/** A bench case appending batches of 8 token events to one step. */
function appendsOn(kind: Kind) {
  let target: { store: RunStore; stepId: string } | null = null;
  let seq = 0;
  return {
    name: `appends_${kind}`,
    setup: async () => {
      target = await withStep(kind);
      seq = 0;
    },
    teardown: async () => {
      await target?.store.close();
      target = null;
    },
    run: async () => {
      if (!target) return;
      const batch: StepEvent[] = [];
      for (let i = 0; i < 8; i++) batch.push(token(target.stepId, ++seq));
      await target.store.appendEvents(batch);
    },
  };
}

/** LangGraph.js's two-node graph on its PostgreSQL checkpointer: the peer of `runs_postgres`. */
function langgraphOnPostgres() {
  const State = Annotation.Root({
    out: Annotation<string>({ reducer: (_prev, next) => next, default: () => '' }),
  });
  const graph = new StateGraph(State)
    .addNode('a', () => ({ out: 'a' }))
    .addNode('b', () => ({ out: 'b' }))
    .addEdge(START, 'a')
    .addEdge('a', 'b')
    .addEdge('b', LG_END);
  let saver: PostgresSaver | null = null;
  let durable: ReturnType<typeof graph.compile> | null = null;
  return {
    name: 'runs_langgraph_postgres',
    setup: async () => {
      const schema = `axon_bench_lg_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
      postgresSchemas.push(schema);
      saver = PostgresSaver.fromConnString(postgresUrl, { schema });
      await saver.setup();
      durable = graph.compile({ checkpointer: saver });
    },
    teardown: async () => {
      await saver?.end();
      saver = null;
      durable = null;
    },
    run: async () => {
      const g = durable;
      if (!g) return;
      const outs = await Promise.all(
        Array.from({ length: inFlight }, () =>
          g.invoke({ out: 'x' }, { configurable: { thread_id: randomUUID() } }),
        ),
      );
      if (outs.some((o) => o.out !== 'b')) throw new Error('a langgraph run failed');
    },
  };
}

/** The pool size of `postgresStore`'s own pool: the raw ceiling and DBOS get the same. */
const POSTGRES_POOL = 8;

// DBOS registers its functions once, before it is launched (each round launches it anew).
const dbosStepA = DBOS.registerStep(() => Promise.resolve('a'), { name: 'a' });
const dbosStepB = DBOS.registerStep(() => Promise.resolve('b'), { name: 'b' });
const dbosTwoSteps = DBOS.registerWorkflow(
  async (input: string) => {
    await dbosStepA();
    return `${input}${await dbosStepB()}`;
  },
  { name: 'two_steps' },
);

/** DBOS Transact's two-step workflow on the same PostgreSQL: the peer of `runs_postgres`. */
function dbosOnPostgres() {
  let launched = false;
  return {
    name: 'runs_dbos_postgres',
    setup: async () => {
      const schema = `axon_bench_dbos_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
      postgresSchemas.push(schema);
      DBOS.setConfig({
        name: 'axon-bench-store',
        systemDatabaseUrl: postgresUrl,
        systemDatabaseSchemaName: schema,
        systemDatabasePoolSize: POSTGRES_POOL,
        logLevel: 'error',
      });
      await DBOS.launch();
      launched = true;
    },
    teardown: async () => {
      if (launched) await DBOS.shutdown();
      launched = false;
    },
    run: async () => {
      const outs = await Promise.all(Array.from({ length: inFlight }, () => dbosTwoSteps('x')));
      if (outs.some((o) => o !== 'xb')) throw new Error('a DBOS workflow failed');
    },
  };
}

/**
 * PostgreSQL's own ceiling for the store's write: one `INSERT` of a finished step's row per
 * transaction (autocommit), `inFlight` at once, on a pool the size of the store's. One
 * harness operation is `inFlight` inserts: `inFlight` steps.
 */
function rawPostgres() {
  let pool: pg.Pool | null = null;
  let table = '';
  const record = JSON.stringify({ type: 'agent', name: 'b', status: 'succeeded', output: 'b' });
  return {
    name: 'runs_raw_postgres',
    setup: async () => {
      const schema = `axon_bench_raw_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
      postgresSchemas.push(schema);
      pool = new pg.Pool({ connectionString: postgresUrl, max: POSTGRES_POOL });
      table = `"${schema}".steps`;
      await pool.query(`CREATE SCHEMA "${schema}"`);
      await pool.query(
        `CREATE TABLE ${table} (seq BIGSERIAL UNIQUE, step_id TEXT PRIMARY KEY,
           run_id TEXT NOT NULL, status TEXT NOT NULL, record JSONB NOT NULL)`,
      );
    },
    teardown: async () => {
      await pool?.end();
      pool = null;
    },
    run: async () => {
      const p = pool;
      if (!p) return;
      await Promise.all(
        Array.from({ length: inFlight }, () =>
          p.query(
            `INSERT INTO ${table} (step_id, run_id, status, record) VALUES ($1, $2, 'succeeded', $3)`,
            [`step_${randomUUID()}`, `run_${randomUUID()}`, record],
          ),
        ),
      );
    },
  };
}

/**
 * SQLite's ceiling under axon's own group commit: one insert of a finished step's row per
 * step, `inFlight` at once, each waiting for its commit (`TurnCommit`, the store's default
 * `maxBatchMs`), in a file opened as the store opens it (WAL, the default durability).
 */
function rawSqlite() {
  let db: Database.Database | null = null;
  let turn: TurnCommit | null = null;
  let insert: Database.Statement | null = null;
  let closeCheckpointer: (() => Promise<void>) | null = null;
  const record = JSON.stringify({ type: 'agent', name: 'b', status: 'succeeded', output: 'b' });
  return {
    name: 'runs_raw_sqlite',
    setup: () => {
      const opened = openSqlite(join(dir, `raw-${++files}.db`), {});
      db = opened.db;
      const checkpointer = opened.checkpointer;
      closeCheckpointer = checkpointer ? () => checkpointer.close() : null;
      db.exec(`CREATE TABLE raw_steps (step_ref INTEGER PRIMARY KEY, step_id TEXT NOT NULL UNIQUE,
        run_id TEXT NOT NULL, status TEXT NOT NULL, record TEXT NOT NULL)`);
      insert = db.prepare(
        `INSERT INTO raw_steps (step_id, run_id, status, record) VALUES (?, ?, 'succeeded', ?)`,
      );
      turn = new TurnCommit(db, DEFAULT_MAX_BATCH_MS);
    },
    teardown: async () => {
      await turn?.close();
      await closeCheckpointer?.();
      db?.close();
      db = turn = insert = closeCheckpointer = null;
    },
    run: async () => {
      const t = turn;
      const ins = insert;
      if (!t || !ins) return;
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          await t.write(() => ins.run(`step_${randomUUID()}`, `run_${randomUUID()}`, record));
          await t.flush();
        }),
      );
    },
  };
}

const kinds: Kind[] = ['memory', 'sqlite', 'sqlite_power', 'redis'];
const all: Kind[] = [...kinds, 'postgres'];
const stats = await interleave(
  [
    ...all.map(runsOn),
    langgraphOnPostgres(),
    dbosOnPostgres(),
    rawPostgres(),
    rawSqlite(),
    ...all.map(appendsOn),
  ],
  { rounds, roundMs, warmupOps: 50 },
);
const median = (name: string): number => stats.find((s) => s.name === name)?.median ?? 0;

/** Milliseconds to read events 5 001 … 10 000 of a 10 000-event log (median of 20). */
async function readHalf(kind: Kind): Promise<number> {
  const { store, stepId } = await withStep(kind);
  for (let seq = 0; seq < 10_000;) {
    const batch: StepEvent[] = [];
    for (let i = 0; i < 500; i++) batch.push(token(stepId, ++seq));
    await store.appendEvents(batch);
  }
  const times: number[] = [];
  for (let i = 0; i < 20; i++) {
    const t = performance.now();
    const events = await store.readEvents(stepId, 5_000);
    times.push(performance.now() - t);
    if (events.length !== 5_000) throw new Error(`${kind} read ${events.length} events`);
  }
  await store.close();
  times.sort((x, y) => x - y);
  return Number((times[10] ?? 0).toFixed(2));
}

const metrics: Record<string, number> = {
  runs_in_flight: inFlight,
  runs_per_s_langgraph_postgres: Math.round(median('runs_langgraph_postgres') * inFlight),
  runs_per_s_dbos_postgres: Math.round(median('runs_dbos_postgres') * inFlight),
  // One operation of the raw cases is `inFlight` steps (one insert each).
  steps_per_s_raw_postgres: Math.round(median('runs_raw_postgres') * inFlight),
  steps_per_s_raw_sqlite: Math.round(median('runs_raw_sqlite') * inFlight),
  steps_per_s_postgres: Math.round(median('runs_postgres') * inFlight * 2),
  steps_per_s_sqlite: Math.round(median('runs_sqlite') * inFlight * 2),
};
for (const kind of all) {
  metrics[`runs_per_s_${kind}`] = Math.round(median(`runs_${kind}`) * inFlight);
  metrics[`events_per_s_${kind}`] = Math.round(median(`appends_${kind}`) * 8);
  metrics[`read_5k_of_10k_ms_${kind}`] = await readHalf(kind);
}

const manyRuns = Number(process.env['AXON_BENCH_LIST_RUNS'] ?? '100000');

/**
 * Median ms to list 50 runs (the newest; the newest of one user in one status) of a store of
 * `kind` holding `n` runs of 20 users, one in ten running.
 */
async function listMs(kind: Kind, n: number): Promise<{ newest: number; mine: number }> {
  const store = makers[kind]();
  for (let made = 0; made < n;) {
    const batch = [];
    for (let i = 0; i < 1_000 && made < n; i++, made++) {
      batch.push(
        store.createRun({
          ...benchRun(),
          user_id: `user-${made % 20}`,
          status: made % 10 === 0 ? 'running' : 'completed',
        }),
      );
    }
    await Promise.all(batch);
  }
  const time = async (list: () => Promise<unknown[]>): Promise<number> => {
    const times: number[] = [];
    for (let i = 0; i < 41; i++) {
      const t = performance.now();
      const runs = await list();
      times.push(performance.now() - t);
      if (runs.length !== 50) throw new Error(`${kind} listed ${runs.length} runs, not 50`);
    }
    times.sort((x, y) => x - y);
    return Number((times[20] ?? 0).toFixed(2));
  };
  const newest = await time(() => store.pageRuns({ limit: 50 }));
  const mine = await time(() =>
    store.pageRuns({ userId: 'user-0', status: ['running'], limit: 50 }),
  );
  await store.close();
  return { newest, mine };
}

const listing: Record<string, number> = {};
for (const kind of ['sqlite', 'redis'] as const) {
  const few = await listMs(kind, 1_000);
  const many = await listMs(kind, manyRuns);
  metrics[`list_50_of_1k_ms_${kind}`] = few.newest;
  metrics[`list_50_of_${manyRuns}_ms_${kind}`] = many.newest;
  metrics[`list_50_mine_of_1k_ms_${kind}`] = few.mine;
  metrics[`list_50_mine_of_${manyRuns}_ms_${kind}`] = many.mine;
  // The slower of the two queries, on the big store against the small one.
  listing[`list_${kind}_100k_vs_1k`] = Number(
    Math.max(many.newest / few.newest, many.mine / few.mine).toFixed(2),
  );
}

/** Two-step runs per second one at a time (each waits for its own commit). */
async function oneAtATime(kind: Kind): Promise<number> {
  const runtime = createRuntime({
    agents: [a, b],
    store: makers[kind](),
    logger: createLogger({ level: 'silent' }),
  });
  for (let i = 0; i < 200; i++) await runtime.invoke('a', 'x');
  let n = 0;
  const start = performance.now();
  while (performance.now() - start < roundMs) {
    await runtime.invoke('a', 'x');
    n++;
  }
  const perS = (n * 1000) / (performance.now() - start);
  await runtime.close();
  return perS;
}
const sequential = {
  memory: await oneAtATime('memory'),
  sqlite: await oneAtATime('sqlite'),
  sqlite_power: await oneAtATime('sqlite_power'),
};
metrics['runs_per_s_sequential_memory'] = Math.round(sequential.memory);
metrics['runs_per_s_sequential_sqlite'] = Math.round(sequential.sqlite);
metrics['runs_per_s_sequential_sqlite_power'] = Math.round(sequential.sqlite_power);

// Leave nothing behind: the SQLite files and the Redis keys.
rmSync(dir, { recursive: true, force: true });
const redis = new Redis('redis://127.0.0.1:6379');
let cursor = '0';
do {
  const [next, keys] = await redis.scan(cursor, 'MATCH', `${redisPrefix}*`, 'COUNT', 1000);
  if (keys.length > 0) await redis.del(...keys);
  cursor = next;
} while (cursor !== '0');
await redis.quit();

const pgAdmin = new pg.Pool({ connectionString: postgresUrl, max: 1 });
for (const schema of postgresSchemas)
  await pgAdmin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
await pgAdmin.end();

report({
  bench: 'store',
  metrics,
  ratios: {
    sqlite_vs_memory: Number((median('runs_sqlite') / median('runs_memory')).toFixed(2)),
    sqlite_power_vs_memory: Number(
      (median('runs_sqlite_power') / median('runs_memory')).toFixed(2),
    ),
    // How the store bench started out, one run at a time: each run waits for its commit.
    sqlite_vs_memory_sequential: Number((sequential.sqlite / sequential.memory).toFixed(2)),
    sqlite_power_vs_memory_sequential: Number(
      (sequential.sqlite_power / sequential.memory).toFixed(2),
    ),
    redis_vs_memory: Number((median('runs_redis') / median('runs_memory')).toFixed(2)),
    postgres_vs_memory: Number((median('runs_postgres') / median('runs_memory')).toFixed(2)),
    vs_langgraph_postgres: Number(
      (median('runs_postgres') / median('runs_langgraph_postgres')).toFixed(2),
    ),
    postgres_vs_dbos: Number((median('runs_postgres') / median('runs_dbos_postgres')).toFixed(2)),
    // Steps/s (two a run) against inserts/s: both are `inFlight` a harness operation.
    postgres_vs_raw: Number(
      ((2 * median('runs_postgres')) / median('runs_raw_postgres')).toFixed(2),
    ),
    sqlite_vs_raw: Number(((2 * median('runs_sqlite')) / median('runs_raw_sqlite')).toFixed(2)),
    ...listing,
  },
});
