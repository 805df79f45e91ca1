/**
 * @module Who waits for a message's end (`ask`; issue 46): told when it ends here, or — ended
 * before anyone asked, or merged into another — from its record. A message that waits on a
 * wake keeps its askers waiting (in the asker's memory, not the actor's).
 */
import { ConflictError } from '../errors/conflict-error.js';
import type { StepEnding } from '../runs/submitted-step.js';
import { STEP_ENDED, type StepRecord, type StepStatus } from '../store/records.js';
import type { RunStore } from '../store/run-store.js';

/** How soon a message handled elsewhere is first looked at, and at most how rarely, ms. */
const POLL_MS = 20;
const MAX_POLL_MS = 500;

/** See the module. */
export class MessageAnswers {
  readonly #store: RunStore;
  readonly #asks = new Map<string, ((ending: StepEnding | Error) => void)[]>();

  constructor(store: RunStore) {
    this.#store = store;
  }

  /**
   * The end of message `stepId` as its step ends (`succeeded`, `failed`, `cancelled`), once it
   * does: the output or error of the handler that handled it (for a merged message, of the
   * message it was merged into). Rejects when its end could not be stored.
   */
  ended(stepId: string): Promise<StepEnding> {
    return new Promise<StepEnding>((resolve, reject) => {
      const settle = this.#listen(stepId, resolve, reject);
      // Ended before anyone asked (a token seen before, a quick handler): from its record.
      void this.#store.getStep(stepId).then((step) => {
        if (!step || !STEP_ENDED.has(step.status)) return;
        const into = (step.output as { merged_into?: unknown } | null)?.merged_into;
        if (typeof into === 'string' && into !== stepId) {
          this.#drop(stepId, settle);
          this.ended(into).then(resolve, reject);
          return;
        }
        this.#answer(stepId, { status: step.status, output: step.output, error: step.error });
      }, reject);
    });
  }

  /**
   * The end of message `stepId`, accepted just now and not yet handed to its actor: nothing
   * can have ended it, so its record is not read.
   */
  watch(stepId: string): Promise<StepEnding> {
    return new Promise<StepEnding>((resolve, reject) => {
      this.#listen(stepId, resolve, reject);
    });
  }

  #listen(
    stepId: string,
    resolve: (ending: StepEnding) => void,
    reject: (err: Error) => void,
  ): (ending: StepEnding | Error) => void {
    const settle = (ending: StepEnding | Error): void => {
      if (ending instanceof Error) reject(ending);
      else resolve(ending);
    };
    const list = this.#asks.get(stepId) ?? [];
    list.push(settle);
    this.#asks.set(stepId, list);
    return settle;
  }

  /**
   * The end of message `stepId`, handled elsewhere (a fleet's replica): its record, read
   * until it has ended — every `POLL_MS` at first, then less often, up to `MAX_POLL_MS`.
   */
  async polled(stepId: string): Promise<StepEnding> {
    for (let wait = POLL_MS; ; wait = Math.min(MAX_POLL_MS, wait * 2)) {
      const step = await this.#store.getStep(stepId);
      if (step && STEP_ENDED.has(step.status)) {
        const into = (step.output as { merged_into?: unknown } | null)?.merged_into;
        if (typeof into === 'string' && into !== stepId) return this.polled(into);
        return { status: step.status, output: step.output, error: step.error };
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  #drop(stepId: string, settle: (ending: StepEnding | Error) => void): void {
    const list = this.#asks.get(stepId)?.filter((s) => s !== settle) ?? [];
    if (list.length > 0) this.#asks.set(stepId, list);
    else this.#asks.delete(stepId);
  }

  #answer(stepId: string, ending: StepEnding | Error): void {
    const list = this.#asks.get(stepId);
    if (!list) return;
    this.#asks.delete(stepId);
    for (const settle of list) settle(ending);
  }

  /** A message (and those merged into it) ended as `status` (`waiting`: not yet). */
  messageEnded(
    stepId: string,
    merged: readonly StepRecord[],
    status: StepStatus | null,
    ending: StepEnding | null,
  ): void {
    if (status === 'waiting') return;
    const answer =
      status === null || ending === null
        ? new ConflictError(`the end of message ${stepId} could not be stored; it runs again`)
        : ending;
    this.#answer(stepId, answer);
    for (const m of merged) this.#answer(m.step_id, answer);
  }
}
