/**
 * @module Test helper: fleets in the test's own process — API runtimes with `fleet: { redis }`
 * (or `fleet: { cluster }`) and replicas (`FleetWorker`) on the tests' Redis or Redis Cluster,
 * each fleet under a prefix of its own (hash-tagged on the cluster) — their records there, or
 * in a PostgreSQL schema of the test file's (dropped after it).
 * Replicas and runtimes are stopped after each test (after the test file's own `afterEach`
 * hooks, which run first), and the prefixes' keys removed when the file's tests end.
 */
import { afterAll, afterEach } from 'vitest';
import { FleetWorker, type FleetWorkerOptions } from '../../src/fleet/fleet-worker.js';
import { createLogger } from '../../src/observability/logger.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { RuntimeOptions } from '../../src/runtime/runtime-options.js';
import type { RedisClient } from '../../src/store/redis/redis-connection.js';
import { redisStore } from '../../src/store/redis/redis-store.js';
import { postgresStore } from '../../src/store/postgres/postgres-store.js';
import { dropSchemas, POSTGRES_URL, sql, testSchema } from './postgres.js';
import { Redis } from 'ioredis';
import {
  clearClusterPrefix,
  clearRedisPrefix,
  connectTestCluster,
  redisCluster,
  redisUrl,
} from './redis.js';
import { quietRuntime } from './runtime.js';

/** The in-process fleets of a test file. */
export interface InProcessFleets {
  /** A fresh prefix: a fleet of its own. */
  readonly prefix: () => string;
  /**
   * A replica of `pool` on the fleet of `prefix`, heartbeats every 200 ms (TTL 1 s); with
   * `redisRecords`, its records in Redis whatever the fleet's are.
   */
  readonly replica: (
    prefix: string,
    pool: string,
    options?: Partial<FleetWorkerOptions> & { readonly redisRecords?: boolean },
  ) => Promise<FleetWorker>;
  /**
   * An API runtime of the fleet of `prefix` (pools read every 100 ms, and once now);
   * `options.fleet` adds to its fleet options.
   */
  readonly api: (prefix: string, options?: RuntimeOptions) => Promise<Runtime>;
  /** A connection to the fleets' Redis (or cluster), for a test to look and meddle; closed after the file. */
  readonly redis: RedisClient;
  /** The budget reservations a run of the fleet of `prefix` holds, by step id: `token tokens_out`. */
  readonly holds: (prefix: string, runId: string) => Promise<Record<string, string>>;
  /** Plants a reservation of `tokensOut` by attempt `token` (as a replica that died would leave). */
  readonly plantHold: (
    prefix: string,
    runId: string,
    stepId: string,
    token: string,
    tokensOut: number,
  ) => Promise<void>;
  /** The schema holding the fleets' records, when they are in PostgreSQL. */
  readonly schema: string | null;
}

/**
 * Where a test file's fleets run: the tests' Redis, or their Redis Cluster; with `postgres`,
 * their records in PostgreSQL (queues and streams in Redis).
 */
export interface FleetBackend {
  readonly cluster: boolean;
  readonly postgres?: boolean;
}

/** In-process fleets for this test file, named `name` in their keys; see the module. */
export function useInProcessFleets(
  name: string,
  backend: FleetBackend = { cluster: false },
): InProcessFleets {
  const { cluster } = backend;
  const schema = backend.postgres ? testSchema(name) : null;
  const where = cluster ? { cluster: redisCluster() } : { url: redisUrl() };
  const redis: RedisClient = cluster ? connectTestCluster() : new Redis(redisUrl());
  const quiet = createLogger({ level: 'silent' });
  const prefixes: string[] = [];
  const workers: FleetWorker[] = [];
  const runtimes: Runtime[] = [];
  let n = 0;
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop(0)));
    await Promise.all(runtimes.splice(0).map((r) => r.close()));
  });
  afterAll(async () => {
    redis.disconnect();
    for (const p of prefixes) await (cluster ? clearClusterPrefix(p) : clearRedisPrefix(p));
    if (schema) await dropSchemas([schema]);
  });
  const records = schema ? { postgres: { url: POSTGRES_URL, schema } } : {};
  return {
    redis,
    schema,
    holds: async (prefix, runId) => {
      if (!schema) {
        const flat = await redis.hgetall(`${prefix}run:${runId}:ledger`);
        return Object.fromEntries(
          Object.entries(flat).map(([k, v]) => {
            const [token, , out] = v.split(' ');
            return [k.slice(2), `${token} ${Number(out)}`];
          }),
        );
      }
      const rows = await sql<{ step_id: string; token: string; tokens_out: number }>(
        `SELECT step_id, token, tokens_out FROM "${schema}".holds WHERE run_id = $1`,
        [runId],
      );
      return Object.fromEntries(rows.map((r) => [r.step_id, `${r.token} ${r.tokens_out}`]));
    },
    plantHold: async (prefix, runId, stepId, token, tokensOut) => {
      if (!schema) {
        await redis.hset(
          `${prefix}run:${runId}:ledger`,
          `s:${stepId}`,
          `${token} 0 ${tokensOut} 0`,
        );
        return;
      }
      await sql(
        `INSERT INTO "${schema}".holds (run_id, step_id, token, tokens_in, tokens_out, cost_usd)
         VALUES ($1, $2, $3, 0, $4, 0)`,
        [runId, stepId, token, tokensOut],
      );
    },
    prefix: () => {
      const p = cluster
        ? `{axon-test:${name}:${process.pid}:${n++}}:`
        : `axon-test:${name}:${process.pid}:${n++}:`;
      prefixes.push(p);
      return p;
    },
    replica: async (prefix, pool, options = {}) => {
      const { redisRecords, ...rest } = options;
      const w = await FleetWorker.start({
        pool,
        ...(cluster ? { cluster: redisCluster() } : { redis: redisUrl() }),
        prefix,
        ...(redisRecords ? {} : records),
        heartbeatMs: 200,
        ttlMs: 1000,
        logger: quiet,
        ...rest,
      });
      workers.push(w);
      return w;
    },
    api: async (prefix, options = {}) => {
      const { fleet, ...rest } = options;
      const rt = quietRuntime({
        store: schema
          ? postgresStore({ connection: POSTGRES_URL, schema })
          : redisStore({ ...where, prefix }),
        fleet: {
          ...(cluster ? { cluster: redisCluster() } : { redis: redisUrl() }),
          prefix,
          refreshMs: 100,
          ...fleet,
        },
        ...rest,
      });
      runtimes.push(rt);
      await rt.refreshPools();
      return rt;
    },
  };
}
