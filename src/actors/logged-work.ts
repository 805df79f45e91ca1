/**
 * @module What a step run again must reproduce: the work events its log holds already (a
 * step going on after an approval, or taken again after its fleet worker died). The work,
 * run from the start, emits them again; each is checked against the log by its content —
 * a token by its text, a `tool_suggest` by its tool and arguments, a `fact` by its type and
 * data, a `narration` by its text, `metrics` by type — and not logged twice. `metrics` and
 * `narration` may be dropped under pressure (STREAM-2003), and a first run may have made
 * some a run again does not (an approval's narration), so the log's are passed over when
 * they do not come again. The first event that differs is a {@link WorkerLostError}: the client has seen the
 * first attempt's output, and must never get a second attempt's rest spliced onto it.
 */
import { canonicalJson } from '../context/canonical-json.js';
import { WorkerLostError } from '../errors/worker-lost-error.js';
import type { StepEvent } from '../streams/events.js';

/** The events of a step's work (what its handler emits), as the log holds them. */
const WORK: ReadonlySet<string> = new Set([
  'token',
  'tool_suggest',
  'fact',
  'metrics',
  'narration',
]);
/** Work events that may be missing from a log, or from a run again. */
const DROPPABLE: ReadonlySet<string> = new Set(['metrics', 'narration']);

/** An event of the work as emitted: its type and fields (no `seq`, `ts`, `step_id`). */
export type EmittedWork = { readonly type: string } & Readonly<Record<string, unknown>>;

/** What the content of an event is, for the comparison. */
function contentOf(event: EmittedWork | StepEvent): string {
  const e = event as Readonly<Record<string, unknown>>;
  switch (event.type) {
    case 'token':
      return String(e['t']);
    case 'narration':
      return String(e['text']);
    case 'tool_suggest':
      return canonicalJson({ tool: e['tool'], args: e['args'] ?? null });
    case 'fact': {
      const fact = (e['fact'] ?? {}) as Readonly<Record<string, unknown>>;
      return canonicalJson({ type: fact['type'] ?? null, data: fact['data'] ?? null });
    }
    default:
      return '';
  }
}

/** The log's work events a step run again must reproduce; see the module. */
export class LoggedWork {
  readonly #stepId: string;
  readonly #logged: readonly StepEvent[];
  #at = 0;

  /** `events`: the step's log (its work events are kept, the rest ignored). */
  constructor(stepId: string, events: readonly StepEvent[]) {
    this.#stepId = stepId;
    this.#logged = events.filter((e) => WORK.has(e.type));
  }

  /** Whether logged events are still to be reproduced. */
  get pending(): boolean {
    return this.#at < this.#logged.length;
  }

  /**
   * Checks `event`, emitted again: `true` when it is the log's (it is not logged again),
   * `false` when the log's events are all reproduced (it is new: log it). Throws
   * {@link WorkerLostError} when it differs from what the log holds at this point.
   */
  reproduces(event: EmittedWork): boolean {
    if (!this.pending) return false;
    if (DROPPABLE.has(event.type)) {
      // The log's own here: passed over. Else the log's droppable ones that differ are
      // passed over (the first run made them, this one need not: an approval's narration);
      // one made anew amid what the log holds is dropped, as it may be under pressure.
      for (let logged = this.#logged[this.#at]; logged !== undefined;) {
        if (logged.type === event.type && contentOf(logged) === contentOf(event)) {
          this.#at++;
          return true;
        }
        if (!DROPPABLE.has(logged.type)) return true;
        logged = this.#logged[++this.#at];
      }
      return false;
    }
    // The log's droppable events are passed over: the run again may not have made them.
    let logged = this.#logged[this.#at];
    while (logged !== undefined && DROPPABLE.has(logged.type)) logged = this.#logged[++this.#at];
    if (logged === undefined) return false;
    if (logged.type !== event.type || contentOf(logged) !== contentOf(event)) {
      throw this.#diverged(
        logged,
        `${event.type} ${JSON.stringify(contentOf(event)).slice(0, 80)}`,
      );
    }
    this.#at++;
    return true;
  }

  /**
   * Throws {@link WorkerLostError} when the work ended with logged events it did not make
   * again (droppable ones aside).
   */
  checkEnd(): void {
    const left = this.#logged.slice(this.#at).find((e) => !DROPPABLE.has(e.type));
    if (left) throw this.#diverged(left, 'its end');
  }

  #diverged(logged: StepEvent, got: string): WorkerLostError {
    return new WorkerLostError(
      `step ${this.#stepId} was run again after its worker was lost, and its output differs from what its log holds at seq ${logged.seq} (${logged.type} there, ${got} now): it ends here rather than join two attempts' output`,
      { details: { reason: 'diverged', seq: logged.seq } },
    );
  }
}
