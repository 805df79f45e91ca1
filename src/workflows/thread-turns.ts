/**
 * @module One turn of a thread: submitted as a step of the thread's run (client token
 * `turn-<n>`, so a restart finds it), followed to its end, and read back as the moderator
 * sees it. The thread so far travels in the step's input as an immutable list, shared by
 * every later turn's input instead of copied into each.
 */
import { NotFoundError } from '../errors/not-found-error.js';
import type { Runtime } from '../runtime/runtime.js';
import { deepCopy, isImmutable, shareImmutable, shareImmutableItems } from '../store/deep-copy.js';
import type { StepPlacement } from '../steps/submission-host.js';
import type { StepEnding } from '../runs/submitted-step.js';
import type { StepRecord } from '../store/records.js';
import { turnNumber, turnRole } from './thread-records.js';
import { turnAgentName, type TurnOutput, type TurnThread } from './turn-agent.js';
import type { ThreadTurn } from './workflow-definition.js';

/** A finished turn as a turn's input holds it. */
export type SharedTurn = TurnThread['turns'][number];

/** A turn's step once it has ended: what the moderator and the thread's end need of it. */
export type EndedTurn = Pick<StepRecord, 'step_id' | 'name' | 'client_token'> & StepEnding;

/** A finished turn step as the moderator sees it. */
export function turnOf(step: EndedTurn): ThreadTurn {
  const out = step.output as TurnOutput;
  return {
    n: turnNumber(step) ?? 0,
    role: turnRole(step),
    raw: out.raw,
    output: out.output,
    stepId: step.step_id,
  };
}

/** `turn` as a turn's input holds it: immutable when its output is plain data. */
export function sharedTurn(turn: ThreadTurn): SharedTurn {
  const plain = { n: turn.n, role: turn.role, raw: turn.raw, output: turn.output };
  try {
    return shareImmutable(plain);
  } catch {
    // An output that is not plain data (a Date, say) is copied like any input.
    return plain;
  }
}

/** The finished turns as one list the store shares when every turn is immutable. */
export function sharedTurns(turns: readonly SharedTurn[]): readonly SharedTurn[] {
  const list = [...turns];
  return list.every(isImmutable) ? shareImmutableItems(list) : list;
}

/** Where a turn's step is, while it runs. */
export interface TurnWatch {
  /** Told the turn's step id once it is submitted. */
  started(stepId: string): void;
}

/**
 * Runs turn `n` of `thread` (role `role` of workflow `workflow`) as a step of the thread's
 * run, where `placement` says (here, or on a fleet's pool); resolves the step once it has
 * ended. The engine owns the run, so the turn goes in as the owner's submission
 * (`runtime.submitOwnedStep`: typed, not parsed, awaited to its end). A turn the run already
 * has under its token (run again by a resume) is followed to its end instead of submitted
 * twice. A turn that ran here is not read back: its submission says how it ended.
 */
export async function runTurn(
  runtime: Runtime,
  workflow: string,
  n: number,
  role: string,
  thread: TurnThread,
  placement: StepPlacement,
  watch: TurnWatch,
): Promise<EndedTurn> {
  const name = turnAgentName(workflow, role);
  const token = `turn-${n}`;
  const turn = await runtime.submitOwnedStep(thread.threadId, {
    clientToken: token,
    agent: name,
    message: thread.input,
    args: { thread },
    placement,
    onClaimed: (stepId) => {
      watch.started(stepId);
    },
  });
  const ended = turn.ending;
  if (turn.created && ended) {
    // Its output is the role's own object: the thread freezes what it shares, so a copy.
    const { status, error } = ended;
    const output = deepCopy(ended.output);
    return { step_id: turn.stepId, name, client_token: token, status, output, error };
  }
  if (!turn.created) {
    for await (const _ of runtime.followStep(turn.stepId)) {
      // nothing: the end of the log is the end of the turn
    }
  }
  const step = await runtime.getStep(turn.stepId);
  if (!step) throw new NotFoundError('step', turn.stepId);
  return step;
}
