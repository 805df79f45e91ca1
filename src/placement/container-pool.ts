/**
 * @module The containers of a runtime's container placement. Each container runs
 * `container-entry` and speaks the worker protocol as JSON lines on its standard streams:
 * a step goes in, its items, host calls and result come out. A container runs one step at a
 * time, for one behaviour (agent or tool, module, export) and one set of mounts, its
 * **key**; it is kept for that key's next step (unless `reuse` is off) and `warm` of them
 * are started ahead for each key asked to be warm. What a container sends is a stranger's:
 * a message about another step, items past its credit, an unknown call or a line too long
 * kills it. A container that dies ends its step with how it died (out of memory, its exit,
 * killed), after it is removed.
 */
import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { InternalError } from '../errors/internal-error.js';
import { PoolUnavailableError } from '../errors/pool-unavailable-error.js';
import { QueueFullError } from '../errors/queue-full-error.js';
import { toErrorPayload } from '../errors/to-error-payload.js';
import type { Logger } from '../observability/logger.js';
import { containerEntryFile } from './container-bundle.js';
import { findContainerEngine, type ContainerEngine } from './container-engine.js';
import {
  containerRunFlags,
  type ContainerMount,
  type ResolvedContainerOptions,
} from './container-options.js';
import { CONTAINER_ENTRY_PATH, CONTAINER_MODULE_DIR, type DiedLine } from './container-wire.js';
import { LineLink } from './line-link.js';
import type { StepEndpoint } from './worker-pool.js';
import type {
  HostCalls,
  HostReply,
  LinkDown,
  WorkerOutcome,
  WorkerTask,
} from './worker-protocol.js';

/** What a container step runs, and with which folders of the host. */
export interface ContainerLaunch {
  readonly kind: 'agent' | 'tool';
  readonly name: string;
  /** The module's path on the host; its folder is mounted read-only. */
  readonly module: string;
  readonly export: string;
  readonly mounts: readonly ContainerMount[];
}

/** Why a container ended its step without a result. */
export type ContainerDeath =
  /** The kernel killed it at its memory limit. */
  | 'oom'
  /** Its program exited (a crash, `process.exit`). */
  | 'exit'
  /** Killed from outside (not by axon), or its init died. */
  | 'killed'
  /** The step was cancelled or timed out: axon removed it. */
  | 'cancelled'
  /** It broke the protocol (a message about another step, items past its credit, …). */
  | 'protocol'
  /** The engine could not start it (no image, a bad flag): its message says why. */
  | 'start_failed'
  /** The pool closed. */
  | 'closed';

/** A container step that ended without a result: how, and what the container said last. */
export class ContainerDeathError extends Error {
  readonly death: ContainerDeath;
  readonly container: string;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stderr: string;

  constructor(
    death: ContainerDeath,
    message: string,
    fields: { container: string; exitCode: number | null; signal: string | null; stderr: string },
  ) {
    super(message);
    this.name = 'ContainerDeathError';
    this.death = death;
    this.container = fields.container;
    this.exitCode = fields.exitCode;
    this.signal = fields.signal;
    this.stderr = fields.stderr;
  }
}

/** Characters of a container's standard error kept (its end). */
const STDERR_TAIL = 8 * 1024;

/** The host calls a container may make, by name. */
const CALLS: ReadonlySet<keyof HostCalls> = new Set([
  'delegate',
  'callTool',
  'chat',
  'fact',
  'fs',
  'memory',
]);

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
}

/** Whether process `pid` of this host is alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the containers a process of this host that is gone left behind (killed before it
 * could close its runtime): their names carry the process's id (`axon-<pool>-p<pid>-<n>`).
 */
async function sweepOrphans(engine: ContainerEngine, logger: Logger): Promise<void> {
  try {
    const names = await engine.list(`axon.host=${hostname()}`);
    const orphans = names.filter((name) => {
      const pid = /^axon-[\w]+-p(\d+)-\d+$/.exec(name)?.[1];
      return pid !== undefined && !alive(Number(pid));
    });
    if (orphans.length === 0) return;
    await engine.remove(orphans);
    logger.warn(
      { containers: orphans },
      'container placement: removed containers of processes that are gone',
    );
  } catch (err) {
    logger.warn({ err }, 'container placement: could not look for containers left behind');
  }
}

