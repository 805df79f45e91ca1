/**
 * @module Working inside a run without being one of its submitted steps: the front door's
 * request (`orchestrator.handle(message, { run })`). The context it gets is the run's as a
 * submitted step's is (its id, its user, its shared budget ledger, its wall budget), and the
 * engine and tool calls made under it — a router's, a responder's, and every agent's it
 * invokes — are the run's calls under one client token: recorded in a `record` run, served
 * from the recorded run in `replay` and `strict_replay` (NERVE-4021, NERVE-4022).
 */
import type { ExecContext } from '../context/exec-context.js';
import { parseTraceparent } from '../context/traceparent.js';
import { ConflictError } from '../errors/conflict-error.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { attachRunCalls } from '../runs/run-calls.js';
import type { RunJoinIdentity, SubmissionHost } from './submission-host.js';

/** The identity keys {@link joinRun} takes (the run decides everything else of the context). */
export const RUN_JOIN_KEYS: readonly string[] = Object.freeze([
  'name',
  'userId',
  'sessionId',
  'memoryScope',
  'metadata',
  'permissions',
  'signal',
  'timeoutMs',
] satisfies (keyof RunJoinIdentity)[]);

/** Options of {@link joinRun}. */
export interface JoinRunOptions extends RunJoinIdentity {
  /** The caller's W3C `traceparent`: the work's spans join that trace. */
  readonly traceparent?: string;
}

/** A context inside a run; `release` it when the work has ended (its share of the ledger). */
export interface JoinedRun {
  readonly ctx: ExecContext;
  readonly release: () => void;
}

/**
 * A context inside run `runId` whose calls are numbered under `clientToken` (see the
 * module). Rejects with `InvalidParamsError` for an empty client token, `NotFoundError` for
 * an unknown run or another user's (`options.userId` not the run's user), and
 * `ConflictError` for a run that has ended.
 */
export async function joinRun(
  host: SubmissionHost,
  runId: string,
  clientToken: string,
  options: JoinRunOptions = {},
): Promise<JoinedRun> {
  if (typeof clientToken !== 'string' || clientToken === '') {
    throw new InvalidParamsError(
      'joining a run takes a client token: the key its calls are recorded and replayed by',
      { param: 'client_token' },
    );
  }
  const { traceparent, ...identity } = options;
  // What the run decides (budgets, a ledger, a run id) is refused, not silently dropped.
  const others = Object.keys(identity).filter((k) => !RUN_JOIN_KEYS.includes(k));
  if (others.length > 0) {
    throw new InvalidParamsError(
      `joining a run takes only who works in it (${RUN_JOIN_KEYS.join(', ')}, traceparent); not ${others.join(', ')}`,
      { param: others[0] ?? '' },
    );
  }
  const userId = identity.userId;
  const run = await host.store.getRun(runId);
  // Another user's run is not found, as the server answers for it.
  if (!run || (userId != null && run.user_id !== null && userId !== run.user_id)) {
    throw new NotFoundError('run', runId);
  }
  if (run.status !== 'running' && run.status !== 'waiting') {
    throw new ConflictError(`run ${runId} is ${run.status}: it takes no more work`, {
      details: { status: run.status },
    });
  }
  const parent = traceparent ? (parseTraceparent(traceparent) ?? undefined) : undefined;
  const joined = host.contextFor(run, undefined, parent, identity);
  // The request runs here, whatever pool the run's policy names for its submitted steps.
  attachRunCalls(joined.ctx, host.callsFor(run, clientToken, false, 'here'));
  return joined;
}
