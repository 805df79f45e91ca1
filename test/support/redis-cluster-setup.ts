/**
 * @module Vitest globalSetup of the integration project: the Redis Cluster the cluster tests
 * use. It is the one named by `REDIS_CLUSTER` (`host:port,...`, as `.ci/run` starts it) when
 * its nodes answer with every slot served; else a throwaway cluster of three masters on free
 * ports (`redis-server --cluster-enabled yes`, joined with `redis-cli --cluster create`),
 * keeping nothing on disk and stopped after the run; else the run stops with one line
 * saying why. The nodes reach the test workers as `REDIS_CLUSTER` (see `redisCluster()`).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster } from 'ioredis';
import { freePort, redisAnswers, throwawayArgs } from './redis-setup.js';

const STARTUP_MS = 10_000;

/** The nodes of `REDIS_CLUSTER`, or none. */
export function clusterNodesOf(value: string | undefined): { host: string; port: number }[] {
  return (value ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '')
    .map((n) => {
      const at = n.lastIndexOf(':');
      return { host: n.slice(0, at), port: Number(n.slice(at + 1)) };
    });
}

/** Whether the cluster at `nodes` serves every slot, asked within `timeoutMs`. */
async function clusterOk(
  nodes: readonly { host: string; port: number }[],
  timeoutMs = 2_000,
): Promise<boolean> {
  if (nodes.length === 0) return false;
  const first = nodes[0] as { host: string; port: number };
  if (!(await redisAnswers({ ...first, tls: false }))) return false;
  const cluster = new Cluster([...nodes], {
    clusterRetryStrategy: () => null,
    redisOptions: { connectTimeout: timeoutMs, maxRetriesPerRequest: 0 },
  });
  cluster.on('error', () => undefined);
  try {
    const info = await cluster.cluster('INFO');
    return info.includes('cluster_state:ok');
  } catch {
    return false;
  } finally {
    cluster.disconnect();
  }
}

/** Starts one node; resolves once it answers, or null when it exits first. */
async function startNode(
  port: number,
  dir: string,
  nodeTimeoutMs: number,
): Promise<ChildProcess | null> {
  const child = spawn(
    'redis-server',
    [
      ...throwawayArgs(port, dir),
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      join(dir, `nodes-${port}.conf`),
      '--cluster-node-timeout',
      String(nodeTimeoutMs),
      // A replica syncs at once (Redis waits 5 s for more replicas by default).
      '--repl-diskless-sync-delay',
      '0',
    ],
    { stdio: 'ignore' },
  );
  child.on('error', () => undefined);
  const deadline = Date.now() + STARTUP_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) return null;
    if (await redisAnswers({ host: '127.0.0.1', port, tls: false }, 200)) return child;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  child.kill('SIGKILL');
  return null;
}

/** A throwaway cluster this process started. */
export interface ThrowawayCluster {
  /** Its nodes, `host:port,...`. */
  readonly nodes: string;
  /** Each node's process, by port. */
  readonly processes: ReadonlyMap<number, ChildProcess>;
  readonly stop: () => Promise<void>;
}

/**
 * A throwaway cluster of three masters, each with `replicas` replicas, whose nodes take a
 * peer for failed after `nodeTimeoutMs` (Redis's default is 15 s); see the module.
 */
export async function startThrowawayCluster(
  replicas = 0,
  nodeTimeoutMs = 15_000,
): Promise<ThrowawayCluster | { why: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'axon-test-cluster-'));
  const children: ChildProcess[] = [];
  const killAll = (): void => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', killAll);
  const fail = (why: string): { why: string } => {
    process.off('exit', killAll);
    killAll();
    return { why };
  };
  const ports: number[] = [];
  const processes = new Map<number, ChildProcess>();
  for (let i = 0; i < 3 * (1 + replicas); i++) {
    let child: ChildProcess | null = null;
    for (let attempt = 0; attempt < 3 && !child; attempt++) {
      const port = await freePort();
      child = await startNode(port, dir, nodeTimeoutMs);
      if (child) {
        ports.push(port);
        processes.set(port, child);
      }
    }
    if (!child) return fail('a redis-server with --cluster-enabled did not start');
    children.push(child);
  }
  const nodes = ports.map((p) => `127.0.0.1:${p}`);
  const created = spawnSync(
    'redis-cli',
    ['--cluster', 'create', ...nodes, '--cluster-replicas', String(replicas), '--cluster-yes'],
    { encoding: 'utf8', timeout: STARTUP_MS },
  );
  if (created.status !== 0) {
    return fail(`redis-cli --cluster create failed: ${(created.stderr || created.stdout).trim()}`);
  }
  const addresses = ports.map((port) => ({ host: '127.0.0.1', port }));
  const deadline = Date.now() + STARTUP_MS;
  while (!(await clusterOk(addresses))) {
    if (Date.now() > deadline) return fail('the new cluster did not serve every slot in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // A replica that never synced with its master is not promoted when the master fails.
  for (const port of ports) {
    for (;;) {
      const info = spawnSync('redis-cli', ['-p', String(port), 'info', 'replication'], {
        encoding: 'utf8',
      }).stdout;
      if (!info.includes('role:slave') || info.includes('master_link_status:up')) break;
      if (Date.now() > deadline) return fail(`the replica on ${port} did not sync in time`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return {
    nodes: nodes.join(','),
    processes,
    stop: async () => {
      process.off('exit', killAll);
      await Promise.all(
        children.map(
          (c) =>
            new Promise<void>((resolve) => {
              if (c.exitCode !== null || c.signalCode !== null) {
                resolve();
                return;
              }
              c.once('exit', () => {
                resolve();
              });
              c.kill('SIGTERM');
            }),
        ),
      );
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Makes sure a Redis Cluster answers for the cluster tests and sets
 * `process.env.REDIS_CLUSTER` to its nodes; returns the teardown of a throwaway one.
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  const wanted = process.env['REDIS_CLUSTER']?.trim();
  if (wanted && (await clusterOk(clusterNodesOf(wanted)))) return undefined;
  const throwaway = await startThrowawayCluster();
  if ('why' in throwaway) {
    process.stderr.write(
      `tests need a Redis Cluster${wanted ? ` and none serves at ${wanted}` : ''}: ${throwaway.why} (set REDIS_CLUSTER to a cluster's nodes, host:port,...)\n`,
    );
    process.exit(1);
  }
  process.env['REDIS_CLUSTER'] = throwaway.nodes;
  if (wanted) {
    process.stderr.write(
      `tests: no Redis Cluster serves at ${wanted}; using a throwaway one at ${throwaway.nodes} (stopped after the run)\n`,
    );
  }
  return throwaway.stop;
}
