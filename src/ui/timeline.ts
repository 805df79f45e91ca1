/**
 * @module The timeline of a run's (or a thread's) steps, drawn: each step a bar on a shared
 * time axis — its start offset from the run's first step, its queue wait shaded before the
 * bar, its duration, a tick at its first token — nested by the step tree, with its tokens
 * and cost beside it and every figure in its tooltip. The layout is `timeline-model.ts`'s;
 * this only draws it. Bars are placed with CSSOM (`style.left`), which the page's
 * Content-Security-Policy allows (an inline `style` attribute it would not). The axis is
 * measured as drawn: on a narrow page it has fewer ticks, so that no two labels touch, and it
 * is fitted again when its width changes.
 */
import { el, setText } from './dom.js';
import { cost, duration, tokens } from './format.js';
import { axisTicks, percentOf, type TimelineModel, type TimelineRow } from './timeline-model.js';

/** What a timeline is told to do by its page. */
export interface TimelineHooks {
  /** The link a step's row opens (its detail). */
  readonly href: (stepId: string) => string;
  /** Whether a step is the one opened (its row is marked). */
  readonly selected?: () => string | null;
  /** What it says while there is no step (default: how to submit one to a run). */
  readonly empty?: string;
}

/** A drawn timeline: {@link Timeline.render} draws a model again, keeping the rows it has. */
export interface Timeline {
  readonly root: HTMLElement;
  render(model: TimelineModel): void;
  clear(): void;
}

interface RowNodes {
  readonly row: HTMLElement;
  readonly link: HTMLAnchorElement;
  readonly status: HTMLElement;
  readonly queue: HTMLElement;
  readonly bar: HTMLElement;
  readonly ttft: HTMLElement;
  readonly took: HTMLElement;
  readonly used: HTMLElement;
  readonly spent: HTMLElement;
}

function attr(el: HTMLElement, name: string, value: string): void {
  if (el.getAttribute(name) !== value) el.setAttribute(name, value);
}

/** The least room between two labels of the axis, px. */
const TICK_GAP_PX = 8;

/** Whether two of the axis's labels touch (or come closer than {@link TICK_GAP_PX}). */
function crowded(axis: HTMLElement): boolean {
  // Not laid out (hidden): nothing to measure; it is fitted again when it has a width.
  if (axis.clientWidth === 0) return false;
  const boxes = [...axis.children].map((c) => c.getBoundingClientRect());
  boxes.sort((a, b) => a.left - b.left);
  return boxes.some((box, i) => {
    const next = boxes[i + 1];
    return next !== undefined && box.right + TICK_GAP_PX > next.left;
  });
}

/** `ms` rounded for a data attribute (a test reads them). */
const ms = (value: number | null): string => (value === null ? '' : String(Math.round(value)));

