/**
 * @module The workflow engine: runs the threads of registered workflows on a runtime. A
 * thread is a run; each turn the moderator names a role, whose turn is a step of the run
 * (`turn-<n>`); its output joins the thread for the next decision. Threads are durable (see
 * `thread-records.ts`): `recover()` finds those a dead process left and resumes them from
 * their last finished turn. Per workflow at most `concurrency.max` threads run; more wait in
 * order (`queue`) or are refused (`drop`).
 */
import { EventEmitter } from 'node:events';
import { ConflictError } from '../errors/conflict-error.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { QueueFullError } from '../errors/queue-full-error.js';
import { toErrorPayload, type ErrorPayload } from '../errors/to-error-payload.js';
import type { RunMode, RunRecord, StepRecord } from '../store/records.js';
import type { Runtime } from '../runtime/runtime.js';
import { isImmutable, shareImmutable, shareImmutableItems } from '../store/deep-copy.js';
import {
  readThread,
  THREAD_ENDED,
  THREAD_FACT,
  threadView,
  turnNumber,
  turnSteps,
  WORKFLOW_ENTRY,
  workflowOf,
  type EndReason,
  type ThreadFactData,
  type ThreadStatus,
  type ThreadView,
} from './thread-records.js';
import { turnAgentName, turnAgents, type TurnOutput, type TurnThread } from './turn-agent.js';
import {
  describeWorkflow,
  END,
  type ThreadTurn,
  type WorkflowDefinition,
} from './workflow-definition.js';

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
}

/** A thread this engine drives. */
interface LiveThread {
  readonly id: string;
  readonly workflow: WorkflowDefinition;
  readonly input: string;
  /** The step of the turn running now. */
  step: string | null;
  killed: boolean;
  /** Settles once this engine stopped driving the thread (it ended, or could not go on). */
  done: Promise<void>;
}

interface WorkflowState {
  readonly definition: WorkflowDefinition;
  flowId: string | null;
  running: number;
  readonly queue: string[];
}

/** Threads of workflows on a runtime; see the module. */
export class WorkflowEngine {
  readonly runtime: Runtime;
  readonly #workflows = new Map<string, WorkflowState>();
  readonly #live = new Map<string, LiveThread>();
  /** Emits `changed:<threadId>` when a thread's turn starts or ends, or the thread ends. */
  readonly #events = new EventEmitter();
  readonly #driving = new Set<Promise<void>>();
  #closed = false;

  constructor(runtime: Runtime, workflows: readonly WorkflowDefinition[] = []) {
    this.runtime = runtime;
    this.#events.setMaxListeners(0);
    for (const w of workflows) this.register(w);
  }

  /** True once `close()` was called: no new threads, no new turns. */
  get closed(): boolean {
    return this.#closed;
  }

