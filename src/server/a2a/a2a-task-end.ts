/**
 * @module How an A2A task ends, from its agent step's record: `succeeded` is `COMPLETED` with
 * the step's output as the artifact `output`; `cancelled` is `CANCELED`; `failed` is `FAILED`
 * with a status message saying the error's code and message (and the code, the step and
 * whether it may be retried in the message's metadata). One mapping for the executor, which
 * sees the step end, and the task store, which finds a step ended after a restart.
 */
import { TaskState, type Task, type TaskStatus } from '@a2a-js/sdk';
import type { StepRecord } from '../../store/records.js';
import type { StepEvent } from '../../streams/events.js';
import { agentMessage, outputArtifact, outputPart } from './a2a-parts.js';

/** The states a task ends in: it changes no more. */
export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
]);

/** Whether `state` is one a task ends in. */
export function isTerminal(state: TaskState | undefined): boolean {
  return state !== undefined && TERMINAL_STATES.has(state);
}

/** What a task's end is read from: its step's record, or the last event of its log. */
export type StepEnd = Pick<StepRecord, 'step_id' | 'status' | 'output' | 'error'>;

/** The end of a step as its log's last event says, or `null` for any other event. */
export function stepEndOf(event: StepEvent): StepEnd | null {
  if (event.type === 'end') {
    return { step_id: event.step_id, status: 'succeeded', output: event.output, error: null };
  }
  if (event.type === 'error') {
    const { code, message, retriable, details } = event;
    return {
      step_id: event.step_id,
      status: code === 'CANCELLED' ? 'cancelled' : 'failed',
      output: null,
      error: { code, message, retriable, ...(details === undefined ? {} : { details }) },
    };
  }
  return null;
}

/** The end of a task whose step ended as `step` says. */
export interface TaskEnd {
  readonly status: TaskStatus;
  /** The artifact `output` whole, for a step that succeeded. */
  readonly artifact: Task['artifacts'][number] | null;
}

/**
 * The end of task `taskId` (of `contextId`) whose agent step is `step`, or `null` while the
 * step has not ended. `now` is the status's timestamp (ISO 8601).
 */
export function taskEndOf(
  taskId: string,
  contextId: string,
  step: StepEnd,
  now: string,
): TaskEnd | null {
  switch (step.status) {
    case 'succeeded':
      return {
        status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: now },
        artifact: outputArtifact([outputPart(step.output)]),
      };
    case 'cancelled':
      return {
        status: {
          state: TaskState.TASK_STATE_CANCELED,
          message: agentMessage(taskId, contextId, `step ${step.step_id} was cancelled`, {
            step_id: step.step_id,
          }),
          timestamp: now,
        },
        artifact: null,
      };
    case 'failed': {
      const code = step.error?.code ?? 'INTERNAL';
      const why = step.error?.message ?? 'the step failed';
      return {
        status: {
          state: TaskState.TASK_STATE_FAILED,
          message: agentMessage(taskId, contextId, `${code}: ${why}`, {
            code,
            step_id: step.step_id,
            retriable: step.error?.retriable ?? false,
          }),
          timestamp: now,
        },
        artifact: null,
      };
    }
    default:
      return null;
  }
}

/** `task` ended as `end` says: its status, and its artifact `output` replaced when there is one. */
export function endedTask(task: Task, end: TaskEnd): Task {
  const artifacts = end.artifact
    ? [...task.artifacts.filter((a) => a.artifactId !== end.artifact?.artifactId), end.artifact]
    : task.artifacts;
  return { ...task, status: end.status, artifacts };
}