function keyOf(launch: ContainerLaunch): string {
  return JSON.stringify([launch.kind, launch.name, launch.module, launch.export, launch.mounts]);
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
  /** Set once `#engine` resolved: the engine, and the container program's path on the host. */
  #engineNow: ContainerEngine | null = null;
  #entryNow: string | null = null;
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
      const [engine, entry] = await Promise.all([
        findContainerEngine(this.#options.engine, this.#options.runtime),
        containerEntryFile(),
      ]);
      this.#engineNow = engine;
      this.#entryNow = entry;
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
  async runStep(
    task: WorkerTask,
    launch: ContainerLaunch,
    endpoint: StepEndpoint,
  ): Promise<WorkerOutcome> {
    await this.engine();
    await this.#readable(launch.module);
    if (this.#closed) throw this.#closedError('', null);
    if (this.#queue.length >= this.#options.maxQueue) {
      throw new QueueFullError(
        `the container pool's queue is full (${this.#options.maxQueue} waiting): ${launch.kind} "${launch.name}" was not run`,
        { details: { max_queue: this.#options.maxQueue } },
      );
    }
    const inBox = { ...task, module: `${CONTAINER_MODULE_DIR}/${basename(launch.module)}` };
    return new Promise<WorkerOutcome>((resolve, reject) => {
      this.#queue.push({ task: inBox, launch, key: keyOf(launch), endpoint, resolve, reject });
      this.#dispatch();
    });
  }

  /** Modules checked readable by any user, by path. */
  readonly #checked = new Set<string>();

  /**
   * Refuses a module the container's user could not read: the module and its folder must be
   * readable (and the folder searchable) by others, since the container runs unprivileged.
   */
  async #readable(module: string): Promise<void> {
    if (this.#checked.has(module)) return;
    const [dir, file] = await Promise.all([stat(dirname(module)), stat(module)]).catch(
      (err: unknown) => {
        throw new PoolUnavailableError(`container module ${module}: ${(err as Error).message}`, {
          retriable: false,
        });
      },
    );
    if ((dir.mode & 0o005) !== 0o005 || (file.mode & 0o004) === 0) {
      throw new PoolUnavailableError(
        `container module ${module}: its folder must be readable and searchable, and the file readable, by other users — the container runs as ${this.#options.user} (chmod o+rx the folder, o+r the file)`,
        { retriable: false, details: { module } },
      );
    }
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
    this.#warm.set(keyOf(launch), launch);
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
    if (box.idleTimer) clearTimeout(box.idleTimer);
    box.idleTimer = null;
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
    const entry = this.#entryNow;
    if (!engine || entry === null) {
      throw new InternalError('a container was started before its engine was found');
    }
    const flags = containerRunFlags(
      engine.name,
      this.#options,
      name,
      {
        'axon.pool': this.#id,
        'axon.host': hostname(),
        'axon.behaviour': `${launch.kind}.${launch.name}`,
      },
      [
        { host: entry, at: CONTAINER_ENTRY_PATH },
        { host: dirname(launch.module), at: CONTAINER_MODULE_DIR },
      ],
      launch.mounts,
    );
    const child = engine.start(flags, this.#options.image, ['node', CONTAINER_ENTRY_PATH]);
    const link = new LineLink(
      child.stdout as NonNullable<typeof child.stdout>,
      child.stdin as NonNullable<typeof child.stdin>,
      {
        onStray: (line) => {
          box.stderr = `${box.stderr}${line}\n`.slice(-STDERR_TAIL);
        },
      },
    );
    let gone!: () => void;
    const box: Box = {
      name,
      key,
      child,
      link,
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
    };
    this.#boxes.add(box);
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      box.stderr = (box.stderr + chunk).slice(-STDERR_TAIL);
    });
    child.stdin?.on('error', () => undefined);
    link.on('message', (message: Record<string, unknown>) => {
      this.#onMessage(box, message);
    });
    link.on('overflow', () => {
      this.#violation(box, 'a line longer than the link allows');
    });
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
        if (!this.#options.reuse || this.#closed) this.#kill(box, 'closed');
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
    // JSON has no `undefined`: an absent argument comes as null.
    const a = args.slice(1).map((v: unknown) => (v === null ? undefined : v));
    const endpoint = step.endpoint;
    let reply: Promise<HostReply<unknown>>;
    switch (method as keyof HostCalls) {
      case 'delegate':
        reply = endpoint.delegate(a[0] as string, a[1] as string, a[2]);
        break;
      case 'callTool':
        reply = endpoint.callTool(a[0] as string, a[1]);
        break;
      case 'chat':
        reply = endpoint.chat(a[0] as never, a[1] ?? {});
        break;
      case 'fact':
        reply = endpoint.fact(a[0] as never);
        break;
      case 'fs':
        reply = endpoint.fs(a[0] as never);
        break;
      case 'memory':
        reply = endpoint.memory(a[0] as never, a[1]);
        break;
    }
    void reply
      .catch((err: unknown) => ({ ok: false as const, error: toErrorPayload(err) }))
      .then((r) => {
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
    if (box.idleTimer) clearTimeout(box.idleTimer);
    box.idleTimer = null;
    let idle = 0;
    for (const b of this.#boxes) if (b.key === box.key && !b.step && !b.killedFor) idle++;
    if (this.#warm.has(box.key) && idle <= this.#options.warm) return;
    box.idleTimer = setTimeout(() => {
      if (!box.step) this.#kill(box, 'closed');
    }, this.#options.idleTimeoutMs);
    box.idleTimer.unref();
  }

  /** Removes `box` now (the engine kills it); its end is handled when its client exits. */
  #kill(box: Box, why: ContainerDeath): void {
    if (box.killedFor || box.exited) return;
    box.killedFor = why;
    if (box.idleTimer) clearTimeout(box.idleTimer);
    const engine = this.#engineNow;
    void engine?.remove([box.name]).catch((err: unknown) => {
      this.#logger.warn({ err, container: box.name }, 'container placement: remove failed');
      box.child.kill('SIGKILL');
    });
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
    // Not run with --rm: the engine keeps it until removed, so nothing of it outlives this.
    await this.#engineNow?.remove([box.name]).catch((err: unknown) => {
      this.#logger.warn({ err, container: box.name }, 'container placement: remove failed');
    });
    this.#boxes.delete(box);
    const step = box.step;
    box.step = null;
    if (step) step.reject(this.#deathOf(box, code, signal, spawnError));
    this.#dispatch();
  }

  #deathOf(
    box: Box,
    code: number | null,
    signal: NodeJS.Signals | null,
    spawnError: Error | null,
  ): ContainerDeathError {
    const fields = {
      container: box.name,
      exitCode: box.died?.code ?? code,
      signal: box.died?.signal ?? signal,
      stderr: box.stderr,
    };
    const last = box.stderr.trim().split('\n').slice(-3).join(' | ');
    if (spawnError) {
      return new ContainerDeathError(
        'start_failed',
        `the engine did not run: ${spawnError.message}`,
        fields,
      );
    }
    if (box.killedFor) {
      const why =
        box.killedFor === 'protocol'
          ? `it broke the protocol (${last})`
          : box.killedFor === 'cancelled'
            ? 'its step was cancelled'
            : 'the pool closed';
      return new ContainerDeathError(
        box.killedFor,
        `container ${box.name} was removed: ${why}`,
        fields,
      );
    }
    if (box.died?.oom) {
      return new ContainerDeathError(
        'oom',
        `container ${box.name} ran out of memory (its limit is ${this.#options.memoryMb} MiB) and was killed`,
        fields,
      );
    }
    if (box.died) {
      return new ContainerDeathError(
        'exit',
        `container ${box.name}'s program ${box.died.signal ? `was killed by ${box.died.signal}` : `exited with code ${box.died.code}`}${last ? `: ${last}` : ''}`,
        fields,
      );
    }
    if (!box.ready) {
      return new ContainerDeathError(
        'start_failed',
        `container ${box.name} did not start (engine exit ${code ?? signal}): ${last || 'no output'}`,
        fields,
      );
    }
    return new ContainerDeathError(
      'killed',
      `container ${box.name} was killed from outside (engine exit ${code ?? signal})${last ? `: ${last}` : ''}`,
      fields,
    );
  }
}
