/**
 * @module A thread in the store: a thread is a run of its workflow's flow (`workflow:<name>`),
 * its lifecycle a series of `axon.thread` facts of that run (queued → started → completed |
 * failed | crashed | killed; a resumed thread is `started` again), its turns the steps
 * submitted to the run with client tokens `turn-1`, `turn-2`, …. Nothing here is held in
 * memory only: a process that restarts reads every thread back.
 */
import type { ErrorPayload } from '../errors/to-error-payload.js';
import type { FactRecord, RunRecord, StepRecord } from '../store/records.js';
import type { Runtime } from '../runtime/runtime.js';
import type { TurnOutput } from './turn-agent.js';

/** The fact type of a thread's lifecycle. */
export const THREAD_FACT = 'axon.thread';
/** The prefix of a thread's run entry (its flow's name). */
export const WORKFLOW_ENTRY = 'workflow:';

/** A thread's status (seed 001: queued → started → step ↺ → completed | failed | crashed | killed). */
export type ThreadStatus = 'queued' | 'started' | 'completed' | 'failed' | 'crashed' | 'killed';

/** Every thread status, in lifecycle order. */
export const THREAD_STATUSES: readonly ThreadStatus[] = Object.freeze([
  'queued',
  'started',
  'completed',
  'failed',
  'crashed',
  'killed',
]);

/** Statuses a thread does not leave. */
export const THREAD_ENDED: ReadonlySet<ThreadStatus> = new Set([
  'completed',
  'failed',
  'crashed',
  'killed',
]);

/** Why a thread ended. */
export type EndReason =
  'end' | 'max_rounds' | 'turn_failed' | 'moderator_failed' | 'unknown_role' | 'killed' | 'crashed';

/** The data of one `axon.thread` fact. */
export interface ThreadFactData {
  readonly status: ThreadStatus;
  readonly workflow: string;
  /** On `queued`: the thread's input. */
  readonly input?: string;
  /** On an end. */
  readonly reason?: EndReason;
  readonly error?: ErrorPayload | null;
  /** On a `started` after a `crashed`. */
  readonly resumed?: boolean;
}

/** A turn of a thread, as the API shows it. */
export interface TurnView {
  readonly n: number;
  readonly role: string;
  readonly step_id: string;
  readonly status: StepRecord['status'];
  readonly raw: string | null;
  readonly output: unknown;
  readonly error: ErrorPayload | null;
  readonly started_at: string | null;
  readonly ended_at: string | null;
  readonly tokens_in: number;
  readonly tokens_out: number;
  readonly cost_usd: number;
}

