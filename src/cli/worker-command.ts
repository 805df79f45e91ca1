/**
 * @module `axon worker`: one replica of a pool of the fleet (`src/fleet/`). It runs the steps
 * of its pool's queue with the same agents, tools and engines `axon serve` has (and what the
 * config file adds, its workflows' roles among them), logs each step it takes, and on its signal (SIGINT, SIGTERM) finishes its
 * steps within `--grace-ms` and hands the rest back.
 */
import { execFile } from 'node:child_process';
import { FleetWorker, type FleetWorkerOptions } from '../fleet/fleet-worker.js';
import type { Logger } from '../observability/logger.js';
import { createCliLogger } from './cli-logger.js';
import { aborted, type CliIo } from './cli-io.js';
import { ServeConfigError } from './serve/config-problems.js';
import { configuredRuntimeOptions } from './serve/serve-command.js';
import { loadServeConfig, type ServeEnv } from './serve/serve-config.js';
import { servedWorkflows } from './serve/served-workflows.js';
import { workflowAgents } from '../workflows/turn-agent.js';

/** The flags of `axon worker`, as given. */
export interface WorkerFlags {
  readonly pool?: string | undefined;
  readonly tags?: string | undefined;
  readonly concurrency?: string | undefined;
  readonly redis?: string | undefined;
  /** `--redis-cluster host:port,...`. */
  readonly redisCluster?: string | undefined;
  /** `--postgres <url>`: the fleet's records in PostgreSQL. */
  readonly postgres?: string | undefined;
  readonly config?: string | undefined;
  readonly vramMb?: string | undefined;
  readonly features?: string | undefined;
  readonly graceMs?: string | undefined;
  readonly lockMs?: string | undefined;
  readonly stalledMs?: string | undefined;
  readonly heartbeatMs?: string | undefined;
  readonly ttlMs?: string | undefined;
}

/** Options of {@link workerCommand}. */
export interface WorkerCommandOptions {
  readonly flags: WorkerFlags;
  /** Aborted when the process is asked to stop. */
  readonly signal: AbortSignal;
  readonly env?: ServeEnv;
  readonly cwd?: string;
}

/** A flag that must be an integer >= 1 (`TypeError` naming it otherwise). */
function positive(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!(Number.isSafeInteger(n) && n >= 1)) {
    throw new TypeError(`--${name} must be an integer >= 1, got "${value}"`);
  }
  return n;
}

/** A comma-separated list flag: its non-empty items. */
function list(value: string | undefined): string[] {
  return value === undefined
    ? []
    : value
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
}

/**
 * What `nvidia-smi` reports of this host's GPUs: their memory (MiB, summed) and names; `{}`
 * where there is no `nvidia-smi` (or it fails).
 */
export function detectGpus(): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    execFile(
      'nvidia-smi',
      ['--query-gpu=memory.total,name', '--format=csv,noheader,nounits'],
      { timeout: 5000 },
      (err, stdout) => {
        if (err) {
          resolve({});
          return;
        }
        const rows = stdout
          .trim()
          .split('\n')
          .map((line) => line.split(',').map((s) => s.trim()));
        const vram = rows.reduce((n, [mb]) => n + (Number(mb) || 0), 0);
        resolve({ vram_mb: vram, gpus: rows.map(([, name]) => name ?? 'gpu') });
      },
    );
  });
}

/**
 * Runs `axon worker` until `options.signal` aborts, then stops (see the module) and resolves
 * 0. Resolves 2 for bad flags or configuration, 1 when Redis cannot be reached.
 */
export async function workerCommand(options: WorkerCommandOptions, io: CliIo): Promise<number> {
  const { flags } = options;
  const env = options.env ?? process.env;
  const fail = (code: number, message: string): number => {
    io.stderr.write(`axon worker: ${message}\n`);
    return code;
  };
  if (flags.pool === undefined) return fail(2, '--pool <id> is required');
  let logger: Logger;
  let workerOptions: FleetWorkerOptions;
  let graceMs: number;
  let closeParts: () => Promise<void>;
  try {
    const config = loadServeConfig({
      flags: {
        config: flags.config,
        redis: flags.redis,
        redisCluster: flags.redisCluster,
        postgres: flags.postgres,
      },
      ...(options.env ? { env: options.env } : {}),
      ...(options.cwd ? { cwd: options.cwd } : {}),
    });
    // At AXON_LOG_LEVEL, default warn: info says which steps it takes, what it hands back.
    logger = createCliLogger(io.stderr, env);
    const vram = positive('vram-mb', flags.vramMb);
    const features = list(flags.features);
    const declared: Record<string, unknown> = {
      ...(vram === undefined ? {} : { vram_mb: vram }),
      ...(features.length === 0 ? {} : { features }),
    };
    const concurrency = positive('concurrency', flags.concurrency);
    const lockMs = positive('lock-ms', flags.lockMs);
    const stalledCheckMs = positive('stalled-ms', flags.stalledMs);
    const heartbeatMs = positive('heartbeat-ms', flags.heartbeatMs);
    const ttlMs = positive('ttl-ms', flags.ttlMs);
    graceMs = positive('grace-ms', flags.graceMs) ?? 30_000;
    const parts = configuredRuntimeOptions(config, logger);
    closeParts = parts.close;
    // The workflows `axon serve` runs: their roles' agents, for the turns placed on pools.
    const served = servedWorkflows(config.workflows);
    workerOptions = {
      pool: flags.pool,
      tags: list(flags.tags),
      // What the host reports, then what the flags declare over it.
      capabilities: { ...(await detectGpus()), ...declared },
      ...(config.redis?.cluster
        ? { cluster: config.redis.cluster }
        : { redis: config.redis?.url ?? 'redis://127.0.0.1:6379' }),
      prefix: config.redis?.prefix ?? 'axon:',
      ...(config.postgres ? { postgres: config.postgres } : {}),
      runtime: {
        ...parts.options,
        agents: [...(parts.options.agents ?? []), ...served.workflows.flatMap(workflowAgents)],
        engines: [...(parts.options.engines ?? []), ...served.engines],
      },
      logger,
      ...(concurrency === undefined ? {} : { concurrency }),
      ...(lockMs === undefined ? {} : { lockMs }),
      ...(stalledCheckMs === undefined ? {} : { stalledCheckMs }),
      ...(heartbeatMs === undefined ? {} : { heartbeatMs }),
      ...(ttlMs === undefined ? {} : { ttlMs }),
    };
  } catch (err) {
    if (err instanceof ServeConfigError || err instanceof RangeError || err instanceof TypeError)
      return fail(2, err.message);
    throw err;
  }
  let worker: FleetWorker;
  try {
    worker = await FleetWorker.start(workerOptions);
  } catch (err) {
    await closeParts();
    if (err instanceof RangeError || err instanceof TypeError) return fail(2, err.message);
    return fail(1, `cannot start: ${(err as Error).message}`);
  }
  io.stdout.write(
    `axon worker: replica ${worker.replicaId} of pool ${worker.poolId} [${(workerOptions.tags ?? []).join(', ')}] on ${workerOptions.cluster ? `the Redis Cluster at ${[workerOptions.cluster].flat().join(',')}` : (workerOptions.redis ?? '')}${workerOptions.postgres ? `, records in ${worker.records}` : ''}, taking steps\n`,
  );
  await aborted(options.signal);
  io.stdout.write(`axon worker: stopping (finishing steps for up to ${graceMs} ms)\n`);
  const report = await worker.stop(graceMs);
  io.stdout.write(
    `axon worker: stopped (${report.finished} steps finished, ${report.handedBack} handed back)\n`,
  );
  return 0;
}
