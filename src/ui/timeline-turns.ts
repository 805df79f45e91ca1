/**
 * @module A thread's timeline: its turns one row each on a shared time axis (`timeline.ts`,
 * `turnSteps`), their times to first token from the thread's stream, and a clock that draws
 * the live turn longer while the thread is live — a timer of the page, never a request.
 */
import { createTimeline } from './timeline.js';
import { CLOCK_MS } from './timeline-live.js';
import { timelineModel, turnSteps, type TimelineTurn } from './timeline-model.js';

/** What a thread's timeline asks of its page. */
export interface TurnTimelineHooks {
  readonly href: (stepId: string) => string;
  readonly selected: () => string | null;
  /** The turns as the page knows them now, in order. */
  readonly turns: () => readonly TimelineTurn[];
  /** When the thread was made (a turn not started yet waits from there). */
  readonly createdAt: () => string | null;
  /** Each tick of the clock, after the timeline is drawn (the page's durations). */
  readonly tick?: (now: number) => void;
}

/** A thread's timeline; see the module. */
export interface TurnTimeline {
  readonly root: HTMLElement;
  /** A turn's first token came, at `ts` (ms); later ones are not its first. */
  firstToken(stepId: string, ts: number): void;
  draw(now: number): void;
  /** Whether the thread is live: the clock runs while it is. */
  live(isLive: boolean): void;
  clear(): void;
}

export function createTurnTimeline(hooks: TurnTimelineHooks): TurnTimeline {
  const timeline = createTimeline({ href: hooks.href, selected: hooks.selected });
  const firstTokens = new Map<string, number>();
  let clock: ReturnType<typeof setInterval> | null = null;

  function draw(now: number): void {
    const created = hooks.createdAt() ?? new Date(now).toISOString();
    timeline.render(timelineModel(turnSteps(hooks.turns(), created), { now, firstTokens }));
  }

  return {
    root: timeline.root,
    firstToken(stepId, ts) {
      if (!firstTokens.has(stepId)) firstTokens.set(stepId, ts);
    },
    draw,
    live(isLive) {
      if (isLive && clock === null) {
        clock = setInterval(() => {
          const now = Date.now();
          draw(now);
          hooks.tick?.(now);
        }, CLOCK_MS);
      } else if (!isLive && clock !== null) {
        clearInterval(clock);
        clock = null;
      }
    },
    clear() {
      if (clock !== null) clearInterval(clock);
      clock = null;
      firstTokens.clear();
      timeline.clear();
    },
  };
}
