/**
 * @module The turn loop of one workflow thread (`workflow-engine.ts` starts it): each round
 * the moderator names a role or ends the thread, the role's turn runs as a step of the
 * thread's run (`turn-<n>`), and its output joins the turns the next decision sees. The loop
 * stops at a kill, a lost lease, the engine's close, `maxRounds`, or a failed turn.
 */
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { toErrorPayload, type ErrorPayload } from '../errors/to-error-payload.js';
import type { Runtime } from '../runtime/runtime.js';
import type { EndReason, ThreadFactData, ThreadStatus } from './thread-records.js';
import { runTurn, sharedTurn, sharedTurns, turnOf } from './thread-turns.js';
import { turnPlacement, type TurnThread } from './turn-agent.js';
import {
  END,
  type ThreadTurn,
  type WorkflowDefinition,
  type WorkflowRoleSpec,
} from './workflow-definition.js';

/** How a thread ends. */
export type ThreadEnd = Extract<ThreadStatus, 'completed' | 'failed' | 'crashed' | 'killed'>;

/** A thread an engine drives. */
export interface LiveThread {
  readonly id: string;
  readonly workflow: WorkflowDefinition;
  readonly input: string;
  /** The step of the turn running now. */
  step: string | null;
  killed: boolean;
  /** Its lease went to another engine: this one stops driving it, writing nothing more. */
  lost: boolean;
  /** Settles once this engine stopped driving the thread (it ended, or could not go on). */
  done: Promise<void>;
}

/** What the turn loop needs of the engine that drives the thread. */
export interface ThreadDriver {
  readonly runtime: Runtime;
  /** The engine is closing: the thread takes no new turn (it stays `started`). */
  isClosed(): boolean;
  /** Tells the thread's watchers (`wait()`) that its turn started or ended, once that is stored durably. */
  changed(threadId: string): void;
  /** Appends a thread fact to the thread's run. */
  note(threadId: string, data: ThreadFactData): Promise<void>;
  /** Ends the thread: its fact, its run, its lease. */
  end(
    threadId: string,
    workflow: string,
    status: ThreadEnd,
    reason: EndReason,
    error: ErrorPayload | null,
  ): Promise<void>;
}

/**
 * Drives thread `live` from `turns` (its finished ones; `resumed` after a crash) until it
 * ends or this engine stops driving it.
 */
export async function driveThread(
  driver: ThreadDriver,
  live: LiveThread,
  turns: ThreadTurn[],
  resumed: boolean,
): Promise<void> {
  const w = live.workflow;
  await driver.note(live.id, {
    status: 'started',
    workflow: w.name,
    ...(resumed ? { resumed } : {}),
  });
  driver.changed(live.id);
  // What each turn's input holds of the finished ones: one immutable item per turn.
  const shared = turns.map(sharedTurn);
  for (;;) {
    // Another engine drives it now: nothing more is written from here.
    if (live.lost) return;
    if (live.killed) return driver.end(live.id, w.name, 'killed', 'killed', null);
    // Closing: the thread stays `started`; the next engine on the store resumes it here.
    if (driver.isClosed()) return;
    if (turns.length >= w.maxRounds)
      return driver.end(live.id, w.name, 'completed', 'max_rounds', null);
    let next: string;
    try {
      next = w.moderator({
        threadId: live.id,
        workflow: w.name,
        input: live.input,
        turns: [...turns],
      });
    } catch (err) {
      return driver.end(live.id, w.name, 'failed', 'moderator_failed', toErrorPayload(err));
    }
    if (next === END) return driver.end(live.id, w.name, 'completed', 'end', null);
    if (typeof next !== 'string' || !(next in w.roles)) {
      const err = new InvalidParamsError(
        `the moderator of ${w.name} named ${JSON.stringify(next)}, which is no role (roles: ${w.roleNames.join(', ')})`,
      );
      return driver.end(live.id, w.name, 'failed', 'unknown_role', toErrorPayload(err));
    }
    const n = turns.length + 1;
    const thread: TurnThread = {
      threadId: live.id,
      workflow: w.name,
      input: live.input,
      turns: sharedTurns(shared),
    };
    const placement = turnPlacement((w.roles[next] as WorkflowRoleSpec).placement);
    const step = await runTurn(driver.runtime, w.name, n, next, thread, placement, {
      started: (stepId) => {
        live.step = stepId;
        driver.changed(live.id);
        if (live.killed) void driver.runtime.cancelStep(stepId).catch(() => undefined);
      },
    });
    live.step = null;
    driver.changed(live.id);
    if (isLost(live)) return;
    // Killed while the turn ran (kill() sets it meanwhile).
    if (isKilled(live)) return driver.end(live.id, w.name, 'killed', 'killed', null);
    // A turn cut short by a shutdown (the server's drain) is run again on recovery.
    if (step.status === 'cancelled' && driver.isClosed()) return;
    if (step.status !== 'succeeded') {
      return driver.end(live.id, w.name, 'failed', 'turn_failed', step.error);
    }
    const turn = turnOf(step);
    turns.push(turn);
    shared.push(sharedTurn(turn));
  }
}

function isKilled(live: LiveThread): boolean {
  return live.killed;
}

/** Read afresh after an await: the renewal may have lost the lease meanwhile. */
function isLost(live: LiveThread): boolean {
  return live.lost;
}
