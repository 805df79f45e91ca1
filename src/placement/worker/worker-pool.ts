/**
 * @module The worker-thread pool of a runtime, sized and limited by
 * {@link WorkerPoolOptions}. piscina starts, limits and replaces the threads; each thread
 * runs one long-lived session (`worker-entry`), and the pool sends it steps on its link,
 * one at a time, so a step costs no pool task of its own (see `worker-protocol.ts`).
 *
 * TypeScript: a worker thread starts with Node's own loader, which cannot load `.ts`, and on
 * Node 20 a TypeScript loader given to the host (`node --import tsx`) does not reach a
 * worker's `import()`. With `typescript: true` each thread registers tsx's ESM loader
 * itself before anything else (`--import` of a one-line module calling tsx's `register()`),
 * so `.ts` agent modules load as they do on the host, in one module graph. It is on by
 * default when axon itself runs from its TypeScript sources (tests, development), and needs
 * `tsx` installed. Compiled JavaScript needs nothing.
 */
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { BroadcastChannel, MessageChannel, type MessagePort } from 'node:worker_threads';
import * as Comlink from 'comlink';
import { Piscina } from 'piscina';
import { systemClock, type Clock } from '../../context/clock.js';
import { QueueFullError } from '../../errors/queue-full-error.js';
import type { ErrorPayload } from '../../errors/to-error-payload.js';
import { RestartSupervisor } from '../../supervisors/restart-supervisor.js';
import { rpcEndpoint } from './link-endpoint.js';
import {
  FROM_SOURCES,
  maxThreadsOf,
  threadExecArgv,
  WORKER_POOL_DEFAULTS,
  type WorkerPoolOptions,
} from './worker-pool-options.js';
import type {
  ControlMessage,
  HostCalls,
  HostReply,
  LinkDown,
  LinkUp,
  SessionTask,
  StreamItem,
  WireAgentResult,
  WireToolResult,
  WorkerOutcome,
  WorkerTask,
} from './worker-protocol.js';

export { WORKER_POOL_DEFAULTS, type WorkerPoolOptions } from './worker-pool-options.js';

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
  chat(
    call: Parameters<HostCalls['chat']>[1],
    options: Parameters<HostCalls['chat']>[2],
  ): ReturnType<HostCalls['chat']>;
  fact(fact: Parameters<HostCalls['fact']>[1]): ReturnType<HostCalls['fact']>;
  fs(request: Parameters<HostCalls['fs']>[1]): ReturnType<HostCalls['fs']>;
  memory(op: Parameters<HostCalls['memory']>[1], arg: unknown): ReturnType<HostCalls['memory']>;
}

/** A step on the pool: its task, its endpoint, the session running it, how it ends. */
class RunningStep {
  readonly task: WorkerTask;
  readonly endpoint: StepEndpoint;
  /** The session it was sent to; `null` while it waits for one. */
  session: Session | null = null;
  /** Cancelled before its thread started it: it must not start anywhere. */
  aborted = false;
  /** Its context was cancelled: if no thread has it yet, none will. */
  cancelled = false;
  /** Asked back from the thread it waits in (`revoke`), with no answer yet. */
  revoking = false;
  readonly done: Promise<WorkerOutcome>;
  resolve!: (outcome: WorkerOutcome) => void;
  reject!: (err: unknown) => void;

  constructor(task: WorkerTask, endpoint: StepEndpoint) {
    this.task = task;
    this.endpoint = endpoint;
    this.done = new Promise<WorkerOutcome>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }
}

/** A thread's session: its link, and the step it runs (one at a time). */
interface Session {
  readonly port: MessagePort;
  /** Emitting `'abort'` terminates the thread (piscina); its session then ends. */
  readonly abort: EventEmitter;
  /** The steps sent to it, oldest first: the first runs, the others wait in the thread. */
  steps: RunningStep[];
  /** Ends the session if it stays idle (its thread may then idle out). */
  idleTimer: NodeJS.Timeout | null;
  /** When its first step began running (`performance.now()`, as the host sees it). */
  headSince: number;
}

/**
 * How long a thread's current step runs before an idle thread takes back a step waiting
 * behind it: shorter steps end before a step could move (a round trip between threads).
 */
const STEAL_AFTER_MS = 1;

