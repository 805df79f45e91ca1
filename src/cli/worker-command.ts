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
import { reachBackends } from './serve/reach-backends.js';
import { shownRedisUrl, type RedisConfig } from './serve/redis-config.js';
import { loadServeConfig, type ServeConfig, type ServeEnv } from './serve/serve-config.js';
import { isCliError } from './cli-error.js';
import { EXIT } from './exit-codes.js';
import { servedWorkflows } from './serve/served-workflows.js';
import { workflowAgents } from '../workflows/turn-agent.js';
import { EXAMPLE_DURABLE_AGENTS } from '../../examples/durable-agents/index.js';
import { loadDurableAgents } from './serve/served-durable.js';
import { withCode } from './serve/served-code.js';

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
  /** `--connect-timeout-ms <n>`: how long start-up waits for Redis and PostgreSQL. */
  readonly connectTimeoutMs?: string | undefined;
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

/** The fleet's Redis when none is named: the local one. */
const DEFAULT_REDIS = {
  url: 'redis://127.0.0.1:6379',
  cluster: null,
  prefix: 'axon:',
  source: 'the default: --redis names another',
} as const satisfies RedisConfig;

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
 * 0. Resolves 2 for bad flags or configuration, or a Redis or PostgreSQL that does not answer
 * within `connect_timeout_ms` or refuses it (one line naming it, its URL with the password
 * masked, and why); 1 when it cannot start otherwise; 130 when the signal comes before it
 * takes steps.
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
  let config: ServeConfig;
  let declared: Record<string, unknown>;
  let timings: Record<
    'concurrency' | 'lockMs' | 'stalledCheckMs' | 'heartbeatMs' | 'ttlMs',
    number | undefined
  >;
  try {
    config = loadServeConfig({
      flags: {
        config: flags.config,
        redis: flags.redis,
        redisCluster: flags.redisCluster,
        postgres: flags.postgres,
        connectTimeoutMs: flags.connectTimeoutMs,
      },
      ...(options.env ? { env: options.env } : {}),
      ...(options.cwd ? { cwd: options.cwd } : {}),
    });
    // At AXON_LOG_LEVEL, default warn: info says which steps it takes, what it hands back.
    logger = createCliLogger(io.stderr, env);
    const vram = positive('vram-mb', flags.vramMb);
    const features = list(flags.features);
    declared = {
      ...(vram === undefined ? {} : { vram_mb: vram }),
      ...(features.length === 0 ? {} : { features }),
    };
    timings = {
      concurrency: positive('concurrency', flags.concurrency),
      lockMs: positive('lock-ms', flags.lockMs),
      stalledCheckMs: positive('stalled-ms', flags.stalledMs),
      heartbeatMs: positive('heartbeat-ms', flags.heartbeatMs),
      ttlMs: positive('ttl-ms', flags.ttlMs),
    };
    graceMs = positive('grace-ms', flags.graceMs) ?? 30_000;
  } catch (err) {
    if (err instanceof ServeConfigError || err instanceof RangeError || err instanceof TypeError)
      return fail(2, err.message);
    throw err;
  }
  // Before anything is made: its Redis (the default one if none is named) and PostgreSQL
  // answer, within the wait.
  try {
    const reached = await reachBackends(
      { redis: config.redis ?? DEFAULT_REDIS, postgres: config.postgres },
      { timeoutMs: config.connectTimeoutMs, signal: options.signal },
    );
    if (reached.stopped) {
      const reason: unknown = options.signal.reason;
      io.stdout.write(
        `axon worker: ${typeof reason === 'string' ? reason : 'stop'}: stopped before it took steps\n`,
      );
      return EXIT.INTERRUPTED;
    }
    // The replica opens its own: this one only proved that the store opens.
    await reached.store?.close();
  } catch (err) {
    if (isCliError(err)) return fail(err.exitCode, err.message);
    throw err;
  }
  try {
    const { concurrency, lockMs, stalledCheckMs, heartbeatMs, ttlMs } = timings;
    // The project's agents, tools and workflows (`code:`), as `axon serve` has them.
    config = await withCode(config);
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
        : { redis: config.redis?.url ?? DEFAULT_REDIS.url }),
      prefix: config.redis?.prefix ?? DEFAULT_REDIS.prefix,
      ...(config.postgres
        ? { postgres: { url: config.postgres.url, schema: config.postgres.schema } }
        : {}),
      runtime: {
        ...parts.options,
        agents: [
          ...(parts.options.agents ?? []),
          ...served.workflows.flatMap(workflowAgents),
          // API.md's durable agents, which `axon serve --redis` queues on the pools: their
          // actors run here (not with records in PostgreSQL, where leases fence nothing).
          ...(config.postgres ? [] : EXAMPLE_DURABLE_AGENTS),
          ...(await loadDurableAgents(config.durableAgents)),
        ],
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
    `axon worker: replica ${worker.replicaId} of pool ${worker.poolId} [${(workerOptions.tags ?? []).join(', ')}] on ${workerOptions.cluster ? `the Redis Cluster at ${[workerOptions.cluster].flat().join(',')}` : shownRedisUrl(workerOptions.redis ?? DEFAULT_REDIS.url)}${workerOptions.postgres ? `, records in ${worker.records}` : ''}, taking steps\n`,
  );
  await aborted(options.signal);
  io.stdout.write(`axon worker: stopping (finishing steps for up to ${graceMs} ms)\n`);
  const report = await worker.stop(graceMs);
  io.stdout.write(
    `axon worker: stopped (${report.finished} steps finished, ${report.handedBack} handed back)\n`,
  );
  return 0;
}
