/**
 * @module The layout of a run's timeline, without a DOM: from the API's steps (and the time
 * of now, for those still going on) the rows a timeline draws — each step's place in the
 * tree (depth, order), its start offset on the run's time axis, its queue wait, duration and
 * time to first token, its status, tokens and cost — and the axis (its span and ticks).
 * `timeline.ts` draws it; the unit tests check it (test/ui/timeline-model.test.ts).
 */

/** What the timeline reads of a step: a subset of the API's Step body (or a thread's turn). */
export interface TimelineStep {
  readonly step_id: string;
  readonly parent_step_id?: string | null;
  readonly name?: string;
  readonly type?: string;
  readonly status: string;
  readonly actor_path?: readonly string[];
  /** When it was made (submitted, or asked for by its parent): the start of its queue wait. */
  readonly created_at: string;
  /** When it started; `null` (or absent) while it has not. */
  readonly started_at?: string | null;
  readonly ended_at: string | null;
  /** When it logged its first token; absent or `null` when it has streamed none. */
  readonly first_token_at?: string | null;
  readonly budget_usage?: {
    readonly tokens_in: number;
    readonly tokens_out: number;
    readonly cost_usd: number;
  };
}

/** One bar of the timeline: a step, where it sits in the tree and on the time axis. */
export interface TimelineRow {
  readonly stepId: string;
  readonly parentStepId: string | null;
  /** 0 for a step without a parent in the list; its parent's depth + 1 otherwise. */
  readonly depth: number;
  readonly name: string;
  readonly type: string;
  readonly status: string;
  /** From the axis origin to its creation, ms. */
  readonly createdOffsetMs: number;
  /** From the axis origin to its start, ms; `null` for a step that never started. */
  readonly startOffsetMs: number | null;
  /** From the origin to where its bar ends: its end, or now while it goes on. */
  readonly endOffsetMs: number;
  /** Created to started (to its end or now when it never started), ms. */
  readonly queueMs: number;
  /** Started to ended (or now while it runs), ms; `null` for a step that never started. */
  readonly durationMs: number | null;
  /** Started to its first token, ms; `null` without one. */
  readonly ttftMs: number | null;
  /** It has not ended: its bar (or its queue wait) reaches now and grows with the clock. */
  readonly live: boolean;
  readonly tokensIn: number;
  readonly tokensOut: number;
  readonly costUsd: number;
}

/** A timeline: its rows in tree order, and its time axis. */
export interface TimelineModel {
  /** The axis's zero: the earliest step's creation, ms since the epoch (`NaN`: no step). */
  readonly originMs: number;
  /** How long the axis is, ms (at least 1): to the latest end, or now. */
  readonly spanMs: number;
  /** The ticks' offsets from the origin, ms: 0, then every {@link tickMs} within the span. */
  readonly ticks: readonly number[];
  /** The distance between ticks, ms: 1, 2 or 5 times a power of ten. */
  readonly tickMs: number;
  readonly rows: readonly TimelineRow[];
}

/** Options of {@link timelineModel}. */
export interface TimelineOptions {
  /** Now, ms since the epoch: where the bars of steps still going on end. */
  readonly now: number;
  /** Times to first token learnt elsewhere (a step's live stream), ms since the epoch, by step id. */
  readonly firstTokens?: ReadonlyMap<string, number>;
  /** The axis's zero, ms since the epoch; default the earliest step's creation. */
  readonly originMs?: number;
  /** At most this many ticks; default 8. */
  readonly maxTicks?: number;
}

/** The statuses a step's record ends with. */
const ENDED: ReadonlySet<string> = new Set(['succeeded', 'failed', 'cancelled']);

/** ms since the epoch of an ISO time; `null` for `null`, absent or unparseable. */
function msOf(iso: string | null | undefined): number | null {
  if (iso === null || iso === undefined) return null;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? null : ms;
}

/**
 * The timeline of `steps` (see the module). Rows nest by `parent_step_id`: a step follows
 * its parent, siblings in creation order; a step whose parent is not in the list is a root.
 * A step not ended reaches `now` (a queued one's queue wait does); a step's times never go
 * before its creation on the axis (clocks of two hosts may disagree).
 */
export function timelineModel(
  steps: readonly TimelineStep[],
  options: TimelineOptions,
): TimelineModel {
  const { now } = options;
  const created = steps.map((s) => msOf(s.created_at) ?? now);
  const origin = options.originMs ?? (created.length > 0 ? Math.min(...created) : NaN);
  const rows: TimelineRow[] = [];
  for (const { step, depth } of treeOrder(steps, created)) {
    rows.push(rowOf(step, depth, origin, now, options.firstTokens?.get(step.step_id)));
  }
  const latest = rows.reduce((max, r) => Math.max(max, r.endOffsetMs), 0);
  const spanMs = Math.max(1, latest);
  const { ticks, tickMs } = axisTicks(spanMs, options.maxTicks ?? 8);
  return { originMs: origin, spanMs, ticks, tickMs, rows };
}

/**
 * The ticks of an axis of `spanMs`: 0, then every {@link tickStep} within the span — at most
 * `maxTicks` parts. A drawn axis asks again with fewer when its labels would touch.
 */
