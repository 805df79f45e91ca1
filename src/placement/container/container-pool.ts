/**
 * @module The containers of a runtime's container placement. Each container runs
 * `container-entry` and speaks the worker protocol as JSON lines on its link
 * (`container-launch.ts`): a step goes in, its items, host calls and result come out. A
 * container runs one step at a time, for one behaviour (agent or tool, module, export) and one set of mounts, its
 * **key**; it is kept for that key's next step (unless `reuse` is off) and `warm` of them
 * are started ahead for each key asked to be warm. What a container sends is a stranger's:
 * a message about another step, items past its credit, an unknown call or a line too long
 * kills it. A container that dies ends its step with how it died (out of memory, its exit,
 * killed), after it is removed.
 */
import { randomUUID } from 'node:crypto';
import { basename } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { InternalError } from '../../errors/internal-error.js';
import { QueueFullError } from '../../errors/queue-full-error.js';
import { toErrorPayload } from '../../errors/to-error-payload.js';
import type { Logger } from '../../observability/logger.js';
import { containerProgram, type ContainerProgram } from './container-bundle.js';
import { findContainerEngine, type ContainerEngine } from './container-engine.js';
import type { ResolvedContainerOptions } from './container-options.js';
import { assertReadableModule, CONTAINER_MODULE_DIR, type DiedLine } from './container-wire.js';
import { launchKey, removeContainer, startContainer } from './container-launch.js';
import type { ContainerLaunch } from './container-launch.js';
import type { LineLink } from './line-link.js';
import { CALLS, hostCall } from './container-calls.js';
import { ContainerDeathError, deathOf, type ContainerDeath } from './container-death.js';
import { sweepOrphans } from './container-orphans.js';
import type { StepEndpoint } from '../worker/worker-pool.js';
import type { HostCalls, LinkDown, WorkerOutcome, WorkerTask } from '../worker/worker-protocol.js';

export type { ContainerLaunch } from './container-launch.js';

/** Characters of a container's standard error kept (its end). */
const STDERR_TAIL = 8 * 1024;

/** How long a container whose link ended may take to go by itself before it is removed. */
const RETIRE_MS = 10_000;

/** Host calls a container may have unanswered at once; past it, it broke the protocol. */
export const MAX_PENDING_CALLS = 256;

interface Pending {
  readonly task: WorkerTask;
  readonly launch: ContainerLaunch;
  readonly key: string;
  readonly endpoint: StepEndpoint;
  readonly resolve: (outcome: WorkerOutcome) => void;
  readonly reject: (err: unknown) => void;
}

/** One container. */
interface Box {
  readonly name: string;
  readonly key: string;
  readonly child: ChildProcess;
  readonly link: LineLink;
  /** Ends the link: the runner exits, and the engine removes the container (`--rm`). */
  readonly end: () => void;
  /** Let go by {@link end} after its step. */
  ended: boolean;
  step: Pending | null;
  /** Items the step may still send before the host takes some. */
  credit: number;
  ready: boolean;
  died: DiedLine | null;
  stderr: string;
  /** Why axon removes it, when it does. */
  killedFor: ContainerDeath | null;
  exited: boolean;
  readonly gone: Promise<void>;
  idleTimer: NodeJS.Timeout | null;
  /** Its host calls not answered yet (bounded by {@link MAX_PENDING_CALLS}). */
  calls: number;
}

/** The containers of one runtime. */
export class ContainerPool {
  readonly #options: ResolvedContainerOptions;
  readonly #logger: Logger;
  /** This pool's label on its containers (`axon.pool=<id>`). */
  readonly label: string;
  readonly #id: string;
  #seq = 0;
  #engine: Promise<ContainerEngine> | null = null;
  /** Set once `#engine` resolved: the engine, and the container program's files on the host. */
  #engineNow: ContainerEngine | null = null;
  #programNow: ContainerProgram | null = null;
  readonly #boxes = new Set<Box>();
  #queue: Pending[] = [];
  /** Keys kept warm, with what starts one. */
  readonly #warm = new Map<string, ContainerLaunch>();
  #closed = false;

  constructor(options: ResolvedContainerOptions, logger: Logger) {
    this.#options = options;
    this.#logger = logger;
    this.#id = randomUUID().slice(0, 8);
    this.label = `axon.pool=${this.#id}`;
  }