/** A step that was cancelled (or its pool closed) before any thread took it. */
class NotStarted extends Error {}

/** True when a step's rejection means no thread ever ran it. */
export function neverStarted(err: unknown): boolean {
  return err instanceof NotStarted;
}

/** A piscina pool running worker-placed steps. */
export class WorkerPool {
  readonly cancelGraceMs: number;
  readonly #piscina: Piscina;
  /** The threads' sessions, each with its link. */
  readonly #sessions = new Set<Session>();
  /** Steps waiting for a session, oldest first. */
  #queue: RunningStep[] = [];
  /** The steps on the pool, waiting or running, by step id. */
  readonly #steps = new Map<string, RunningStep>();
  /** The name of the pool's control channel (cancels), which every task carries. */
  readonly controlName = `axon-workers-${randomUUID()}`;
  readonly #maxThreads: number;
  readonly #pipeline: number;
  /** A later look for a step to take back (see `#steal`). */
  #stealTimer: NodeJS.Timeout | null = null;
  readonly #idleTimeoutMs: number;
  readonly #maxQueue: number;
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
    const maxThreads = maxThreadsOf(options);
    const minThreads = Math.min(options.minThreads ?? WORKER_POOL_DEFAULTS.minThreads, maxThreads);
    for (const [key, value] of Object.entries({ maxThreads, minThreads })) {
      if (!(Number.isInteger(value) && value >= 1)) {
        throw new RangeError(`workers.${key} must be a whole number >= 1, got ${value}`);
      }
    }
    this.cancelGraceMs = options.cancelGraceMs ?? WORKER_POOL_DEFAULTS.cancelGraceMs;
    this.#maxThreads = maxThreads;
    this.#pipeline = options.pipeline ?? WORKER_POOL_DEFAULTS.pipeline;
    if (!(Number.isInteger(this.#pipeline) && this.#pipeline >= 1)) {
      throw new RangeError(`workers.pipeline must be a whole number >= 1, got ${this.#pipeline}`);
    }
    this.#idleTimeoutMs = options.idleTimeoutMs ?? WORKER_POOL_DEFAULTS.idleTimeoutMs;
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

  /**
   * Runs a step on a thread: it goes to an idle session's link (a new session starts while
   * there are fewer than `maxThreads`), or waits for one. Its stream items go to
   * `step.onItems` in order (credit goes back once that resolves), and its calls to the
   * step's `delegate` / `callTool`. Resolves with the step's outcome, which comes after all
   * its items on the same link. Rejects when its thread died, when `abort` emitted
   * `'abort'` (a running step's thread is terminated; the pool replaces it), or when the
   * queue is full ({@link QueueFullError}).
   */
  async runStep(task: WorkerTask, step: StepEndpoint, abort: EventEmitter): Promise<WorkerOutcome> {
    if (this.#waiting() >= this.#maxQueue && !this.#hasIdle()) {
      throw new QueueFullError(
        `the worker pool's queue is full (${this.#maxQueue} waiting): agent "${task.agent}" was not run`,
        { details: { pool: this.target, max_queue: this.#maxQueue } },
      );
    }
    const running = new RunningStep(task, step);
    this.#steps.set(task.stepId, running);
    const onAbort = (): void => {
      this.#abort(running);
    };
    abort.once('abort', onAbort);
    this.#queue.push(running);
    this.#dispatch();
    try {
      return await running.done;
    } finally {
      abort.off('abort', onAbort);
      // A step resumed after an approval may run here again under the same id meanwhile.
      if (this.#steps.get(task.stepId) === running) this.#steps.delete(task.stepId);
    }
  }

  /** Asks the thread running `stepId`, whichever it is, to cancel it. */
  cancel(stepId: string, reason: ErrorPayload): void {
    const step = this.#steps.get(stepId);
    if (step) {
      step.cancelled = true;
      // Waiting in a thread behind another step: take it back, so it ends now.
      const session = step.session;
      if (session && session.steps[0] !== step && !step.revoking) this.#askBack(session, step);
    }
    const message: ControlMessage = { t: 'cancel', step: stepId, reason };
    this.#control.postMessage(message);
  }

  /** Steps waiting for a thread. */
  get queued(): number {
    return this.#waiting();
  }

  /**
   * A session for the next step: an idle one; else a new one while there are fewer than
   * `maxThreads`; else one whose pipeline has room (its thread takes the step as soon as it
   * finishes the current one, without sleeping in between).
   */
  #pick(): Session | null {
    let roomy: Session | null = null;
    for (const session of this.#sessions) {
      if (session.steps.length === 0) return session;
      if (
        session.steps.length < this.#pipeline &&
        (roomy === null || session.steps.length < roomy.steps.length)
      ) {
        roomy = session;
      }
    }
    if (this.#canGrow()) return this.#startSession();
    return roomy;
  }

  /** A session with nothing to run, or room to start one. */
  #hasIdle(): boolean {
    if (this.#canGrow()) return true;
    for (const session of this.#sessions) if (session.steps.length === 0) return true;
    return false;
  }

  /** Steps waiting for a thread: here, or in a thread's pipeline behind its running step. */
  #waiting(): number {
    let n = this.#queue.length;
    for (const session of this.#sessions) n += Math.max(0, session.steps.length - 1);
    return n;
  }

  #canGrow(): boolean {
    return !this.#closed && this.#sessions.size < this.#maxThreads;
  }

  /** Hands waiting steps to sessions, starting sessions up to `maxThreads`. */
  #dispatch(): void {
    while (this.#queue.length > 0) {
      const session = this.#pick();
      if (!session) return;
      const step = this.#queue.shift() as RunningStep;
      if (step.cancelled) {
        step.reject(new NotStarted('cancelled before a thread took it'));
        continue;
      }
      if (session.idleTimer) clearTimeout(session.idleTimer);
      session.idleTimer = null;
      if (session.steps.length === 0) session.headSince = performance.now();
      session.steps.push(step);
      step.session = session;
      const message: LinkDown = { t: 'step', task: step.task };
      session.port.postMessage(message);
    }
  }

  /**
   * A cancelled step that did not stop: terminate its thread if it is running there; if it
   * waits in a thread's pipeline, it will not start (the thread heard the cancel); if it
   * waits here, take it off the queue.
   */
  #abort(step: RunningStep): void {
    const session = step.session;
    if (session) {
      if (session.steps[0] === step) session.abort.emit('abort');
      else step.aborted = true;
      return;
    }
    this.#queue = this.#queue.filter((s) => s !== step);
    step.reject(new NotStarted('cancelled before a thread took it'));
  }

  /** A new session on a new link; piscina starts (or reuses) a thread for it. */
  #startSession(): Session {
    const { port1, port2 } = new MessageChannel();
    const session: Session = {
      port: port1,
      abort: new EventEmitter(),
      steps: [],
      idleTimer: null,
      headSince: 0,
    };
    port1.on('message', (message: LinkUp) => {
      if (message.t === 'items') {
        const step = this.#steps.get(message.step);
        if (!step) return;
        void step.endpoint.onItems(message.items).then(() => {
          const credit: LinkDown = { t: 'credit', step: message.step, n: message.items.length };
          port1.postMessage(credit);
        });
      } else if (message.t === 'result') {
        // Results come in the order the steps were sent.
        const step = session.steps[0];
        if (step?.task.stepId === message.step) {
          session.steps.shift();
          session.headSince = performance.now();
          step.resolve(message.outcome);
        }
        this.#dispatch();
        if (session.steps.length === 0) this.#steal();
        this.#idleOut(session);
      } else if (message.t === 'revoked') {
        this.#revoked(session, message.step);
      }
    });
    const steps = this.#steps;
    const lookup = (id: string): StepEndpoint => {
      const step = steps.get(id);
      if (!step) throw new Error(`no step ${id} runs on this pool`);
      return step.endpoint;
    };
    const hostCalls: HostCalls = {
      delegate: (id, agent, input, narrowing) => lookup(id).delegate(agent, input, narrowing),
      callTool: (id, name, args) => lookup(id).callTool(name, args),
      chat: (id, call, options) => lookup(id).chat(call, options),
      fact: (id, fact) => lookup(id).fact(fact),
      fs: (id, request) => lookup(id).fs(request),
      memory: (id, op, arg) => lookup(id).memory(op, arg),
    };
    Comlink.expose(hostCalls, rpcEndpoint(port1));
    port1.unref();
    this.#sessions.add(session);
    const task: SessionTask = { link: port2, control: this.controlName };
    this.#piscina.run(task, { transferList: [port2], signal: session.abort }).then(
      () => {
        this.#endSession(session, null);
      },
      (err: unknown) => {
        this.#endSession(session, err);
      },
    );
    return session;
  }

  /**
   * A thread went idle with nothing queued here: ask the busiest thread for the last step sent
   * ahead to it, if it has not started, so no step waits behind a long one while a thread is
   * free. The answer (`revoked`) puts it back at the front of the queue; a step that started
   * meanwhile just runs where it is.
   */
  #steal(): void {
    if (this.#queue.length > 0) return;
    let busiest: Session | null = null;
    for (const session of this.#sessions) {
      if (session.steps.length > 1 && session.steps.length > (busiest?.steps.length ?? 1)) {
        busiest = session;
      }
    }
    if (!busiest) return;
    const running = performance.now() - busiest.headSince;
    if (running < STEAL_AFTER_MS) {
      // Look again when it has run that long, if a thread is still idle then.
      this.#stealTimer ??= setTimeout(() => {
        this.#stealTimer = null;
        for (const session of this.#sessions) {
          if (session.steps.length === 0) {
            this.#steal();
            return;
          }
        }
      }, STEAL_AFTER_MS - running);
      this.#stealTimer.unref();
      return;
    }
    for (let i = busiest.steps.length - 1; i >= 1; i--) {
      const step = busiest.steps[i] as RunningStep;
      if (step.revoking || step.aborted) continue;
      this.#askBack(busiest, step);
      return;
    }
  }

  /** Asks `session`'s thread for `step` back; it answers `revoked` if it has not started it. */
  #askBack(session: Session, step: RunningStep): void {
    step.revoking = true;
    const message: LinkDown = { t: 'revoke', step: step.task.stepId };
    session.port.postMessage(message);
  }

  /** `session`'s thread gave `stepId` back before starting it: it goes to the next free one. */
  #revoked(session: Session, stepId: string): void {
    const at = session.steps.findIndex((s) => s.task.stepId === stepId && s.revoking);
    // Index 0 runs: a thread gives back only what it has not started.
    if (at < 1) return;
    const [step] = session.steps.splice(at, 1) as [RunningStep];
    step.session = null;
    step.revoking = false;
    if (step.aborted || step.cancelled) {
      step.reject(new NotStarted('cancelled before a thread started it'));
      return;
    }
    this.#queue.unshift(step);
    this.#dispatch();
  }

  /** If `session` got no step, ends it after `idleTimeoutMs`, so its thread can idle out. */
  #idleOut(session: Session): void {
    if (session.steps.length > 0) return;
    session.idleTimer = setTimeout(() => {
      if (session.steps.length === 0) session.port.close();
    }, this.#idleTimeoutMs);
    session.idleTimer.unref();
  }

  /** A session ended: its thread died (`err`) or its link was closed. */
  #endSession(session: Session, err: unknown): void {
    this.#sessions.delete(session);
    if (session.idleTimer) clearTimeout(session.idleTimer);
    session.port.close();
    const [running, ...waiting] = session.steps;
    session.steps = [];
    running?.reject(err ?? new Error('the worker session ended'));
    // The steps behind it never started: back to the front of the queue, unless cancelled.
    const again: RunningStep[] = [];
    for (const step of waiting) {
      step.session = null;
      step.revoking = false;
      if (step.aborted) step.reject(new NotStarted('cancelled before a thread started it'));
      else again.push(step);
    }
    if (this.#closed) {
      for (const step of again) step.reject(new NotStarted('the pool closed'));
    } else {
      this.#queue = [...again, ...this.#queue];
      this.#dispatch();
    }
  }

  /** True once {@link destroy} began: steps still running end because of it. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Stops every thread; steps still running fail. */
  async destroy(): Promise<void> {
    this.#closed = true;
    if (this.#stealTimer) clearTimeout(this.#stealTimer);
    const waiting = this.#queue;
    this.#queue = [];
    for (const step of waiting) step.reject(new NotStarted('the pool closed'));
    await this.#piscina.destroy();
    for (const session of this.#sessions) session.port.close();
    this.#sessions.clear();
    this.#control.close();
  }
}
