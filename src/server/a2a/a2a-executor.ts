/**
 * @module The A2A SDK's `AgentExecutor` for `axon serve`: a message's task is a run (made by
 * the task store) and the message one `agent` step of it, submitted as `POST
 * /v1/runs/{id}/steps` submits one — admitted by the policy, budgeted, recorded, traced,
 * run where the agent is placed (a fleet's pool too) and shown in the trace UI. The task is
 * published `submitted` once the step is, `working` at its `started`; each token of the
 * step's log is appended to the artifact `output`; at the step's end the artifact is its
 * output whole and the task `completed`, `failed` (the error's code and message) or
 * `canceled`. Then the run is completed (cancelled with a cancelled step). A cancel of the
 * task cancels its step.
 */
import { AgentEvent, type RequestContext } from '@a2a-js/sdk/server';
import type { AgentExecutor, ExecutionEventBus } from '@a2a-js/sdk/server';
import { TaskState, type TaskStatus } from '@a2a-js/sdk';
import { ConflictError } from '../../errors/conflict-error.js';
import { toErrorPayload } from '../../errors/to-error-payload.js';
import type { Logger } from '../../observability/logger.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { SubmittedStep } from '../../steps/step-submission.js';
import type { ServerMetrics } from '../server-metrics.js';
import { callerIn, routeIn } from './a2a-context.js';
import { outputArtifact, textPart } from './a2a-parts.js';
import { stepEndOf, taskEndOf, type StepEnd } from './a2a-task-end.js';
import type { A2aTaskStore } from './a2a-task-store.js';

/** The client token of a task's step: one message, one step, in the task's own run. */
const STEP_TOKEN = 'a2a-message';

/** What the executor needs. */
export interface A2aExecutorDeps {
  readonly runtime: Runtime;
  readonly tasks: A2aTaskStore;
  readonly metrics: ServerMetrics;
  readonly logger: Logger;
}

const now = (): string => new Date().toISOString();

/** See the module. */
export class A2aExecutor implements AgentExecutor {
  readonly #deps: A2aExecutorDeps;
  /** The step of each task running here, by task id. */
  readonly #steps = new Map<string, string>();

  constructor(deps: A2aExecutorDeps) {
    this.#deps = deps;
  }

  async execute(rc: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { runtime } = this.#deps;
    const route = routeIn(rc.context);
    const { taskId, contextId } = rc;
    const run = await this.#deps.tasks.runOf(taskId, callerIn(rc.context));
    const traceparent = rc.context.state.get('headers') as Record<string, unknown> | undefined;
    const status = (state: TaskState, message?: TaskStatus['message']): TaskStatus => ({
      state,
      message,
      timestamp: now(),
    });
    const metadata = (stepId: string | null): Record<string, unknown> => ({
      axon: { run_id: run.run_id, step_id: stepId, agent: route.agent, routed_by: route.by },
    });
    let submitted: SubmittedStep;
    try {
      const header = traceparent?.['traceparent'];
      submitted = await runtime.submitStep(
        run.run_id,
        {
          type: 'agent',
          client_token: STEP_TOKEN,
          input: { agent: route.agent, ...route.input },
        },
        typeof header === 'string' ? { traceparent: header } : {},
      );
    } catch (err) {
      // Refused before it ran (the policy, a rate limit, a budget): the task fails saying so.
      const refusal = toErrorPayload(err);
      bus.publish(
        AgentEvent.task({
          id: taskId,
          contextId,
          status: status(TaskState.TASK_STATE_SUBMITTED),
          artifacts: [],
          history: [rc.userMessage],
          metadata: metadata(null),
        }),
      );
      const end = taskEndOf(
        taskId,
        contextId,
        { step_id: '', status: 'failed', output: null, error: refusal },
        now(),
      );
      await this.#closeRun(run.run_id, 'failed');
      if (end)
        bus.publish(
          AgentEvent.statusUpdate({ taskId, contextId, status: end.status, metadata: undefined }),
        );
      return;
    }
    const stepId = submitted.step_id;
    this.#steps.set(taskId, stepId);
    try {
      bus.publish(
        AgentEvent.task({
          id: taskId,
          contextId,
          status: status(TaskState.TASK_STATE_SUBMITTED),
          artifacts: [],
          history: [rc.userMessage],
          metadata: metadata(stepId),
        }),
      );
      let working = false;
      let chunks = 0;
      let ended: StepEnd | null = null;
      for await (const event of runtime.followStep(stepId)) {
        if (!working && (event.type === 'started' || event.type === 'token')) {
          working = true;
          bus.publish(
            AgentEvent.statusUpdate({
              taskId,
              contextId,
              status: status(TaskState.TASK_STATE_WORKING),
              metadata: undefined,
            }),
          );
        }
        if (event.type === 'token') {
          bus.publish(
            AgentEvent.artifactUpdate({
              taskId,
              contextId,
              artifact: outputArtifact([textPart(event.t)]),
              append: chunks > 0,
              lastChunk: false,
              metadata: undefined,
            }),
          );
          chunks++;
        }
        ended = stepEndOf(event) ?? ended;
      }
      // The log ends before the record does: the run is closed once the step has ended.
      await submitted.done;
      ended ??= await this.#recorded(stepId);
      this.#deps.metrics.steps.inc({ type: 'agent', status: ended.status });
      await this.#closeRun(run.run_id, ended.status);
      const end = taskEndOf(taskId, contextId, ended, now());
      if (!end) return;
      if (end.artifact) {
        bus.publish(
          AgentEvent.artifactUpdate({
            taskId,
            contextId,
            artifact: end.artifact,
            append: false,
            lastChunk: true,
            metadata: undefined,
          }),
        );
      }
      bus.publish(
        AgentEvent.statusUpdate({ taskId, contextId, status: end.status, metadata: undefined }),
      );
    } finally {
      this.#steps.delete(taskId);
    }
  }

  async cancelTask(taskId: string, _bus: ExecutionEventBus): Promise<void> {
    const stepId = this.#steps.get(taskId);
    // Not running here: the request handler cancels it by its record.
    if (stepId === undefined) return;
    await this.#cancelStep(stepId);
  }

  /** Cancels step `stepId`; one that has ended already is left as it ended. */
  async #cancelStep(stepId: string): Promise<void> {
    try {
      await this.#deps.runtime.cancelStep(stepId);
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
    }
  }

  /** The end of step `stepId` as its record has it (a log that ended without its last event). */
  async #recorded(stepId: string): Promise<StepEnd> {
    const step = await this.#deps.runtime.getStep(stepId);
    return step ?? { step_id: stepId, status: 'failed', output: null, error: null };
  }

  /** Ends the task's run: cancelled with a cancelled step, completed otherwise. */
  async #closeRun(runId: string, status: StepEnd['status']): Promise<void> {
    const { runtime, logger } = this.#deps;
    try {
      if (status === 'cancelled') await (await runtime.cancelRun(runId)).done;
      else await runtime.completeRun(runId);
    } catch (err) {
      // The task's end does not depend on it; the operator learns why from the log.
      logger.warn({ err, run_id: runId }, 'an A2A task ended, but its run could not be closed');
    }
  }
}
