/**
 * @module The A2A SDK's `TaskStore` over axon's records: a task is a run of the flow `a2a`
 * whose entry is `a2a:<task id>` (found again by the store's run index on entry), owned by
 * the caller, its agent step the task's work, and the task itself kept as facts of type
 * `a2a.task` on that run — one each time its state changes (submitted, working, and its end),
 * so a task survives a restart of `axon serve` on any store. Between two states a task lives
 * here in memory: the tokens a streamed step appends to its artifact are not written one by
 * one. A task read after a restart whose last fact is not an end, but whose step has ended
 * since (a step the restart closed, or ran again to its end), is read as its step ended it.
 *
 * A caller reaches only its own tasks (an `admin` key every one): another's reads as none,
 * `TaskNotFoundError`. Listing tasks is not served (`UnsupportedOperationError`): the runs
 * are listed by `GET /v1/runs`.
 */
import { Task, type ListTasksResponse, type TaskState } from '@a2a-js/sdk';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import {
  RequestMalformedError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { Runtime } from '../../runtime/runtime.js';
import { STEP_ENDED, type RunRecord, type StepRecord } from '../../store/records.js';
import { flushed } from '../../store/run-store.js';
import { mayUse, type Caller } from '../auth.js';
import { callerIn } from './a2a-context.js';
import { endedTask, isTerminal, taskEndOf } from './a2a-task-end.js';

/** The fact type a task is kept as. */
export const TASK_FACT = 'a2a.task';
/** The name of the flow whose runs are tasks. */
export const TASK_FLOW = 'a2a';
/** The entry of a task's run begins so. */
export const TASK_ENTRY_PREFIX = 'a2a:';
/** A run's entry is at most 256 characters: a longer task id names no task. */
const MAX_TASK_ID = 256 - TASK_ENTRY_PREFIX.length;

/** A task of this process that has not ended. */
interface LiveTask {
  readonly runId: string;
  readonly owner: string | null;
  task: Task | null;
  /** The state of its last fact, or `null` before the first. */
  kept: TaskState | null;
}

/** The run entry of task `taskId`. */
export function taskEntry(taskId: string): string {
  return `${TASK_ENTRY_PREFIX}${taskId}`;
}

/** See the module. */
export class A2aTaskStore implements TaskStore {
  readonly #runtime: Runtime;
  readonly #live = new Map<string, LiveTask>();
  /** Runs being made, by task id: two saves of a new task at once make one run. */
  readonly #making = new Map<string, Promise<RunRecord>>();
  #flowId: Promise<string> | null = null;

  constructor(runtime: Runtime) {
    this.#runtime = runtime;
  }

  /**
   * The run of task `taskId`, made for `caller` when it has none. `TaskNotFoundError` when
   * the run is another caller's.
   */
  async runOf(taskId: string, caller: Caller): Promise<RunRecord> {
    const live = this.#live.get(taskId);
    if (live) {
      if (!mayUse(caller, live.owner)) throw new TaskNotFoundError(`Task not found: ${taskId}`);
      const run = await this.#runtime.getRun(live.runId);
      if (run) return run;
    }
    const found = await this.#findRun(taskId, null);
    if (found) {
      if (!mayUse(caller, found.user_id)) throw new TaskNotFoundError(`Task not found: ${taskId}`);
      return found;
    }
    let making = this.#making.get(taskId);
    if (!making) {
      making = this.#makeRun(taskId, caller).finally(() => this.#making.delete(taskId));
      this.#making.set(taskId, making);
    }
    return making;
  }

  async save(task: Task, context: ServerCallContext): Promise<void> {
    noTenant(context);
    const caller = callerIn(context);
    let live = this.#live.get(task.id);
    if (!live) {
      const run = await this.runOf(task.id, caller);
      live = { runId: run.run_id, owner: run.user_id, task: null, kept: null };
      this.#live.set(task.id, live);
    } else if (!mayUse(caller, live.owner)) {
      throw new TaskNotFoundError(`Task not found: ${task.id}`);
    }
    live.task = structuredClone(task);
    const state = task.status?.state;
    if (state === undefined || state === live.kept) return;
    await this.#runtime.appendFact(live.runId, { type: TASK_FACT, data: Task.toJSON(task) });
    // Durable before the client is told of it: a task it has seen outlives a crash.
    await flushed(this.#runtime.store);
    live.kept = state;
    // Ended, it is read from its facts from now on.
    if (isTerminal(state) && this.#live.get(task.id) === live) this.#live.delete(task.id);
  }

  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    noTenant(context);
    const caller = callerIn(context);
    const live = this.#live.get(taskId);
    if (live?.task) return mayUse(caller, live.owner) ? structuredClone(live.task) : undefined;
    const run = await this.#findRun(taskId, caller);
    if (!run) return undefined;
    const facts = await this.#runtime.listFacts(run.run_id, { type: TASK_FACT });
    const last = facts.at(-1);
    if (!last) return undefined;
    const task = Task.fromJSON(last.data);
    if (isTerminal(task.status?.state) || live) return task;
    return this.#settled(task, run);
  }

  list(): Promise<ListTasksResponse> {
    return Promise.reject(
      new UnsupportedOperationError(
        "listing tasks is not served here: read a task by its id, or list the caller's runs with GET /v1/runs",
      ),
    );
  }

  /**
   * The run of task `taskId` while its step has not ended (when the caller may reach the
   * task), else `null`: what a cancel from a process not running the task cancels.
   */
  async liveRunOf(taskId: string, context: ServerCallContext): Promise<string | null> {
    const run = await this.#findRun(taskId, callerIn(context));
    const step = run ? await this.#stepOf(run) : null;
    return run && step && !STEP_ENDED.has(step.status) ? run.run_id : null;
  }

  /**
   * `task` (kept before its end) as its step has ended it since, when it has: a task no
   * process of this server runs any more (its server stopped while the step ran).
   */
  async #settled(task: Task, run: RunRecord): Promise<Task> {
    const step = await this.#stepOf(run);
    if (!step) return task;
    const end = taskEndOf(task.id, task.contextId, step, step.ended_at ?? run.created_at);
    return end ? endedTask(task, end) : task;
  }

  /**
   * The step of a task's message: its run's last root step (one a restart submitted again,
   * if any; the steps below it are the agent's delegations and tool calls).
   */
  async #stepOf(run: RunRecord): Promise<StepRecord | null> {
    const steps = await this.#runtime.listSteps(run.run_id);
    return steps.filter((s) => s.parent_step_id === null).at(-1) ?? null;
  }

  /** The run of `taskId` (the caller's, or any with `caller` null or an admin's), or `null`. */
  async #findRun(taskId: string, caller: Caller | null): Promise<RunRecord | null> {
    if (taskId.length === 0 || taskId.length > MAX_TASK_ID) return null;
    const [run] = await this.#runtime.store.pageRuns({
      entry: taskEntry(taskId),
      limit: 1,
      ...(caller === null || caller.permissions.has('admin') ? {} : { userId: caller.userId }),
    });
    return run ?? null;
  }

  async #makeRun(taskId: string, caller: Caller): Promise<RunRecord> {
    this.#flowId ??= this.#runtime
      .createFlow({ name: TASK_FLOW, ast: { a2a: 'task' } })
      .then(({ flow }) => flow.flow_id)
      .catch((err: unknown) => {
        this.#flowId = null;
        throw err;
      });
    const flowId = await this.#flowId;
    return this.#runtime.createRun(flowId, { entry: taskEntry(taskId) }, { userId: caller.userId });
  }
}

/** `RequestMalformedError` for a request naming a tenant: this server has none. */
function noTenant(context: ServerCallContext): void {
  if (context.tenant) {
    throw new RequestMalformedError(`this server has no tenants (asked for "${context.tenant}")`);
  }
}
