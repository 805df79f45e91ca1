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
import { randomUUID } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import {
  BroadcastChannel,
  MessageChannel,
  type MessagePort,
  type ResourceLimits,
} from 'node:worker_threads';
import * as Comlink from 'comlink';
import { Piscina } from 'piscina';
import { systemClock, type Clock } from '../context/clock.js';
import { QueueFullError } from '../errors/queue-full-error.js';
import type { ErrorPayload } from '../errors/to-error-payload.js';
import { RestartSupervisor, type RestartOptions } from '../supervisors/restart-supervisor.js';
import { rpcEndpoint } from './link-endpoint.js';
import { DEFAULT_MAX_DEPTH } from '../supervisors/depth-limit.js';
import type {
  ControlMessage,
  HostCalls,
  HostReply,
  LinkDown,
  LinkUp,
  NoLink,
  StreamItem,
  WireAgentResult,
  WireToolResult,
  WorkerOutcome,
  WorkerTask,
} from './worker-protocol.js';

/** What the pool needs from a step running on it. */
export interface StepEndpoint {
  /** The step's items, in order; credit goes back to the thread once this resolves. */
  onItems(items: readonly StreamItem[]): Promise<void>;
  /** The step's calls to the host, on the step's own context. */
  delegate(
    agent: string,
    input: Parameters<HostCalls['delegate']>[2],
    narrowing: Parameters<HostCalls['delegate']>[3],
  ): Promise<HostReply<WireAgentResult>>;
  callTool(name: string, args: unknown): Promise<HostReply<WireToolResult>>;
}

/** A step on the pool: its endpoint, and how much of its stream has arrived. */
class RunningStep {
  readonly endpoint: StepEndpoint;
  #received = 0;
  #expected = Infinity;
  #allReceived: (() => void) | null = null;

  constructor(endpoint: StepEndpoint) {
    this.endpoint = endpoint;
  }

