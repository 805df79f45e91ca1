/**
 * @module The worker pool's options and their defaults, and how its threads are started:
 * with the TypeScript loader when axon runs from its sources (see `worker-pool.ts`).
 */
import { availableParallelism } from 'node:os';
import type { ResourceLimits } from 'node:worker_threads';
import { DEFAULT_MAX_DEPTH } from '../../supervisors/depth-limit.js';
import type { RestartOptions } from '../../supervisors/restart-supervisor.js';

/** Options of the worker pool (`createRuntime({ workers })`). */
export interface WorkerPoolOptions {
  /**
   * Threads kept alive while idle; default 1 (piscina keeps at least this many threads
   * started).
   */
  readonly minThreads?: number;
  /**
   * Threads at most; default the machine's available parallelism, and at least the default
   * delegation depth (5). A step has its thread to itself (a session runs one step at a
   * time), and a worker step that delegates to another worker agent holds its thread while
   * it waits: a chain of nested worker delegations needs a thread per level, or its
   * innermost step waits for one until a timeout ends the chain.
   */
  readonly maxThreads?: number;
  /**
   * A thread's session ends after this long without a step, and an idle thread above
   * `minThreads` exits after this long again; default 30 000 ms.
   */
  readonly idleTimeoutMs?: number;
  /** Steps waiting for a thread at most; past it a step fails with `QUEUE_FULL`. Default 1 000. */
  readonly maxQueue?: number;
  /** Heap and stack limits of each thread; a thread past them dies and is replaced. */
  readonly resourceLimits?: ResourceLimits;
  /**
   * Node options of each thread. Default: the host's, as Node passes them on (options a
   * thread cannot take, such as `--expose-gc`, are left out); with the TypeScript loader,
   * only the loader.
   */
  readonly execArgv?: readonly string[];
  /**
   * Load TypeScript agent modules in the threads through tsx (which must be installed).
   * Always on when axon runs from its TypeScript sources, whose own worker entry needs it.
   */
  readonly typescript?: boolean;
  /** Backoff after a thread died and the restart intensity past which the pool is degraded. */
  readonly restart?: RestartOptions;
  /**
   * Steps a thread holds at once: the one it runs and those sent ahead, so it goes from one to
   * the next without sleeping and being woken per step. Default 8. A step sent ahead does not
   * stay behind a long one while another thread is free: once the step in front has run
   * 1 ms, an idle thread takes it back (if it has not started), and a cancelled one is taken
   * back at once.
   */
  readonly pipeline?: number;
  /** How long a cancelled step's thread has to stop by itself before it is terminated; default 1 000 ms. */
  readonly cancelGraceMs?: number;
}

/** Defaults of {@link WorkerPoolOptions}. */
export const WORKER_POOL_DEFAULTS = {
  minThreads: 1,
  idleTimeoutMs: 30_000,
  maxQueue: 1_000,
  cancelGraceMs: 1_000,
  pipeline: 8,
} as const;

/** True when this module was loaded from TypeScript sources (no build). */
export const FROM_SOURCES = import.meta.url.endsWith('.ts');

/**
 * `--import` of a one-line module that registers tsx's ESM loader in the thread. Throws a
 * clear error when tsx is not installed.
 */
function typescriptLoaderArgv(): string[] {
  let api: string;
  try {
    api = import.meta.resolve('tsx/esm/api');
  } catch (err) {
    throw new Error('workers.typescript needs the tsx package: npm install --save-dev tsx', {
      cause: err,
    });
  }
  const source = `import { register } from ${JSON.stringify(api)}; register();`;
  return ['--import', `data:text/javascript,${encodeURIComponent(source)}`];
}

/**
 * The `execArgv` option of the threads, if any. Given explicitly, Node checks every option
 * against what a thread may take (and throws for `--expose-gc` and the like), so the host's
 * own options are passed on only by leaving it out.
 */
export function threadExecArgv(options: WorkerPoolOptions): { execArgv?: string[] } {
  // From sources the pool's own entry is TypeScript: the loader is needed regardless.
  const loader = FROM_SOURCES || options.typescript === true ? typescriptLoaderArgv() : [];
  if (options.execArgv === undefined && loader.length === 0) return {};
  return { execArgv: [...(options.execArgv ?? []), ...loader] };
}

/**
 * The most threads a pool with `options` starts: `maxThreads`, else the cores, and at least
 * the delegation depth limit (a chain of nested worker delegations holds a thread a level).
 */
export function maxThreadsOf(options: WorkerPoolOptions): number {
  return options.maxThreads ?? Math.max(availableParallelism(), DEFAULT_MAX_DEPTH);
}
