/**
 * @module The workflow engine: runs the threads of registered workflows on a runtime. A
 * thread is a run; each turn the moderator names a role, whose turn is a step of the run
 * (`turn-<n>`; the loop is `thread-drive.ts`). Threads are durable (`thread-records.ts`):
 * `recover()` finds those a dead process left and resumes them from their last finished
 * turn. Per workflow at most `concurrency.max` threads run; more wait in order (`queue`) or
 * are refused (`drop`).
 */
import { EventEmitter, once } from 'node:events';
import { ConflictError } from '../errors/conflict-error.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { toErrorPayload, type ErrorPayload } from '../errors/to-error-payload.js';
import type { RunMode, RunRecord } from '../store/records.js';
import type { Runtime } from '../runtime/runtime.js';
import {
  endThreadRun,
  readThread,
  THREAD_ENDED,
  whenStored,
  THREAD_FACT,
  turnSteps,
  WORKFLOW_ENTRY,
  workflowOf,
  type EndReason,
  type ThreadFactData,
  type ThreadView,
} from './thread-records.js';
import { listThreads, liveThreadRuns, type ThreadQuery } from './thread-listing.js';
import { turnOf } from './thread-turns.js';
import {
  refuseOverflow,
  workflowState,
  type Admitted,
  type Waiting,
  type WorkflowState,
} from './workflow-slots.js';
import { DEFAULT_LEASE_MS, sweepEvery, ThreadLeases } from './thread-leases.js';
import { workflowAgents } from './turn-agent.js';
import {
  describeWorkflow,
  type ThreadTurn,
  type WorkflowDefinition,
} from './workflow-definition.js';
import { driveThread, type LiveThread, type ThreadDriver, type ThreadEnd } from './thread-drive.js';

/** Options of {@link WorkflowEngine.trigger}. */
export interface TriggerOptions {
  /** The user the thread is for (its run's user). */
  readonly userId?: string | null;
  /** `record` (default), or `replay` / `strict_replay` of the thread `replayOf`. */
  readonly mode?: RunMode;
  readonly replayOf?: string;
  /** The run's seed: every model call of the thread that names none gets it. */
  readonly seed?: number;
}

/** A workflow as the API lists it, with its threads running and waiting here. */
export type WorkflowInfo = ReturnType<typeof describeWorkflow> & {
  readonly running: number;
  readonly queued: number;
};

/** What `recover()` did. */
export interface RecoveredThreads {
  /** Threads that were running, resumed from their last finished turn. */
  readonly resumed: readonly string[];
  /** Threads that were running and may not resume: ended `crashed`. */
  readonly crashed: readonly string[];
  /** Threads that were waiting, queued again in their order. */
  readonly requeued: readonly string[];
  /** Threads another live engine holds (their lease): left to it. */
  readonly elsewhere: readonly string[];
}

/** Options of {@link WorkflowEngine}. */
export interface WorkflowEngineOptions {
  /**
   * How long a thread's lease lives without renewal, in ms (default 30 000): how soon
   * another engine on the same leases (a fleet) takes over the threads of one that died.
   */
  readonly leaseMs?: number;
}

/** Threads of workflows on a runtime; see the module. */
export class WorkflowEngine {
  readonly runtime: Runtime;
  readonly #workflows = new Map<string, WorkflowState>();
  readonly #live = new Map<string, LiveThread>();
  /** Emits `changed:<threadId>` when a thread's turn starts or ends, or the thread ends. */
  readonly #events = new EventEmitter();
  readonly #driving = new Set<Promise<void>>();
  readonly #leases: ThreadLeases;
  readonly #leaseMs: number;
  /** With a fleet: `recover()` again every `leaseMs`, for threads whose engine died. */
  #sweep: NodeJS.Timeout | null = null;
  #closed = false;
  /** What each thread's turn loop (`thread-drive.ts`) is given of this engine. */
  readonly #driver: ThreadDriver;

