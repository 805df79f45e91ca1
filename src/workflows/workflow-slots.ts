/**
 * @module A workflow's slots in one engine: how many of its threads run, which wait in
 * order, and the refusal of one more past `concurrency` (`drop`, or a full queue).
 */
import { QueueFullError } from '../errors/queue-full-error.js';
import type { WorkflowDefinition } from './workflow-definition.js';

/** A thread waiting for a slot: what starting it needs. */
export interface Waiting {
  readonly id: string;
  readonly input: string;
}

/**
 * An admitted thread: its id, and when it runs at once, a promise of its start being stored
 * (a slower store writes it after the trigger's own read could be answered `queued`).
 */
export type Admitted = readonly [threadId: string, started: Promise<unknown> | undefined];

/** A registered workflow and its threads in this engine. */
export interface WorkflowState {
  readonly definition: WorkflowDefinition;
  flowId: string | null;
  running: number;
  readonly queue: Waiting[];
  /**
   * Triggers are admitted one at a time (check the slots, store the thread, start or queue
   * it): triggers that arrive together cannot all see a free slot.
   */
  admitting: Promise<unknown>;
}

/** A workflow's state before any thread. */
export function workflowState(definition: WorkflowDefinition): WorkflowState {
  return { definition, flowId: null, running: 0, queue: [], admitting: Promise.resolve() };
}

/**
 * Throws `QueueFullError` when one more thread of `s` has no place: every slot taken and
 * `overflow: drop`, or the queue at `maxQueue`.
 */
export function refuseOverflow(s: WorkflowState): void {
  const name = s.definition.name;
  const { max, overflow, maxQueue } = s.definition.concurrency;
  if (s.running < max) return;
  if (overflow === 'drop') {
    throw new QueueFullError(
      `workflow ${name} runs ${s.running} threads, its most (overflow: drop)`,
      {
        details: { workflow: name, running: s.running, max },
      },
    );
  }
  if (s.queue.length >= maxQueue) {
    throw new QueueFullError(
      `workflow ${name} has ${s.queue.length} threads waiting, its most (max_queue ${maxQueue})`,
      { details: { workflow: name, queued: s.queue.length, max_queue: maxQueue } },
    );
  }
}