/** A thread, as the API shows it (`GET /v1/threads/{id}`). */
export interface ThreadView {
  readonly thread_id: string;
  readonly workflow: string;
  readonly status: ThreadStatus;
  readonly end_reason: EndReason | null;
  readonly error: ErrorPayload | null;
  readonly input: string;
  readonly mode: RunRecord['mode'];
  readonly replay_of: string | null;
  readonly user_id: string | null;
  readonly rounds: number;
  readonly turns: readonly TurnView[];
  readonly tokens_in: number;
  readonly tokens_out: number;
  readonly cost_usd: number;
  readonly created_at: string;
  readonly started_at: string | null;
  readonly ended_at: string | null;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

const TURN_TOKEN = /^turn-(\d+)$/;

/** The turn number of a step's client token, or `null` for a step that is no turn. */
export function turnNumber(step: Pick<StepRecord, 'client_token'>): number | null {
  const m = TURN_TOKEN.exec(step.client_token ?? '');
  return m ? Number(m[1]) : null;
}

/** The role whose turn a turn step ran: the last part of its agent (`workflow.<name>.<role>`). */
export function turnRole(step: Pick<StepRecord, 'name'>): string {
  return step.name.slice(step.name.lastIndexOf('.') + 1);
}

/** The workflow of a run, or `null` for a run that is no thread. */
export function workflowOf(run: Pick<RunRecord, 'entry'>): string | null {
  return run.entry.startsWith(WORKFLOW_ENTRY) ? run.entry.slice(WORKFLOW_ENTRY.length) : null;
}

/** The turn steps of a run, one per turn (the latest step of each token), in order. */
export function turnSteps(steps: readonly StepRecord[]): StepRecord[] {
  const byTurn = new Map<number, StepRecord>();
  for (const s of steps) {
    const n = turnNumber(s);
    if (n !== null && s.parent_step_id === null) byTurn.set(n, s);
  }
  return [...byTurn.entries()].sort((a, b) => a[0] - b[0]).map(([, s]) => s);
}

function turnView(n: number, step: StepRecord): TurnView {
  const out = step.output as Partial<TurnOutput> | null;
  return {
    n,
    role: turnRole(step),
    step_id: step.step_id,
    status: step.status,
    raw: typeof out?.raw === 'string' ? out.raw : null,
    output: out?.output ?? null,
    error: step.error,
    started_at: step.started_at,
    ended_at: step.ended_at,
    tokens_in: step.budget_usage.tokens_in,
    tokens_out: step.budget_usage.tokens_out,
    cost_usd: step.budget_usage.cost_usd,
  };
}

/** A thread read back from its run, its facts and its steps. */
export function threadView(
  run: RunRecord,
  facts: readonly FactRecord[],
  steps: readonly StepRecord[],
): ThreadView {
  const lifecycle = facts
    .filter((f) => f.type === THREAD_FACT)
    .map((f) => ({ data: f.data as ThreadFactData, ts: f.ts }));
  const first = lifecycle[0]?.data;
  const last = lifecycle.at(-1)?.data;
  const started = lifecycle.find((f) => f.data.status === 'started');
  const turns = turnSteps(steps).map((s) => turnView(turnNumber(s) ?? 0, s));
  const status = last?.status ?? 'queued';
  const sum = (k: 'tokens_in' | 'tokens_out' | 'cost_usd'): number =>
    turns.reduce((a, t) => a + t[k], 0);
  return {
    thread_id: run.run_id,
    workflow: workflowOf(run) ?? first?.workflow ?? '',
    status,
    end_reason: last?.reason ?? null,
    error: last?.error ?? null,
    input: first?.input ?? '',
    mode: run.mode,
    replay_of: run.replay_of,
    user_id: run.user_id,
    rounds: turns.filter((t) => t.status === 'succeeded').length,
    turns,
    tokens_in: sum('tokens_in'),
    tokens_out: sum('tokens_out'),
    cost_usd: sum('cost_usd'),
    created_at: run.created_at,
    started_at: started ? iso(started.ts) : null,
    ended_at: THREAD_ENDED.has(status)
      ? lifecycle.length > 0
        ? iso(lifecycle.at(-1)?.ts ?? 0)
        : run.ended_at
      : null,
  };
}

/** Reads thread `threadId` back from the store; `null` for no such run, or a run that is no thread. */
export async function readThread(runtime: Runtime, threadId: string): Promise<ThreadView | null> {
  const run = await runtime.getRun(threadId);
  if (!run || workflowOf(run) === null) return null;
  const [facts, steps] = await Promise.all([
    runtime.listFacts(threadId, { type: THREAD_FACT }),
    runtime.listSteps(threadId),
  ]);
  return threadView(run, facts, steps);
}

/**
 * Ends the run of thread `threadId` as the thread ended: `completed`, `cancelled` (killed),
 * else `failed`. A run that has ended already is left as it is.
 */
export async function endThreadRun(
  runtime: Runtime,
  threadId: string,
  status: Extract<ThreadStatus, 'completed' | 'failed' | 'crashed' | 'killed'>,
): Promise<void> {
  const run = await runtime.getRun(threadId);
  if (!run || (run.status !== 'running' && run.status !== 'waiting')) return;
  if (status === 'completed') {
    await runtime.completeRun(threadId);
  } else if (status === 'killed') {
    await (
      await runtime.cancelRun(threadId)
    ).done;
  } else {
    // The runtime has no call that fails a run: its record says so.
    await runtime.store.updateRun(threadId, {
      status: 'failed',
      ended_at: new Date().toISOString(),
    });
  }
}

/**
 * Calls `tell` once what `runtime`'s store holds so far is durable (at once when it holds
 * nothing back): a watcher told of a thread's change then reads nothing a crash takes back.
 * A failed commit is told all the same: the watcher reads the thread and meets the error.
 */
export function whenStored(runtime: Runtime, tell: () => void): void {
  const pending = runtime.store.flush();
  if (pending) pending.then(tell, tell);
  else tell();
}