  /** The same, read afresh after an await (a getter would be narrowed by an earlier check). */
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
    for (const agent of turnAgents(workflow)) this.runtime.registerAgent(agent);
    this.#workflows.set(workflow.name, {
      definition: workflow,
      flowId: null,
      running: 0,
      queue: [],
    });
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
   * trace. Resolves the thread as stored (`queued` or `started`). `NotFoundError` for an
   * unknown workflow; `InvalidParamsError` for a bad input or replay.
   */
  async trigger(name: string, input: string, options: TriggerOptions = {}): Promise<ThreadView> {
    if (this.#closed) throw new InvalidParamsError('the workflow engine is closed');
    const s = this.#state(name);
    if (typeof input !== 'string') {
      throw new InvalidParamsError('a thread takes its input as a string', { param: 'input' });
    }
    const { max, overflow, maxQueue } = s.definition.concurrency;
    if (s.running >= max) {
      if (overflow === 'drop') {
        throw new QueueFullError(
          `workflow ${name} runs ${s.running} threads, its most (overflow: drop)`,
          { details: { workflow: name, running: s.running, max } },
        );
      }
      if (s.queue.length >= maxQueue) {
        throw new QueueFullError(
          `workflow ${name} has ${s.queue.length} threads waiting, its most (max_queue ${maxQueue})`,
          { details: { workflow: name, queued: s.queue.length, max_queue: maxQueue } },
        );
      }
    }
    const run = await this.runtime.createRun(
      await this.#flowId(s),
      {
        mode: options.mode ?? 'record',
        ...(options.replayOf === undefined ? {} : { replay_of: options.replayOf }),
        ...(options.seed === undefined ? {} : { seed: options.seed }),
      },
      { userId: options.userId ?? null },
    );
    await this.#note(run.run_id, { status: 'queued', workflow: name, input });
    if (s.running < max) {
      this.#start(s, run.run_id, input, []);
    } else {
      s.queue.push(run.run_id);
    }
    return (await readThread(this.runtime, run.run_id)) as ThreadView;
  }

  /** Thread `threadId` as stored; `null` when there is none. */
  thread(threadId: string): Promise<ThreadView | null> {
    return readThread(this.runtime, threadId);
  }

  /**
   * Threads, newest first: of one workflow, in some statuses, whose run `owner` accepts (its
   * `user_id`), at most `limit`. Only the threads that pass the workflow and owner filters
   * are read in full, and reading stops at `limit`.
   */
  async threads(
    query: {
      readonly workflow?: string;
      readonly status?: readonly ThreadStatus[];
      readonly limit?: number;
      readonly owner?: (userId: string | null) => boolean;
    } = {},
  ): Promise<ThreadView[]> {
    const runs = (await this.runtime.store.listRuns()).filter((r) => {
      const w = workflowOf(r);
      return (
        w !== null &&
        (query.workflow === undefined || w === query.workflow) &&
        (query.owner === undefined || query.owner(r.user_id))
      );
    });
    runs.reverse();
    const out: ThreadView[] = [];
    for (const run of runs) {
      const t = await this.#view(run);
      if (query.status && !query.status.includes(t.status)) continue;
      out.push(t);
      if (query.limit !== undefined && out.length >= query.limit) break;
    }
    return out;
  }

  async #view(run: RunRecord): Promise<ThreadView> {
    const [facts, steps] = await Promise.all([
      this.runtime.listFacts(run.run_id, { type: THREAD_FACT }),
      this.runtime.listSteps(run.run_id),
    ]);
    return threadView(run, facts, steps);
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
    const s = this.#workflows.get(t.workflow);
    const at = s?.queue.indexOf(threadId) ?? -1;
    if (s && at >= 0) s.queue.splice(at, 1);
    await this.#end(threadId, t.workflow, 'killed', 'killed', null);
    return (await readThread(this.runtime, threadId)) as ThreadView;
  }

  /** Resolves once thread `threadId` has ended (read from the store, or driven here). */
  async #ended(threadId: string): Promise<void> {
    for (;;) {
      const live = this.#live.get(threadId);
      if (live) {
        await live.done;
        continue;
      }
      const changed = new Promise<void>((resolve) =>
        this.#events.once(`changed:${threadId}`, resolve),
      );
      const t = await readThread(this.runtime, threadId);
      if (!t || THREAD_ENDED.has(t.status)) return;
      await changed;
    }
  }

  /**
   * Waits until thread `threadId` ends; resolves it as stored. `NotFoundError` for no such
   * thread.
   */
  async wait(threadId: string): Promise<ThreadView> {
    const live = this.#live.get(threadId);
    if (live) {
      await live.done;
    } else {
      const t = await readThread(this.runtime, threadId);
      if (!t) throw new NotFoundError('thread', threadId);
      await this.#ended(threadId);
    }
    return (await readThread(this.runtime, threadId)) as ThreadView;
  }

  /** Subscribes to thread changes (a turn started or ended, the thread ended); returns the unsubscribe. */
  onChange(threadId: string, listener: () => void): () => void {
    this.#events.on(`changed:${threadId}`, listener);
    return () => this.#events.off(`changed:${threadId}`, listener);
  }

  /**
   * Picks up what a process that stopped left (call it once, after the runtime resumed its
   * runs): each thread that was running is marked `crashed`, then resumed from its last
   * finished turn if its workflow allows (`resume`, default true) or left `crashed`; each
   * thread that was waiting is queued again, oldest first. Threads of workflows not
   * registered here are left alone.
   */
  async recover(): Promise<RecoveredThreads> {
    const resumed: string[] = [];
    const crashed: string[] = [];
    const requeued: string[] = [];
    const runs = await this.runtime.store.listRuns({ status: ['running', 'waiting'] });
    for (const run of runs) {
      const name = workflowOf(run);
      const s = name === null ? undefined : this.#workflows.get(name);
      if (!s || this.#live.has(run.run_id) || s.queue.includes(run.run_id)) continue;
      const t = await this.#view(run);
      if (t.status === 'queued') {
        requeued.push(run.run_id);
        if (s.running < s.definition.concurrency.max) this.#start(s, run.run_id, t.input, []);
        else s.queue.push(run.run_id);
        continue;
      }
      if (t.status !== 'started') continue;
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
      resumed.push(run.run_id);
      this.#start(
        s,
        run.run_id,
        t.input,
        done.map((st) => turnOf(st)),
        true,
      );
    }
    return { resumed, crashed, requeued };
  }

  /**
   * Stops: no new threads, and threads running here take no new turn (they stay `started`
   * in the store, for `recover()` of the next engine to resume); resolves once their turns
   * running now have ended (kill threads first to end them for good).
   */
  async close(): Promise<void> {
    this.#closed = true;
    for (const s of this.#workflows.values()) s.queue.length = 0;
    await Promise.allSettled([...this.#driving]);
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
      done: Promise.resolve(),
    };
    this.#live.set(threadId, live);
    const driving = this.#drive(live, turns, resumed)
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
        const next = this.#closed ? undefined : s.queue.shift();
        if (next !== undefined) {
          void readThread(this.runtime, next).then((t) => {
            if (t && t.status === 'queued') this.#start(s, next, t.input, []);
          });
        }
      });
    live.done = driving;
    this.#driving.add(driving);
  }

  async #drive(live: LiveThread, turns: ThreadTurn[], resumed: boolean): Promise<void> {
    const w = live.workflow;
    await this.#note(live.id, {
      status: 'started',
      workflow: w.name,
      ...(resumed ? { resumed } : {}),
    });
    this.#events.emit(`changed:${live.id}`);
    for (;;) {
      if (live.killed) return this.#end(live.id, w.name, 'killed', 'killed', null);
      // Closing: the thread stays `started`; the next engine on the store resumes it here.
      if (this.closed) return;
      if (turns.length >= w.maxRounds)
        return this.#end(live.id, w.name, 'completed', 'max_rounds', null);
      let next: string;
      try {
        next = w.moderator({
          threadId: live.id,
          workflow: w.name,
          input: live.input,
          turns: [...turns],
        });
      } catch (err) {
        return this.#end(live.id, w.name, 'failed', 'moderator_failed', toErrorPayload(err));
      }
      if (next === END) return this.#end(live.id, w.name, 'completed', 'end', null);
      if (typeof next !== 'string' || !(next in w.roles)) {
        const err = new InvalidParamsError(
          `the moderator of ${w.name} named ${JSON.stringify(next)}, which is no role (roles: ${w.roleNames.join(', ')})`,
        );
        return this.#end(live.id, w.name, 'failed', 'unknown_role', toErrorPayload(err));
      }
      const n = turns.length + 1;
      const thread: TurnThread = {
        threadId: live.id,
        workflow: w.name,
        input: live.input,
        // Finished turns never change: shared, not copied, by each turn's stored input.
        turns: sharedList(turns.map(sharedTurn)),
      };
      const step = await this.#turn(live, n, next, thread);
      // Killed while the turn ran (kill() sets it meanwhile).
      if (isKilled(live)) return this.#end(live.id, w.name, 'killed', 'killed', null);
      // A turn cut short by a shutdown (the server's drain) is run again on recovery.
      if (step.status === 'cancelled' && this.#isClosed()) return;
      if (step.status !== 'succeeded') {
        return this.#end(live.id, w.name, 'failed', 'turn_failed', step.error);
      }
      turns.push(turnOf(step));
    }
  }

  /** Runs turn `n` (role `role`) as a step of the thread's run; the step once it has ended. */
  async #turn(live: LiveThread, n: number, role: string, thread: TurnThread): Promise<StepRecord> {
    const submitted = await this.runtime.submitStep(live.id, {
      type: 'agent',
      client_token: `turn-${n}`,
      input: {
        agent: turnAgentName(live.workflow.name, role),
        message: live.input,
        args: { thread },
      },
    });
    live.step = submitted.step_id;
    this.#events.emit(`changed:${live.id}`);
    if (live.killed) await this.runtime.cancelStep(submitted.step_id).catch(() => undefined);
    if (submitted.created) {
      await submitted.done;
    } else {
      // A turn found by its token (run again by the resume): followed to its end.
      for await (const _ of this.runtime.followStep(submitted.step_id)) {
        // nothing: the end of the log is the end of the turn
      }
    }
    live.step = null;
    const step = await this.runtime.getStep(submitted.step_id);
    if (!step) throw new NotFoundError('step', submitted.step_id);
    this.#events.emit(`changed:${live.id}`);
    return step;
  }

  async #end(
    threadId: string,
    workflow: string,
    status: Extract<ThreadStatus, 'completed' | 'failed' | 'crashed' | 'killed'>,
    reason: EndReason,
    error: ErrorPayload | null,
    note = true,
  ): Promise<void> {
    if (note) await this.#note(threadId, { status, workflow, reason, error });
    const run = await this.runtime.getRun(threadId);
    if (run && (run.status === 'running' || run.status === 'waiting')) {
      if (status === 'completed') {
        await this.runtime.completeRun(threadId);
      } else if (status === 'killed') {
        await (
          await this.runtime.cancelRun(threadId)
        ).done;
      } else {
        await this.runtime.store.updateRun(threadId, {
          status: 'failed',
          ended_at: new Date(Date.now()).toISOString(),
        });
      }
    }
    this.#events.emit(`changed:${threadId}`);
  }

  async #note(threadId: string, data: ThreadFactData): Promise<void> {
    await this.runtime.appendFact(threadId, { type: THREAD_FACT, data });
  }
}