  /** Hands `items` to the step; resolves when it has taken them. */
  async deliver(items: readonly StreamItem[]): Promise<void> {
    this.#received += items.length;
    try {
      await this.endpoint.onItems(items);
    } finally {
      if (this.#received >= this.#expected) this.#allReceived?.();
    }
  }

  /** `null` once `sent` items have arrived, else a promise of their arrival. */
  allOf(sent: number): Promise<void> | null {
    this.#expected = sent;
    if (this.#received >= sent) return null;
    return new Promise<void>((resolve) => (this.#allReceived = resolve));
  }
}

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

/**
 * The `execArgv` option of the threads, if any. Given explicitly, Node checks every option
 * against what a thread may take (and throws for `--expose-gc` and the like), so the host's
 * own options are passed on only by leaving it out.
 */
function threadExecArgv(options: WorkerPoolOptions): { execArgv?: string[] } {
  // From sources the pool's own entry is TypeScript: the loader is needed regardless.
  const loader = FROM_SOURCES || options.typescript === true ? typescriptLoaderArgv() : [];
  if (options.execArgv === undefined && loader.length === 0) return {};
  return { execArgv: [...(options.execArgv ?? []), ...loader] };
}

/** A piscina pool running worker-placed steps. */
export class WorkerPool {
  readonly cancelGraceMs: number;
  readonly #piscina: Piscina;
  /** The host ends of the threads' links. */
  readonly #links = new Set<MessagePort>();
  /** The steps running on the pool, by step id. */
  readonly #steps = new Map<string, RunningStep>();
  /** The name of the pool's control channel (cancels), which every task carries. */
  readonly controlName = `axon-workers-${randomUUID()}`;
  readonly #maxThreads: number;
  readonly #maxQueue: number;
  /** Steps submitted and not yet ended (running or waiting for a thread). */
  #inFlight = 0;
  #closed = false;
  readonly #control = new BroadcastChannel(this.controlName);

  readonly #onError: (err: unknown) => void;

  /** Restarts of this pool's threads: backoff, and whether the pool is degraded. */
  readonly supervisor: RestartSupervisor;
  /** The pool's name in `escalation` targets. */
  readonly target: string;

  constructor(
    options: WorkerPoolOptions = {},
    onError: (err: unknown) => void = () => undefined,
    clock: Clock = systemClock,
    name = 'workers',
  ) {
    this.#onError = onError;
    this.supervisor = new RestartSupervisor(clock, options.restart);
    this.target = `pool:${name}`;
    const maxThreads = options.maxThreads ?? Math.max(availableParallelism(), DEFAULT_MAX_DEPTH);
    const minThreads = Math.min(options.minThreads ?? WORKER_POOL_DEFAULTS.minThreads, maxThreads);
    for (const [key, value] of Object.entries({ maxThreads, minThreads })) {
      if (!(Number.isInteger(value) && value >= 1)) {
        throw new RangeError(`workers.${key} must be a whole number >= 1, got ${value}`);
      }
    }
    this.cancelGraceMs = options.cancelGraceMs ?? WORKER_POOL_DEFAULTS.cancelGraceMs;
    this.#maxThreads = maxThreads;
    this.#maxQueue = options.maxQueue ?? WORKER_POOL_DEFAULTS.maxQueue;
    if (!(Number.isInteger(this.#maxQueue) && this.#maxQueue >= 0)) {
      throw new RangeError(`workers.maxQueue must be a whole number >= 0, got ${this.#maxQueue}`);
    }
    const entry = new URL(`./worker-entry${FROM_SOURCES ? '.ts' : '.js'}`, import.meta.url);
    this.#piscina = new Piscina({
      filename: fileURLToPath(entry),
      minThreads,
      maxThreads,
      idleTimeout: options.idleTimeoutMs ?? WORKER_POOL_DEFAULTS.idleTimeoutMs,
      maxQueue: 'auto',
      ...threadExecArgv(options),
      ...(options.resourceLimits ? { resourceLimits: options.resourceLimits } : {}),
    });
    // A thread that fails to start (a bad execArgv, a missing loader) is reported here;
    // without a listener the 'error' event would crash the host. Its steps fail on their own.
    this.#piscina.on('error', (err: unknown) => {
      this.#onError(err);
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
   * Runs a step's task on a thread. Its stream items go to `step.onItems` in order (credit
   * goes back once that resolves), and its calls to `step.calls`. Resolves once the task has
   * ended and every item it sent has been delivered. Rejects only when the thread died or
   * `abort` emitted `'abort'` (which terminates the thread; the pool replaces it). An
   * EventEmitter rather than an AbortController: piscina takes either, and the emitter costs
   * a fiftieth of the controller per step.
   */
  async runStep(task: WorkerTask, step: StepEndpoint, abort: EventEmitter): Promise<WorkerOutcome> {
    // piscina does not hold its queue bound for cancellable tasks: the pool holds it.
    if (this.#inFlight >= this.#maxThreads + this.#maxQueue) {
      throw new QueueFullError(
        `the worker pool's queue is full (${this.#maxQueue} waiting): agent "${task.agent}" was not run`,
        { details: { pool: this.target, max_queue: this.#maxQueue } },
      );
    }
    this.#inFlight++;
    const running = new RunningStep(step);
    this.#steps.set(task.stepId, running);
    try {
      let result = await this.#run(task, abort);
      if ('noLink' in result) {
        // A thread without a link (new, or a replacement): run it again with one.
        result = await this.#run({ ...task, link: this.#newLink() }, abort);
      }
      if ('noLink' in result) throw new Error('worker thread took no link');
      const rest = running.allOf(result.sent);
      if (rest) await rest;
      return result;
    } finally {
      this.#inFlight--;
      this.#steps.delete(task.stepId);
    }
  }

  /** Asks the thread running `stepId`, whichever it is, to cancel it. */
  cancel(stepId: string, reason: ErrorPayload): void {
    const message: ControlMessage = { t: 'cancel', step: stepId, reason };
    this.#control.postMessage(message);
  }

  #run(task: WorkerTask, abort: EventEmitter): Promise<WorkerOutcome | NoLink> {
    const transferList = task.link ? [task.link] : [];
    return this.#piscina.run(task, { transferList, signal: abort }) as Promise<
      WorkerOutcome | NoLink
    >;
  }

  /** A new link: this end is served here, the other goes to a thread with its next task. */
  #newLink(): MessagePort {
    const { port1, port2 } = new MessageChannel();
    port1.on('message', (message: LinkUp) => {
      if (message.t !== 'items') return;
      const step = this.#steps.get(message.step);
      if (!step) return;
      void step.deliver(message.items).then(() => {
        const credit: LinkDown = { t: 'credit', step: message.step, n: message.items.length };
        port1.postMessage(credit);
      });
    });
    const lookup = (id: string): StepEndpoint => {
      const step = this.#steps.get(id);
      if (!step) throw new Error(`no step ${id} runs on this pool`);
      return step.endpoint;
    };
    const hostCalls: HostCalls = {
      delegate: (id, agent, input, narrowing) => lookup(id).delegate(agent, input, narrowing),
      callTool: (id, name, args) => lookup(id).callTool(name, args),
    };
    Comlink.expose(hostCalls, rpcEndpoint(port1));
    port1.on('close', () => this.#links.delete(port1));
    port1.unref();
    this.#links.add(port1);
    return port2;
  }

  /** True once {@link destroy} began: steps still running end because of it. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Stops every thread; steps still running fail. */
  async destroy(): Promise<void> {
    this.#closed = true;
    await this.#piscina.destroy();
    for (const port of this.#links) port.close();
    this.#links.clear();
    this.#control.close();
  }
}