  constructor(
    runtime: Runtime,
    workflows: readonly WorkflowDefinition[] = [],
    options: WorkflowEngineOptions = {},
  ) {
    this.runtime = runtime;
    this.#events.setMaxListeners(0);
    this.#driver = {
      runtime,
      isClosed: () => this.#isClosed(),
      changed: (threadId) => {
        whenStored(runtime, () => this.#events.emit(`changed:${threadId}`));
      },
      note: (threadId, data) => this.#note(threadId, data),
      end: (threadId, workflow, status, reason, error) =>
        this.#end(threadId, workflow, status, reason, error),
    };
    const unknown = Object.keys(options).filter((k) => k !== 'leaseMs');
    if (unknown.length > 0) {
      throw new TypeError(`WorkflowEngine: unknown option ${unknown.join(', ')}`);
    }
    const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    if (!(Number.isInteger(leaseMs) && leaseMs >= 10)) {
      throw new RangeError(`WorkflowEngine: leaseMs must be a whole number >= 10, got ${leaseMs}`);
    }
    this.#leaseMs = leaseMs;
    this.#leases = new ThreadLeases(runtime, leaseMs, (id) => {
      this.#lost(id);
    });
    for (const w of workflows) this.register(w);
  }

  /** Another engine took thread `threadId`'s lease: stop driving or queueing it here. */
  #lost(threadId: string): void {
    const live = this.#live.get(threadId);
    if (live) live.lost = true;
    for (const s of this.#workflows.values()) {
      const at = s.queue.findIndex((w) => w.id === threadId);
      if (at >= 0) s.queue.splice(at, 1);
    }
    this.runtime.logger.warn({ thread: threadId }, 'another engine took a thread this one drove');
  }

  /** True once `close()` was called: no new threads, no new turns (a method: read afresh after an await). */
  #isClosed(): boolean {
    return this.#closed;
  }

  /** Registers a workflow (and an agent per role); a second with the same name is a `ConflictError`. */
  register(workflow: WorkflowDefinition): this {
    if ((workflow as Partial<WorkflowDefinition> | null)?.kind !== 'workflow') {
      throw new TypeError('register: expected a workflow from defineWorkflow()');
    }
    if (this.#workflows.has(workflow.name)) {
      throw new ConflictError(`workflow ${workflow.name} is already registered`);
    }
    const pooled = workflow.roleNames.filter(
      (r) => typeof workflow.roles[r]?.placement === 'object',
    );
    if (pooled.length > 0 && !this.runtime.hasFleet()) {
      throw new TypeError(
        `register(${workflow.name}): role ${pooled.map((r) => `"${r}"`).join(', ')} is placed on a pool, and this runtime has no fleet (createRuntime({ fleet }), axon serve --redis)`,
      );
    }
    for (const agent of workflowAgents(workflow)) this.runtime.registerAgent(agent);
    this.#workflows.set(workflow.name, workflowState(workflow));
    return this;
  }

  /** The registered workflows, with their threads running and queued here. */
  list(): WorkflowInfo[] {
    return [...this.#workflows.values()].map((s) => this.#info(s));
  }

  /** One workflow; `NotFoundError` for an unknown name. */
  get(name: string): WorkflowInfo {
    return this.#info(this.#state(name));
  }

  #info(s: WorkflowState): WorkflowInfo {
    return { ...describeWorkflow(s.definition), running: s.running, queued: s.queue.length };
  }

  #state(name: string): WorkflowState {
    const s = this.#workflows.get(name);
    if (!s) throw new NotFoundError('workflow', name);
    return s;
  }

  async #flowId(s: WorkflowState): Promise<string> {
    if (s.flowId) return s.flowId;
    const { flow } = await this.runtime.createFlow({
      name: `${WORKFLOW_ENTRY}${s.definition.name}`,
      ast: describeWorkflow(s.definition),
    });
    s.flowId = flow.flow_id;
    return flow.flow_id;
  }

  /**
   * Starts a thread of workflow `name` on `input`: it runs at once if fewer than
   * `concurrency.max` threads of it run here, else it waits in order (`queue`, up to
   * `maxQueue`) or is refused (`drop`) with `QueueFullError` — a refused thread leaves no
   * trace. Resolves the thread as stored: `started` (once stored) if it runs at once, else
   * `queued`. `NotFoundError` for an unknown workflow; `InvalidParamsError` for a bad input or
   * replay.
   */
  async trigger(name: string, input: string, options: TriggerOptions = {}): Promise<ThreadView> {
    if (this.#closed) throw new InvalidParamsError('the workflow engine is closed');
    const s = this.#state(name);
    if (typeof input !== 'string') {
      throw new InvalidParamsError('a thread takes its input as a string', { param: 'input' });
    }
    const admitted = s.admitting.then(() => this.#admit(s, input, options));
    s.admitting = admitted.catch(() => undefined);
    const [threadId, started] = await admitted;
    await started;
    return (await readThread(this.runtime, threadId)) as ThreadView;
  }

  /** Admits a thread (see {@link trigger}); its id and its start. Runs alone per workflow. */
  async #admit(s: WorkflowState, input: string, options: TriggerOptions): Promise<Admitted> {
    const name = s.definition.name;
    refuseOverflow(s);
    const run = await this.runtime.createRun(
      await this.#flowId(s),
      {
        mode: options.mode ?? 'record',
        ...(options.replayOf === undefined ? {} : { replay_of: options.replayOf }),
        ...(options.seed === undefined ? {} : { seed: options.seed }),
      },
      { userId: options.userId ?? null },
    );
    // A new thread's lease is free: held from now to the thread's end.
    await this.#leases.take(run.run_id);
    await this.#note(run.run_id, { status: 'queued', workflow: name, input });
    return [run.run_id, this.#startOrQueue(s, { id: run.run_id, input })];
  }

  /** Starts `thread` if a slot is free (resolves once its start is stored), else queues it. */
  #startOrQueue(s: WorkflowState, thread: Waiting): Promise<unknown> | undefined {
    if (s.running >= s.definition.concurrency.max) return void s.queue.push(thread);
    const started = once(this.#events, `changed:${thread.id}`);
    this.#start(s, thread.id, thread.input, []);
    return started;
  }

  /** Thread `threadId` as stored; `null` when there is none. */
  thread(threadId: string): Promise<ThreadView | null> {
    return readThread(this.runtime, threadId);
  }

  /**
   * Threads, newest first: of one workflow (else of every workflow this engine runs), in
   * some statuses, of one user, at most `limit` — read from the store's indexes of runs
   * (`thread-listing.ts`).
   */
  threads(query: ThreadQuery = {}): Promise<ThreadView[]> {
    return listThreads(this.runtime, [...this.#workflows.keys()], query);
  }

  /**
   * Kills thread `threadId`: a waiting thread leaves its queue, a running one has its turn
   * cancelled (the cancel reaches the role's model call or process), and the thread ends
   * `killed`. `NotFoundError` for an unknown thread; `ConflictError` for one that has ended.
   */
  async kill(threadId: string): Promise<ThreadView> {
    const live = this.#live.get(threadId);
    if (live) {
      live.killed = true;
      if (live.step) await this.runtime.cancelStep(live.step).catch(() => undefined);
      await this.#ended(threadId);
      return (await readThread(this.runtime, threadId)) as ThreadView;
    }
    const t = await readThread(this.runtime, threadId);
    if (!t) throw new NotFoundError('thread', threadId);
    if (THREAD_ENDED.has(t.status)) {
      throw new ConflictError(`thread ${threadId} is ${t.status}: there is nothing to kill`, {
        details: { status: t.status },
      });
    }
    if (!(await this.#leases.take(threadId))) {
      throw new ConflictError(
        `thread ${threadId} is driven by another engine (another process on the same store): kill it there`,
        { details: { status: t.status } },
      );
    }
    const s = this.#workflows.get(t.workflow);
    const at = s?.queue.findIndex((w) => w.id === threadId) ?? -1;
    if (s && at >= 0) s.queue.splice(at, 1);
    await this.#end(threadId, t.workflow, 'killed', 'killed', null);
    return (await readThread(this.runtime, threadId)) as ThreadView;
  }

  /** Resolves once thread `threadId` has ended, with the thread as read then (`null`: none). */
  async #ended(threadId: string): Promise<ThreadView | null> {
    for (;;) {
      const live = this.#live.get(threadId);
      if (live) {
        await live.done;
        continue;
      }
      const name = `changed:${threadId}`;
      let wake = (): void => undefined;
      const changed = new Promise<void>((resolve) => {
        this.#events.once(name, (wake = resolve));
      });
      const t = await readThread(this.runtime, threadId);
      if (!t || THREAD_ENDED.has(t.status)) {
        // Its listener goes with it: an ended thread's change is not emitted again.
        this.#events.off(name, wake);
        return t;
      }
      await changed;
    }
  }

  /** Waits until thread `threadId` ends; resolves it as stored. `NotFoundError` for none. */
  async wait(threadId: string): Promise<ThreadView> {
    if (!this.#live.has(threadId) && !(await readThread(this.runtime, threadId))) {
      throw new NotFoundError('thread', threadId);
    }
    const t = await this.#ended(threadId); // the thread as stored: not read again
    if (!t) throw new NotFoundError('thread', threadId);
    return t;
  }

  /** Subscribes to thread changes (a turn started or ended, the thread ended); returns the unsubscribe. */
  onChange(threadId: string, listener: () => void): () => void {
    this.#events.on(`changed:${threadId}`, listener);
    return () => this.#events.off(`changed:${threadId}`, listener);
  }

  /**
   * Whether `run` is a thread of one of this engine's workflows: its `recover()` resumes it
   * (under its lease), so `runtime.resumeRuns({ except })` should leave it alone.
   */
  drives(run: Pick<RunRecord, 'entry'>): boolean {
    const name = workflowOf(run);
    return name !== null && this.#workflows.has(name);
  }

  /**
   * Picks up what a process that stopped left (call it once, after the runtime resumed its
   * runs): each thread that was running is marked `crashed`, then resumed from its last
   * finished turn if its workflow allows (`resume`, default true) or left `crashed`; each
   * thread that was waiting is queued again, oldest first. Threads of workflows not
   * registered here are left alone.
   */
  async recover(): Promise<RecoveredThreads> {
    this.#sweepLater();
    const resumed: string[] = [];
    const crashed: string[] = [];
    const requeued: string[] = [];
    const elsewhere: string[] = [];
    const runs = await liveThreadRuns(this.runtime, [...this.#workflows.keys()]);
    for (const run of runs) {
      const name = workflowOf(run);
      const s = name === null ? undefined : this.#workflows.get(name);
      if (!s || this.#live.has(run.run_id) || s.queue.some((w) => w.id === run.run_id)) continue;
      if (this.#isClosed()) break;
      // A thread another live engine holds is its to drive.
      if (!(await this.#leases.take(run.run_id))) {
        elsewhere.push(run.run_id);
        continue;
      }
      // Read once the lease is held: its last holder may have ended it meanwhile.
      const t = await readThread(this.runtime, run.run_id);
      if (!t) continue;
      if (t.status === 'queued') {
        requeued.push(run.run_id);
        void this.#startOrQueue(s, { id: run.run_id, input: t.input });
        continue;
      }
      if (t.status !== 'started') {
        await this.#leases.drop(run.run_id);
        continue;
      }
      await this.#note(run.run_id, {
        status: 'crashed',
        workflow: s.definition.name,
        reason: 'crashed',
      });
      if (!s.definition.resume) {
        crashed.push(run.run_id);
        await this.#end(run.run_id, s.definition.name, 'crashed', 'crashed', null, false);
        continue;
      }
      // Steps the dead process left running are closed (and run again under their tokens).
      await this.runtime.resumeRun(run.run_id).catch((err: unknown) => {
        if (!(err instanceof ConflictError)) throw err;
      });
      const steps = await this.runtime.listSteps(run.run_id);
      const done = turnSteps(steps).filter((st) => st.status === 'succeeded');
      const turns = done.map((st) => turnOf(st));
      resumed.push(run.run_id);
      this.#start(s, run.run_id, t.input, turns, true);
    }
    return { resumed, crashed, requeued, elsewhere };
  }

  /**
   * With a fleet (leases shared in its Redis), looks every `leaseMs` for threads whose
   * engine died (their lease ran out) and takes them, as `recover()` does. Started by the
   * first `recover()`; stopped by `close()`.
   */
  #sweepLater(): void {
    if (this.#sweep || !this.runtime.sharesLeases() || this.#closed) return;
    this.#sweep = sweepEvery(this.#leaseMs, () => this.recover(), this.runtime.logger);
  }

  /**
   * Stops: no new threads, and threads running here take no new turn (they stay `started`
   * in the store, for `recover()` of the next engine to resume); resolves once their turns
   * running now have ended (kill threads first to end them for good).
   */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#sweep) clearInterval(this.#sweep);
    for (const s of this.#workflows.values()) s.queue.length = 0;
    await Promise.allSettled([...this.#driving]);
    // Let go: another engine may take the threads left started or waiting at once.
    await this.#leases.close();
  }

  #start(
    s: WorkflowState,
    threadId: string,
    input: string,
    turns: ThreadTurn[],
    resumed = false,
  ): void {
    s.running++;
    const live: LiveThread = {
      id: threadId,
      workflow: s.definition,
      input,
      step: null,
      killed: false,
      lost: false,
      done: Promise.resolve(),
    };
    this.#live.set(threadId, live);
    const driving = driveThread(this.#driver, live, turns, resumed)
      .catch((err: unknown) => {
        this.runtime.logger.error({ err, thread: threadId }, 'a workflow thread failed to run');
        return this.#end(threadId, s.definition.name, 'failed', 'turn_failed', toErrorPayload(err));
      })
      .catch((err: unknown) => {
        this.runtime.logger.error(
          { err, thread: threadId },
          'a workflow thread could not be ended',
        );
      })
      .finally(() => {
        this.#live.delete(threadId);
        this.#driving.delete(driving);
        s.running--;
        this.#events.emit(`changed:${threadId}`);
        // The slot goes to the oldest waiting thread at once: no trigger can take it first.
        const next = this.#isClosed() ? undefined : s.queue.shift();
        if (next !== undefined) this.#start(s, next.id, next.input, []);
      });
    live.done = driving;
    this.#driving.add(driving);
  }

  async #end(
    threadId: string,
    workflow: string,
    status: ThreadEnd,
    reason: EndReason,
    error: ErrorPayload | null,
    note = true,
  ): Promise<void> {
    if (note) await this.#note(threadId, { status, workflow, reason, error });
    await endThreadRun(this.runtime, threadId, status);
    await this.#leases.drop(threadId);
    this.#events.emit(`changed:${threadId}`);
  }

  async #note(threadId: string, data: ThreadFactData): Promise<void> {
    await this.runtime.appendFact(threadId, { type: THREAD_FACT, data });
  }
}

/** A workflow engine on `runtime` with `workflows` registered. */
export function createWorkflowEngine(
  runtime: Runtime,
  workflows: readonly WorkflowDefinition[] = [],
  options: WorkflowEngineOptions = {},
): WorkflowEngine {
  return new WorkflowEngine(runtime, workflows, options);
}