/** What a turn's input holds of a finished turn, immutable (worked out once per turn). */
const sharedTurns = new WeakMap<ThreadTurn, TurnThread['turns'][number]>();
function sharedTurn(t: ThreadTurn): TurnThread['turns'][number] {
  let shared = sharedTurns.get(t);
  if (!shared) {
    const plain = { n: t.n, role: t.role, raw: t.raw, output: t.output };
    try {
      shared = shareImmutable(plain);
    } catch {
      // An output that is not plain data (a Date, say) is copied like any input.
      shared = plain;
    }
    sharedTurns.set(t, shared);
  }
  return shared;
}

/** The list shared when every item is (else copied like any input). */
function sharedList<T>(items: T[]): readonly T[] {
  return items.every(isImmutable) ? shareImmutableItems(items) : items;
}

function isKilled(live: LiveThread): boolean {
  return live.killed;
}

/** A finished turn step as the moderator sees it. */
function turnOf(step: StepRecord): ThreadTurn {
  const out = step.output as TurnOutput;
  return {
    n: turnNumber(step) ?? 0,
    role: step.name.split('.').at(-1) ?? '',
    raw: out.raw,
    output: out.output,
    stepId: step.step_id,
  };
}

/** A workflow engine on `runtime` with `workflows` registered. */
export function createWorkflowEngine(
  runtime: Runtime,
  workflows: readonly WorkflowDefinition[] = [],
): WorkflowEngine {
  return new WorkflowEngine(runtime, workflows);
}
