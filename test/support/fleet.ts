/**
 * @module Test helper: a fleet of real processes on loopback — `axon serve --redis` and
 * `axon worker`s run from source (`node --import tsx src/cli/main.ts`), all under one key
 * prefix of the tests' Redis (and, with `postgres`, their records in a PostgreSQL schema of
 * the file's), killed and their keys (and schema) removed when the file's tests end.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { spawnAxon, type FleetProcess } from './axon-process.js';
import { dropSchemas, POSTGRES_URL, testSchema } from './postgres.js';
import { clearClusterPrefix, clearRedisPrefix, redisCluster, redisUrl } from './redis.js';

export type { FleetProcess } from './axon-process.js';

/** Short lock and stall intervals for `axon worker`, so a dead replica's step moves on within seconds. */
export const FAST_REPLICA_FLAGS: readonly string[] = [
  '--lock-ms',
  '1500',
  '--stalled-ms',
  '500',
  '--heartbeat-ms',
  '200',
  '--ttl-ms',
  '1000',
];

/** A worker process, with the replica id it announced. */
export interface WorkerProcess extends FleetProcess {
  readonly replicaId: string;
}

/** The fleet of a test file; see the module. */
export interface TestFleet {
  readonly prefix: string;
  /** The schema of its records in PostgreSQL, when they are there. */
  readonly schema: string | null;
  /** `axon serve --redis` on a free port: its base URL. */
  api(env?: NodeJS.ProcessEnv): Promise<FleetProcess & { readonly url: string }>;
  /** `axon worker --pool <pool> --tags <tags> ...args`, once it takes steps. */
  worker(
    pool: string,
    tags: readonly string[],
    args?: readonly string[],
    env?: NodeJS.ProcessEnv,
  ): Promise<WorkerProcess>;
}

/**
 * A fleet for this test file under its own prefix; see the module. `config` is YAML added
 * to the config file every process of it reads (after its `redis:` section). With `cluster`
 * the fleet runs on the tests' Redis Cluster (`redis.cluster`, a hash-tagged prefix); with
 * `postgres` its records are in PostgreSQL (`store.postgres`, a schema of the file's).
 */
export function useTestFleet(
  name: string,
  config = '',
  options: { readonly cluster?: boolean; readonly postgres?: boolean } = {},
): TestFleet {
  const cluster = options.cluster === true;
  const schema = options.postgres === true ? testSchema(name) : null;
  const prefix = cluster
    ? `{axon-test:${name}:${process.pid}}:`
    : `axon-test:${name}:${process.pid}:`;
  const dir = mkdtempSync(join(tmpdir(), `axon-${name}-`));
  const file = join(dir, 'axon.yaml');
  const where = cluster ? `cluster: "${redisCluster()}"` : `url: ${redisUrl()}`;
  const store = schema ? `store:\n  postgres: ${POSTGRES_URL}\n  schema: ${schema}\n` : '';
  writeFileSync(file, `redis:\n  ${where}\n  prefix: "${prefix}"\n${store}${config}`);
  const spawned: FleetProcess[] = [];
  afterAll(async () => {
    for (const p of spawned) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await Promise.all(spawned.map((p) => p.exited));
    await (cluster ? clearClusterPrefix(prefix) : clearRedisPrefix(prefix));
    if (schema) await dropSchemas([schema]);
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    prefix,
    schema,
    async api(env = {}) {
      const { process: proc, match } = await spawnAxon(
        ['serve', '--port', '0', '--config', file, '--data-dir', join(dir, 'data')],
        env,
        /listening on (http:\/\/\S+) /,
        spawned,
      );
      return { ...proc, url: match[1] as string };
    },
    async worker(pool, tags, args = [], env = {}) {
      const { process: proc, match } = await spawnAxon(
        [
          'worker',
          '--pool',
          pool,
          ...(tags.length > 0 ? ['--tags', tags.join(',')] : []),
          '--config',
          file,
          ...args,
        ],
        { AXON_LOG_LEVEL: 'warn', ...env },
        /replica (\S+) of pool/,
        spawned,
      );
      return { ...proc, replicaId: match[1] as string };
    },
  };
}
