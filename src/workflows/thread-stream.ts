/**
 * @module Following a thread: the events of its turns' steps in order (tokens as the role
 * produces them, narration, metrics, each turn's end), then the thread's end. Each frame has
 * an id `<turn>.<seq>` (the turn's number, the event's place in its step's log), so a reader
 * that reconnects with the last id it saw resumes after it — the resume rule of a step's
 * stream, across turns. The thread's own end is frame `thread_end`, id `<turns+1>.0`.
 */
import type { StepEvent } from '../streams/events.js';
import { readThread, THREAD_ENDED, type ThreadView } from './thread-records.js';
import type { WorkflowEngine } from './workflow-engine.js';

/** How long a follow waits for news before it reads the thread again, ms. */
const POLL_MS = 200;

/** One frame of a thread's stream. */
export type ThreadFrame =
  | {
      readonly id: string;
      readonly kind: 'turn_event';
      readonly turn: number;
      readonly role: string;
      readonly event: StepEvent;
    }
  | { readonly id: string; readonly kind: 'thread_end'; readonly thread: ThreadView };

/** Where a reader resumes: after event `seq` of turn `turn` (`0.0`: from the start). */
export interface ThreadCursor {
  readonly turn: number;
  readonly seq: number;
}

/** Parses a frame id (`Last-Event-ID`); `null` when it is not one. */
export function parseThreadCursor(id: string): ThreadCursor | null {
  const m = /^(\d{1,9})\.(\d{1,12})$/.exec(id);
  return m ? { turn: Number(m[1]), seq: Number(m[2]) } : null;
}

/**
 * The frames of thread `threadId` after `after`, live: it ends after `thread_end`, or when
 * `signal` aborts. `NotFoundError` is the caller's to raise (it yields nothing for no thread).
 */
export async function* followThread(
  engine: WorkflowEngine,
  threadId: string,
  after: ThreadCursor = { turn: 0, seq: 0 },
  signal?: AbortSignal,
): AsyncGenerator<ThreadFrame, void> {
  const runtime = engine.runtime;
  let turn = Math.max(1, after.turn);
  let afterSeq = after.turn >= 1 ? after.seq : 0;
  for (;;) {
    if (signal?.aborted) return;
    // Wake on the engine's news, the reader's going, or look again after a while (a thread
    // run elsewhere). Every listener is taken off again when the wait is over.
    let wake: () => void = () => undefined;
    const woken = new Promise<void>((resolve) => {
      wake = resolve;
    });
    const onAbort = (): void => {
      wake();
    };
    const off = engine.onChange(threadId, onAbort);
    signal?.addEventListener('abort', onAbort, { once: true });
    let poll: NodeJS.Timeout | undefined;
    try {
      const t = await readThread(runtime, threadId);
      if (!t) return;
      const current = t.turns.find((x) => x.n === turn);
      if (current) {
        for await (const event of runtime.followStep(current.step_id, {
          afterSeq,
          ...(signal ? { signal } : {}),
        })) {
          yield {
            id: `${turn}.${event.seq}`,
            kind: 'turn_event',
            turn,
            role: current.role,
            event,
          };
        }
        if (signal?.aborted) return;
        // The step's log ended; a turn run again after a crash has a newer step.
        const again = await readThread(runtime, threadId);
        const now = again?.turns.find((x) => x.n === turn);
        if (now && now.step_id !== current.step_id) {
          afterSeq = 0;
          continue;
        }
        turn += 1;
        afterSeq = 0;
        continue;
      }
      if (THREAD_ENDED.has(t.status)) {
        if (after.turn <= t.turns.length) {
          yield { id: `${t.turns.length + 1}.0`, kind: 'thread_end', thread: t };
        }
        return;
      }
      poll = setTimeout(wake, POLL_MS);
      poll.unref();
      await woken;
    } finally {
      clearTimeout(poll);
      off();
      signal?.removeEventListener('abort', onAbort);
    }
  }
}