export function axisTicks(
  spanMs: number,
  maxTicks: number,
): { readonly ticks: readonly number[]; readonly tickMs: number } {
  const tickMs = tickStep(spanMs, maxTicks);
  const ticks: number[] = [];
  for (let t = 0; t <= spanMs; t += tickMs) ticks.push(t);
  return { ticks, tickMs };
}

function rowOf(
  step: TimelineStep,
  depth: number,
  origin: number,
  now: number,
  liveFirstToken: number | undefined,
): TimelineRow {
  const createdAt = msOf(step.created_at) ?? now;
  const startedAt = msOf(step.started_at);
  const endedAt = msOf(step.ended_at);
  const live = endedAt === null && !ENDED.has(step.status);
  // An ended step without an `ended_at` (none is stored so) ends where it started.
  const end = Math.max(createdAt, endedAt ?? (live ? now : (startedAt ?? createdAt)));
  const start = startedAt === null ? null : Math.min(Math.max(startedAt, createdAt), end);
  const firstToken = msOf(step.first_token_at) ?? liveFirstToken ?? null;
  const usage = step.budget_usage;
  return {
    stepId: step.step_id,
    parentStepId: step.parent_step_id ?? null,
    depth,
    name: step.name ?? step.actor_path?.at(-1) ?? step.step_id,
    type: step.type ?? '',
    status: step.status,
    createdOffsetMs: createdAt - origin,
    startOffsetMs: start === null ? null : start - origin,
    endOffsetMs: end - origin,
    queueMs: (start ?? end) - createdAt,
    durationMs: start === null ? null : end - start,
    ttftMs: start === null || firstToken === null ? null : Math.max(0, firstToken - start),
    live,
    tokensIn: usage?.tokens_in ?? 0,
    tokensOut: usage?.tokens_out ?? 0,
    costUsd: usage?.cost_usd ?? 0,
  };
}

/** `steps` depth first: each step after its parent, siblings by creation time, then by list order. */
function treeOrder(
  steps: readonly TimelineStep[],
  created: readonly number[],
): { step: TimelineStep; depth: number }[] {
  const ids = new Set(steps.map((s) => s.step_id));
  const children = new Map<string | null, number[]>();
  steps.forEach((s, i) => {
    const parent = s.parent_step_id ?? null;
    const key = parent !== null && ids.has(parent) && parent !== s.step_id ? parent : null;
    const list = children.get(key);
    if (list) list.push(i);
    else children.set(key, [i]);
  });
  for (const list of children.values()) {
    list.sort((a, b) => (created[a] ?? 0) - (created[b] ?? 0) || a - b);
  }
  const out: { step: TimelineStep; depth: number }[] = [];
  const seen = new Set<string>();
  const visit = (key: string | null, depth: number): void => {
    for (const i of children.get(key) ?? []) {
      const step = steps[i];
      // A cycle of parents (no store makes one) is cut where it closes.
      if (!step || seen.has(step.step_id)) continue;
      seen.add(step.step_id);
      out.push({ step, depth });
      visit(step.step_id, depth + 1);
    }
  };
  visit(null, 0);
  // Steps only reachable through a cycle: roots, so none is lost.
  steps.forEach((step) => {
    if (seen.has(step.step_id)) return;
    seen.add(step.step_id);
    out.push({ step, depth: 0 });
    visit(step.step_id, 1);
  });
  return out;
}

/** The smallest 1, 2 or 5 × 10^k ms that cuts `spanMs` in at most `maxTicks` parts. */
export function tickStep(spanMs: number, maxTicks: number): number {
  const rough = spanMs / Math.max(1, maxTicks);
  let power = 1;
  while (power * 10 <= rough) power *= 10;
  for (const m of [1, 2, 5, 10]) {
    if (m * power >= rough) return m * power;
  }
  return 10 * power;
}

/** Where `offsetMs` falls on an axis of `spanMs`, in percent (0..100). */
export function percentOf(offsetMs: number, spanMs: number): number {
  if (!(spanMs > 0)) return 0;
  return Math.min(100, Math.max(0, (offsetMs / spanMs) * 100));
}

/** What the timeline reads of a thread's turn (`GET /v1/threads/{id}`'s `turns`). */
export interface TimelineTurn {
  readonly n: number;
  readonly role: string;
  readonly step_id: string;
  readonly status: string;
  readonly started_at: string | null;
  readonly ended_at: string | null;
  readonly tokens_in: number;
  readonly tokens_out: number;
  readonly cost_usd: number;
}

/**
 * A thread's turns as timeline steps, one row each (`<n>. <role>`): a turn's bar starts
 * when its step started; one not started yet waits from the thread's creation.
 */
export function turnSteps(turns: readonly TimelineTurn[], threadCreatedAt: string): TimelineStep[] {
  return turns.map((t) => ({
    step_id: t.step_id,
    parent_step_id: null,
    name: `${t.n}. ${t.role}`,
    type: 'turn',
    status: t.status,
    created_at: t.started_at ?? threadCreatedAt,
    started_at: t.started_at,
    ended_at: t.ended_at,
    budget_usage: { tokens_in: t.tokens_in, tokens_out: t.tokens_out, cost_usd: t.cost_usd },
  }));
}
