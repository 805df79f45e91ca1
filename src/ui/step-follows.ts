/**
 * @module The step streams a view follows (`GET /v1/steps/{id}/stream`), each into its log:
 * {@link StepFollows.sync} starts the wanted ones and stops the others (their logs dropped:
 * followed again later, a step starts from its first event). The run view and the thread
 * view share it.
 */
import { followStep } from './api.js';
import type { StepEventData } from './api-types.js';
import { createStepLog, type StepLog } from './step-detail.js';

/** What the followed streams tell their view. */
export interface StepFollowHooks {
  /** An event of step `id`, logged. */
  readonly event: (id: string, type: string, data: StepEventData) => void;
  /** The stream of a step failed for good (404, 401, …). */
  readonly failed: (err: unknown) => void;
}

/** A view's followed step streams; see {@link createStepFollows}. */
export interface StepFollows {
  /** Follows the steps of `wanted` not followed yet; stops following the others. */
  sync(wanted: readonly string[]): void;
  /** Stops every stream. */
  stop(): void;
}

/**
 * The streams of a view, logged in `logs` (which may hold other logs too: a thread's turns',
 * from the thread's stream; those it leaves alone).
 */
export function createStepFollows(logs: Map<string, StepLog>, hooks: StepFollowHooks): StepFollows {
  const follows = new Map<string, AbortController>();
  let stopped = false;

  function follow(id: string): void {
    const log = createStepLog();
    const ctrl = new AbortController();
    logs.set(id, log);
    follows.set(id, ctrl);
    log.onEvent = (type, data) => {
      if (!stopped) hooks.event(id, type, data);
    };
    followStep(
      id,
      (type, data) => {
        log.push(type, data);
      },
      ctrl.signal,
    )
      .catch((err: unknown) => {
        if (stopped) return;
        log.failed = err;
        hooks.failed(err);
      })
      .finally(() => {
        if (follows.get(id) === ctrl) follows.delete(id);
      });
  }

  return {
    sync(wanted) {
      if (stopped) return;
      for (const [id, ctrl] of follows) {
        if (!wanted.includes(id)) {
          ctrl.abort();
          follows.delete(id);
          logs.delete(id);
        }
      }
      for (const id of wanted) if (!logs.has(id)) follow(id);
    },
    stop() {
      stopped = true;
      for (const ctrl of follows.values()) ctrl.abort();
      follows.clear();
    },
  };
}
