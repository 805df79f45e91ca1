/**
 * @module File operations of a run as `fs_op` steps (API.md): each goes through the FS
 * broker bound to the run's `fs_policy` (POLICY-3001), after the policy's `fs_op` checkpoint.
 * A refusal ends the step `POLICY_DENIED` with an escalation; the file is not touched.
 */
import type { ExecContext } from '../context/exec-context.js';
import { PolicyDeniedError } from '../errors/policy-denied-error.js';
import {
  createFsBroker,
  fsOpInputSchema,
  type FsBroker,
  type FsPolicy,
  type FsResult,
} from '../policy/fs-broker.js';
import type { Sandbox } from '../policy/sandbox.js';
import type { RunStore } from '../store/run-store.js';
import type { PolicyGate } from '../runs/policy-gate.js';
import { parseBody } from '../runs/request-bodies.js';
import { runCallsOf } from '../runs/run-calls.js';
import { closeRun, openRun, RUN_STATUS, type RunRecordsDeps } from '../runs/run-records.js';
import { runStep } from '../runs/step-runner.js';
import type { StepRunnerDeps, StepSubmission } from '../runs/step-request.js';

/** What `fs_op` steps need from the runtime. */
export interface FsOpDeps {
  readonly steps: StepRunnerDeps;
  readonly runs: RunRecordsDeps;
  readonly gate: PolicyGate;
  readonly store: RunStore;
  /** The server's sandbox, which runs' roots only narrow inside. */
  readonly sandbox: Sandbox;
  /** Each run's broker, made once (its promise is kept at once: concurrent first ops share it). */
  readonly brokers: Map<string, Promise<FsBroker>>;
}

/** Brokers kept at most (the oldest dropped: a dropped one is made again from the store). */
const MAX_BROKERS = 1_000;

/**
 * The broker of the run of `ctx`, bound to its `fs_policy`. Its quota counts the bytes the
 * run's earlier `fs_op` writes wrote (from the store), so it holds across a restart.
 */
async function brokerFor(deps: FsOpDeps, ctx: ExecContext, path: string): Promise<FsBroker> {
  const calls = runCallsOf(ctx);
  const policy = calls?.fsPolicy ?? null;
  if (!calls || !policy) {
    throw new PolicyDeniedError('fs_op', path, 'fs.policy', 'the run has no fs_policy');
  }
  const runId = calls.runId;
  const cached = deps.brokers.get(runId);
  if (cached) return cached;
  const made = (async () => {
    let written = 0;
    for (const step of await deps.store.listSteps(runId)) {
      const input = step.input as { op?: unknown } | null;
      const output = step.output as { bytes?: unknown } | null;
      if (step.type === 'fs_op' && step.status === 'succeeded' && input?.op === 'write') {
        written += typeof output?.bytes === 'number' ? output.bytes : 0;
      }
    }
    return createFsBroker(policy as unknown as FsPolicy, { sandbox: deps.sandbox, written });
  })();
  if (deps.brokers.size >= MAX_BROKERS) {
    const oldest = deps.brokers.keys().next().value;
    if (oldest !== undefined) deps.brokers.delete(oldest);
  }
  deps.brokers.set(runId, made);
  // A broker that could not be made is not kept: the next op tries again.
  made.catch(() => {
    if (deps.brokers.get(runId) === made) deps.brokers.delete(runId);
  });
  return made;
}

/**
 * Runs an `fs_op` step under `ctx`. Resolves the step's output and its status; a bad input
 * fails the step with `SCHEMA_VIOLATION`, a refusal with `POLICY_DENIED`, a missing file with
 * `NOT_FOUND`.
 */
export async function runFsOp(
  deps: FsOpDeps,
  input: unknown,
  ctx: ExecContext,
  submission?: StepSubmission,
): Promise<{
  readonly output: FsResult | null;
  readonly error: Error | null;
  readonly stepId: string;
}> {
  const op = (input as { op?: unknown } | null)?.op;
  const name = `fs ${typeof op === 'string' ? op : 'op'}`;
  const run = await openRun(deps.runs, ctx, name);
  let status: keyof typeof RUN_STATUS = 'failed';
  try {
    const outcome = await runStep(deps.steps, {
      type: 'fs_op',
      name,
      input,
      runId: run.runId,
      parentCtx: ctx,
      timeoutMs: null,
      operation: 'execute_tool',
      submission,
      execute: async (stepCtx) => {
        const request = parseBody(fsOpInputSchema, 'fs_op input', input);
        try {
          // Checkpoint 3, during execution: the fs op, then the broker's own rules.
          if (deps.gate.applies(ctx)) {
            await deps.gate.check('fs_op', request.path, ctx, {
              escalateTo: stepCtx,
              metadata: { op: request.op },
            });
          }
          const broker = await brokerFor(deps, ctx, request.path);
          return await broker.run(request.op, request.path, request.content);
        } catch (err) {
          if (err instanceof PolicyDeniedError && err.rule.startsWith('fs.')) {
            stepCtx.stream.escalate({ reason: err.message, target: `fs_op:${request.path}` });
          }
          throw err;
        }
      },
    });
    status = outcome.status;
    return {
      output: outcome.status === 'succeeded' ? (outcome.output as FsResult) : null,
      error: outcome.error,
      stepId: outcome.stepId,
    };
  } finally {
    if (run.owned) await closeRun(deps.runs, run, RUN_STATUS[status], ctx.tokenUsage);
  }
}
