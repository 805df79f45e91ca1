/**
 * @module The worker-thread pool of a runtime: piscina, hosting `worker-entry`, sized and
 * limited by {@link WorkerPoolOptions}.
 *
 * TypeScript: a worker thread starts with Node's own loader, which cannot load `.ts`, and on
 * Node 20 a TypeScript loader given to the host (`node --import tsx`) does not reach a
 * worker's `import()`. With `typescript: true` each thread registers tsx's ESM loader
 * itself before anything else (`--import` of a one-line module calling tsx's `register()`),
 * so `.ts` agent modules load as they do on the host, in one module graph. It is on by
 * default when axon itself runs from its TypeScript sources (tests, development), and needs
 * `tsx` installed. Compiled JavaScript needs nothing.
 */
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { MessagePort, ResourceLimits } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { DEFAULT_MAX_DEPTH } from '../supervisors/depth-limit.js';
import type { WorkerOutcome, WorkerTask } from './worker-protocol.js';

/** Options of the worker pool (`createRuntime({ workers })`). */
export interface WorkerPoolOptions {
  /**
   * Threads kept alive while idle; default 1. At least one: piscina replaces a terminated
   * or crashed thread only up to this number, and steps already queued wait for a thread.
   */
  readonly minThreads?: number;
  /**
   * Threads at most; default the machine's available parallelism, and at least the default
   * delegation depth (5). A step has its thread to itself (piscina runs a cancellable task
   * alone), and a worker step that delegates to another worker agent holds its thread while
   * it waits: a chain of nested worker delegations needs a thread per level, or its
   * innermost step waits for one until a timeout ends the chain.
   */
  readonly maxThreads?: number;
  /** An idle thread above `minThreads` exits after this long; default 30 000 ms. */
  readonly idleTimeoutMs?: number;
  /** Steps waiting for a thread at most; past it a step fails with `QUEUE_FULL`. Default 1 000. */
  readonly maxQueue?: number;
  /** Heap and stack limits of each thread; a thread past them dies and is replaced. */
  readonly resourceLimits?: ResourceLimits;
  /** Node options of each thread; default the host's. */
  readonly execArgv?: readonly string[];
  /**
   * Load TypeScript agent modules in the threads through tsx (which must be installed).
   * Default: true when axon runs from its TypeScript sources.
   */
  readonly typescript?: boolean;
  /** How long a cancelled step's thread has to stop by itself before it is terminated; default 1 000 ms. */
  readonly cancelGraceMs?: number;
}

/** Defaults of {@link WorkerPoolOptions}. */
export const WORKER_POOL_DEFAULTS = {
  minThreads: 1,
  idleTimeoutMs: 30_000,
  maxQueue: 1_000,
  cancelGraceMs: 1_000,
} as const;

/** True when this module was loaded from TypeScript sources (no build). */
const FROM_SOURCES = import.meta.url.endsWith('.ts');

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

/** A piscina pool running worker-placed steps. */
export class WorkerPool {
  readonly cancelGraceMs: number;
  readonly #piscina: Piscina;

  constructor(options: WorkerPoolOptions = {}) {
    const maxThreads = options.maxThreads ?? Math.max(availableParallelism(), DEFAULT_MAX_DEPTH);
    const minThreads = Math.min(options.minThreads ?? WORKER_POOL_DEFAULTS.minThreads, maxThreads);
    for (const [key, value] of Object.entries({ maxThreads, minThreads })) {
      if (!(Number.isInteger(value) && value >= 1)) {
        throw new RangeError(`workers.${key} must be a whole number >= 1, got ${value}`);
      }
    }
    this.cancelGraceMs = options.cancelGraceMs ?? WORKER_POOL_DEFAULTS.cancelGraceMs;
    const entry = new URL(`./worker-entry${FROM_SOURCES ? '.ts' : '.js'}`, import.meta.url);
    this.#piscina = new Piscina({
      filename: fileURLToPath(entry),
      minThreads,
      maxThreads,
      idleTimeout: options.idleTimeoutMs ?? WORKER_POOL_DEFAULTS.idleTimeoutMs,
      maxQueue: options.maxQueue ?? WORKER_POOL_DEFAULTS.maxQueue,
      execArgv: [
        ...(options.execArgv ?? process.execArgv),
        ...((options.typescript ?? FROM_SOURCES) ? typescriptLoaderArgv() : []),
      ],
      ...(options.resourceLimits ? { resourceLimits: options.resourceLimits } : {}),
    });
  }

  /** Threads running now. */
  get threads(): number {
    return this.#piscina.threads.length;
  }

  /** Steps waiting for a thread. */
  get queued(): number {
    return this.#piscina.queueSize;
  }

  /**
   * Runs `task` on a thread, transferring its ports. Rejects only when the thread died or
   * `signal` aborted the task (which terminates the thread; the pool replaces it).
   */
  run(task: WorkerTask, signal: AbortSignal): Promise<WorkerOutcome> {
    const transferList: MessagePort[] = [task.events, task.calls];
    return this.#piscina.run(task, { transferList, signal }) as Promise<WorkerOutcome>;
  }

  /** Stops every thread; steps still running fail. */
  async destroy(): Promise<void> {
    await this.#piscina.destroy();
  }
}