  /** The engine (found once), with the container program bundled. */
  engine(): Promise<ContainerEngine> {
    this.#engine ??= (async () => {
      const [engine, program] = await Promise.all([
        findContainerEngine(this.#options.engine, this.#options.runtime),
        containerProgram(),
      ]);
      this.#engineNow = engine;
      this.#programNow = program;
      await sweepOrphans(engine, this.#logger);
      return engine;
    })();
    this.#engine.catch(() => {
      this.#engine = null;
    });
    return this.#engine;
  }

  /** Containers started and not gone. */
  get containers(): number {
    return this.#boxes.size;
  }

  /**
   * Runs `task` in a container for `launch`: an idle one of its key, else a new one while
   * fewer than `maxContainers` run, else it waits. Resolves with the step's outcome; rejects
   * with {@link ContainerDeathError} (after the container is removed), `QueueFullError`, or
   * the engine's `POOL_UNAVAILABLE`.
   */
  runStep(
    task: WorkerTask,
    launch: ContainerLaunch,
    endpoint: StepEndpoint,
  ): Promise<WorkerOutcome> {
    // Once the engine is found and the module checked, a step goes out in this tick.
    if (this.#engineNow === null || !this.#checked.has(launch.module)) {
      return this.#prepare(launch.module).then(() => this.runStep(task, launch, endpoint));
    }
    if (this.#closed) return Promise.reject(this.#closedError('', null));
    if (this.#queue.length >= this.#options.maxQueue) {
      return Promise.reject(
        new QueueFullError(
          `the container pool's queue is full (${this.#options.maxQueue} waiting): ${launch.kind} "${launch.name}" was not run`,
          { details: { max_queue: this.#options.maxQueue } },
        ),
      );
    }
    const inBox = { ...task, module: `${CONTAINER_MODULE_DIR}/${basename(launch.module)}` };
    return new Promise<WorkerOutcome>((resolve, reject) => {
      this.#queue.push({ task: inBox, launch, key: launchKey(launch), endpoint, resolve, reject });
      this.#dispatch();
    });
  }

  /** Modules checked readable by any user, by path. */
  readonly #checked = new Set<string>();

  /** The engine found and `module` checked readable by any user. */
  async #prepare(module: string): Promise<void> {
    await this.engine();
    if (this.#checked.has(module)) return;
    await assertReadableModule(module, this.#options.user);
    this.#checked.add(module);
  }

  /** Ends `stepId` now: its container is removed (or, waiting, it never gets one). */
  cancel(stepId: string): void {
    const waiting = this.#queue.find((p) => p.task.stepId === stepId);
    if (waiting) {
      this.#queue = this.#queue.filter((p) => p !== waiting);
      waiting.reject(
        new ContainerDeathError('cancelled', 'cancelled before a container took it', {
          container: '',
          exitCode: null,
          signal: null,
          stderr: '',
        }),
      );
      return;
    }
    for (const box of this.#boxes) {
      if (box.step?.task.stepId === stepId) this.#kill(box, 'cancelled');
    }
  }

  /** Keeps `warm` containers started for `launch` (its key) from now on. */
  prewarm(launch: ContainerLaunch): void {
    if (this.#options.warm === 0 || this.#closed) return;
    this.#warm.set(launchKey(launch), launch);
    void this.engine().then(
      () => {
        this.#refill();
      },
      (err: unknown) => {
        this.#logger.warn({ err }, 'container placement: no warm containers');
      },
    );
  }

  /** Removes every container of the pool; steps still running end `closed`. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const pending of this.#queue.splice(0)) pending.reject(this.#closedError('', null));
    const boxes = [...this.#boxes];
    for (const box of boxes) this.#kill(box, 'closed');
    await Promise.all(boxes.map((b) => b.gone));
    if (this.#engine) {
      const engine = await this.#engine.catch(() => null);
      // Anything of this pool's left behind (a start the engine had not reported).
      const left = engine ? await engine.list(this.label).catch(() => []) : [];
      if (engine && left.length > 0) await engine.remove(left).catch(() => undefined);
    }
  }

  #closedError(container: string, box: Box | null): ContainerDeathError {
    return new ContainerDeathError('closed', 'the container pool closed', {
      container,
      exitCode: null,
      signal: null,
      stderr: box?.stderr ?? '',
    });
  }

  #dispatch(): void {
    if (this.#closed) return;
    const left: Pending[] = [];
    for (const pending of this.#queue) {
      const box = this.#boxFor(pending);
      if (!box) {
        left.push(pending);
        continue;
      }
      this.#assign(box, pending);
    }
    this.#queue = left;
    this.#refill();
  }

  /** An idle container of the step's key, or a new one if there is room (evicting if need be). */
  #boxFor(pending: Pending): Box | null {
    let other: Box | null = null;
    for (const box of this.#boxes) {
      if (box.step || box.killedFor || box.exited) continue;
      if (box.key === pending.key) return box;
      other ??= box;
    }
    if (this.#boxes.size < this.#options.maxContainers)
      return this.#start(pending.key, pending.launch);
    // Full of idle containers of other keys: one makes room.
    if (other) this.#kill(other, 'closed');
    return null;
  }

  #assign(box: Box, pending: Pending): void {
    // Its idle timer, if it has one, runs on: it removes only a container with no step.
    box.step = pending;
    box.credit = pending.task.credit;
    const message: LinkDown = { t: 'step', task: pending.task };
    box.link.postMessage(message);
  }

  /** Starts containers up to `warm` idle ones for each warm key, within `maxContainers`. */
  #refill(): void {
    if (this.#closed || !this.#engine) return;
    for (const [key, launch] of this.#warm) {
      let idle = 0;
      for (const box of this.#boxes) if (box.key === key && !box.step && !box.killedFor) idle++;
      while (idle < this.#options.warm && this.#boxes.size < this.#options.maxContainers) {
        this.#idle(this.#start(key, launch));
        idle++;
      }
    }
  }

  #start(key: string, launch: ContainerLaunch): Box {
    const name = `axon-${this.#id}-p${process.pid}-${++this.#seq}`;
    const engine = this.#engineNow;
    const program = this.#programNow;
    if (!engine || !program) {
      throw new InternalError('a container was started before its engine was found');
    }
    const { child, link, end } = startContainer(
      engine,
      program,
      this.#options,
      name,
      { pool: this.#id, behaviour: `${launch.kind}.${launch.name}` },
      launch,
      {
        onMessage: (message) => {
          this.#onMessage(box, message);
        },
        onText: (text) => {
          box.stderr = (box.stderr + text).slice(-STDERR_TAIL);
        },
        onViolation: (what) => {
          this.#violation(box, what);
        },
      },
    );
    let gone!: () => void;
    const box: Box = {
      name,
      key,
      child,
      link,
      end,
      ended: false,
      step: null,
      credit: 0,
      ready: false,
      died: null,
      stderr: '',
      killedFor: null,
      exited: false,
      gone: new Promise<void>((resolve) => {
        gone = resolve;
      }),
      idleTimer: null,
      calls: 0,
    };
    this.#boxes.add(box);
    let spawnError: Error | null = null;
    child.once('error', (err) => {
      spawnError = err;
    });
    child.once('close', (code, signal) => {
      void this.#onExit(box, spawnError ? null : code, signal, spawnError).finally(gone);
    });
    return box;
  }

  #onMessage(box: Box, message: Record<string, unknown>): void {
    const step = box.step;
    switch (message['t']) {
      case 'ready':
        box.ready = true;
        return;
      case 'died':
        box.died = {
          t: 'died',
          code: typeof message['code'] === 'number' ? message['code'] : null,
          signal: typeof message['signal'] === 'string' ? message['signal'] : null,
          oom: message['oom'] === true,
        };
        return;
      case 'items': {
        const items = message['items'];
        if (!step || message['step'] !== step.task.stepId || !Array.isArray(items)) {
          this.#violation(box, 'items for a step it does not run');
          return;
        }
        if (items.length > box.credit) {
          this.#violation(box, `${items.length} items with a credit of ${box.credit}`);
          return;
        }
        box.credit -= items.length;
        let taken: Promise<void>;
        try {
          taken = step.endpoint.onItems(items as string[]);
        } catch (err) {
          this.#violation(box, `an item the step refused: ${(err as Error).message}`);
          return;
        }
        void taken.then(() => {
          if (box.step !== step) return;
          box.credit += items.length;
          box.link.postMessage({ t: 'credit', step: step.task.stepId, n: items.length });
        });
        return;
      }
      case 'result': {
        const outcome = message['outcome'] as WorkerOutcome | undefined;
        if (!step || message['step'] !== step.task.stepId || typeof outcome?.ok !== 'boolean') {
          this.#violation(box, 'a result for a step it does not run');
          return;
        }
        box.step = null;
        step.resolve(outcome);
        if (this.#closed) this.#kill(box, 'closed');
        else if (!this.#options.reuse) this.#kill(box, 'closed', true);
        else this.#idle(box);
        this.#dispatch();
        return;
      }
      case 'call':
        this.#call(box, message);
        return;
      default:
        this.#violation(box, `an unknown message ${JSON.stringify(message['t'])}`);
    }
  }

  /** A host call from the container, for the step it runs only. */
  #call(box: Box, message: Record<string, unknown>): void {
    const step = box.step;
    const { id, method, args } = message as { id: unknown; method: unknown; args: unknown };
    if (
      !step ||
      typeof id !== 'number' ||
      typeof method !== 'string' ||
      !CALLS.has(method as keyof HostCalls) ||
      !Array.isArray(args) ||
      args.length > 4 ||
      // Every call names the step it is made for first: only the one it runs.
      args[0] !== step.task.stepId
    ) {
      this.#violation(box, `a call it may not make (${JSON.stringify(method)})`);
      return;
    }
    // A stranger's calls each start work on the host: only so many at once.
    if (box.calls >= MAX_PENDING_CALLS) {
      this.#violation(box, `more than ${MAX_PENDING_CALLS} host calls at once`);
      return;
    }
    box.calls++;
    const reply = hostCall(step.endpoint, method as keyof HostCalls, args.slice(1));
    void reply
      .catch((err: unknown) => ({ ok: false as const, error: toErrorPayload(err) }))
      .then((r) => {
        box.calls--;
        if (box.step === step) box.link.postMessage({ t: 'reply', id, reply: r });
      });
  }

  #violation(box: Box, what: string): void {
    this.#logger.warn({ container: box.name, what }, 'container broke the protocol: removed');
    box.stderr = `${box.stderr}axon: ${what}\n`.slice(-STDERR_TAIL);
    this.#kill(box, 'protocol');
  }

  /** An idle container: removed after `idleTimeoutMs` unless its key keeps it warm. */
  #idle(box: Box): void {
    let idle = 0;
    for (const b of this.#boxes) if (b.key === box.key && !b.step && !b.killedFor) idle++;
    if (this.#warm.has(box.key) && idle <= this.#options.warm) {
      if (box.idleTimer) clearTimeout(box.idleTimer);
      box.idleTimer = null;
      return;
    }
    // One timer a container, started again at each step's end (not one per step).
    if (box.idleTimer) return void box.idleTimer.refresh();
    box.idleTimer = setTimeout(() => {
      box.idleTimer = null;
      if (!box.step) this.#kill(box, 'closed');
    }, this.#options.idleTimeoutMs);
    box.idleTimer.unref();
  }

  /**
   * Removes `box` now (the engine kills it; its end is handled when its client exits); or,
   * `gently`, ends its link so that it goes by itself (`--rm`), removed if it lingers.
   */
  #kill(box: Box, why: ContainerDeath, gently = false): void {
    if (box.killedFor || box.exited) return;
    box.killedFor = why;
    if (box.idleTimer) clearTimeout(box.idleTimer);
    box.idleTimer = null;
    if (gently) {
      box.ended = true;
      box.end();
    }
    const remove = (): void => {
      if (!this.#engineNow) return;
      removeContainer(this.#engineNow, box.name, box.child, (err) => {
        this.#logger.warn({ err, container: box.name }, 'container placement: remove failed');
      });
    };
    if (gently) box.idleTimer = setTimeout(remove, RETIRE_MS).unref();
    else remove();
  }

  async #onExit(
    box: Box,
    code: number | null,
    signal: NodeJS.Signals | null,
    spawnError: Error | null,
  ): Promise<void> {
    box.exited = true;
    if (box.idleTimer) clearTimeout(box.idleTimer);
    box.link.close();
    // Run with --rm, but a client that did not end well may have left it: removed here, so
    // nothing of it outlives this. One that went as asked (its code 0) is gone already.
    if (!(box.ended && code === 0)) {
      await this.#engineNow?.remove([box.name]).catch((err: unknown) => {
        this.#logger.warn({ err, container: box.name }, 'container placement: remove failed');
      });
    }
    this.#boxes.delete(box);
    const step = box.step;
    box.step = null;
    if (step) {
      step.reject(deathOf({ ...box, memoryMb: this.#options.memoryMb, code, signal, spawnError }));
    }
    this.#dispatch();
  }
}