/** A timeline in a new `<section>`; see the module. */
export function createTimeline(hooks: TimelineHooks): Timeline {
  const axis = el('div', { class: 'tl-axis', 'data-testid': 'timeline-axis' });
  const rowsBox = el('div', { class: 'tl-rows', 'data-testid': 'timeline-rows' });
  const empty = el(
    'p',
    { class: 'empty', 'data-testid': 'timeline-empty' },
    hooks.empty ?? 'No steps yet: submit one with POST /v1/runs/{run_id}/steps.',
  );
  const legend = el(
    'p',
    { class: 'tl-legend muted' },
    el('span', { class: 'tl-key tl-key-queue' }),
    ' queued ',
    el('span', { class: 'tl-key tl-key-bar' }),
    ' running → ended ',
    el('span', { class: 'tl-key tl-key-ttft' }),
    ' first token',
  );
  const root = el(
    'section',
    { class: 'timeline', 'data-testid': 'timeline' },
    el(
      'div',
      { class: 'tl-head' },
      el('span', { class: 'tl-name' }, 'step'),
      axis,
      el('span', { class: 'tl-figures' }, 'tokens · cost'),
    ),
    rowsBox,
    empty,
    legend,
  );
  const rows = new Map<string, RowNodes>();

  function rowNodes(r: TimelineRow): RowNodes {
    let n = rows.get(r.stepId);
    if (n) return n;
    const link = el('a', { href: hooks.href(r.stepId), 'data-testid': 'timeline-name' });
    const status = el('span', { class: 'status', 'data-testid': 'timeline-status' });
    const queue = el('span', { class: 'tl-queue', 'data-testid': 'timeline-queue' });
    const bar = el('span', { class: 'tl-bar', 'data-testid': 'timeline-bar' });
    const ttft = el('span', { class: 'tl-ttft', 'data-testid': 'timeline-ttft' });
    const took = el('span', { class: 'tl-took', 'data-testid': 'timeline-duration' });
    const used = el('span', { class: 'num', 'data-testid': 'timeline-tokens' });
    const spent = el('span', { class: 'num', 'data-testid': 'timeline-cost' });
    const row = el(
      'div',
      { class: 'tl-row', 'data-testid': 'timeline-row', 'data-step-id': r.stepId },
      el('span', { class: 'tl-name' }, status, link),
      el('span', { class: 'tl-track' }, queue, bar, ttft, took),
      el('span', { class: 'tl-figures' }, used, spent),
    );
    n = { row, link, status, queue, bar, ttft, took, used, spent };
    rows.set(r.stepId, n);
    return n;
  }

  function drawRow(r: TimelineRow, model: TimelineModel): HTMLElement {
    const n = rowNodes(r);
    const span = model.spanMs;
    const start = r.startOffsetMs ?? r.endOffsetMs;
    attr(n.row, 'data-depth', String(r.depth));
    attr(n.row, 'data-status', r.status);
    attr(n.row, 'data-type', r.type);
    attr(n.row, 'data-live', r.live ? 'true' : 'false');
    attr(n.row, 'data-created-ms', ms(r.createdOffsetMs));
    attr(n.row, 'data-start-ms', ms(r.startOffsetMs));
    attr(n.row, 'data-end-ms', ms(r.endOffsetMs));
    attr(n.row, 'data-queue-ms', ms(r.queueMs));
    attr(n.row, 'data-duration-ms', ms(r.durationMs));
    attr(n.row, 'data-ttft-ms', ms(r.ttftMs));
    n.row.classList.toggle('selected', hooks.selected?.() === r.stepId);
    n.row.style.setProperty('--depth', String(r.depth));
    setText(n.link, r.name);
    setText(n.status, r.status);
    n.status.dataset['status'] = r.status;
    // The queue wait: from its creation to its start (or to its end, never started).
    n.queue.style.left = `${percentOf(r.createdOffsetMs, span)}%`;
    n.queue.style.width = `${percentOf(start - r.createdOffsetMs, span)}%`;
    n.queue.hidden = r.queueMs <= 0;
    n.bar.hidden = r.startOffsetMs === null;
    n.bar.style.left = `${percentOf(start, span)}%`;
    n.bar.style.width = `${percentOf(r.endOffsetMs - start, span)}%`;
    n.bar.dataset['status'] = r.status;
    n.ttft.hidden = r.ttftMs === null;
    if (r.ttftMs !== null) n.ttft.style.left = `${percentOf(start + r.ttftMs, span)}%`;
    n.took.style.left = `${percentOf(r.endOffsetMs, span)}%`;
    setText(
      n.took,
      r.durationMs === null ? `queued ${duration(r.queueMs)}` : duration(r.durationMs),
    );
    setText(n.used, tokens(r.tokensIn, r.tokensOut));
    setText(n.spent, cost(r.costUsd));
    attr(n.row, 'title', tooltip(r));
    return n.row;
  }

  function placeTicks(ticks: readonly number[], spanMs: number): void {
    const labels = ticks.map((t) => {
      const tick = el('span', { class: 'tl-tick', 'data-testid': 'timeline-tick' }, duration(t));
      tick.style.left = `${percentOf(t, spanMs)}%`;
      tick.dataset['ms'] = String(t);
      return tick;
    });
    axis.replaceChildren(...labels);
  }

  /** The model's ticks, or fewer (two parts at least) while two labels touch: a narrow page. */
  function drawAxis(model: TimelineModel): void {
    let count = model.ticks.length;
    placeTicks(model.ticks, model.spanMs);
    for (let parts = count - 2; parts >= 2 && crowded(axis); parts -= 1) {
      const { ticks } = axisTicks(model.spanMs, parts);
      // 1, 2, 5 × 10^k: a part fewer may give the same ticks; those were just measured.
      if (ticks.length === count) continue;
      count = ticks.length;
      placeTicks(ticks, model.spanMs);
    }
  }

  let drawn: TimelineModel | null = null;
  // A page made narrower (or a hidden axis shown) is fitted again, without a new model.
  new ResizeObserver(() => {
    if (drawn) drawAxis(drawn);
  }).observe(axis);

  return {
    root,
    render(model) {
      drawn = model;
      drawAxis(model);
      const keep = new Set<string>();
      model.rows.forEach((r, i) => {
        keep.add(r.stepId);
        const row = drawRow(r, model);
        if (rowsBox.children[i] !== row) rowsBox.insertBefore(row, rowsBox.children[i] ?? null);
      });
      for (const [id, n] of rows) {
        if (!keep.has(id)) {
          n.row.remove();
          rows.delete(id);
        }
      }
      empty.hidden = model.rows.length > 0;
      attr(root, 'data-span-ms', String(Math.round(model.spanMs)));
    },
    clear() {
      drawn = null;
      rows.clear();
      rowsBox.replaceChildren();
      axis.replaceChildren();
    },
  };
}

/** Every figure of a row, for its tooltip. */
function tooltip(r: TimelineRow): string {
  const lines = [
    `${r.name} (${r.type || 'step'}) ${r.status}`,
    `starts at +${duration(r.startOffsetMs ?? r.createdOffsetMs)}`,
    `queued ${duration(r.queueMs)}`,
    r.durationMs === null
      ? 'never started'
      : `ran ${duration(r.durationMs)}${r.live ? ' so far' : ''}`,
  ];
  if (r.ttftMs !== null) lines.push(`first token after ${duration(r.ttftMs)}`);
  lines.push(`tokens ${tokens(r.tokensIn, r.tokensOut)}`, `cost ${cost(r.costUsd)}`);
  return lines.join('\n');
}
