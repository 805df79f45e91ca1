/**
 * The timeline's layout (src/ui/timeline-model.ts), without a browser: rows nested by
 * `parent_step_id` in tree order, offsets from the run's first creation, queue waits,
 * durations and times to first token from the API's timestamps, bars of steps still going
 * on reaching now, a step queued and never started, a step of no duration, and the axis.
 */
import { describe, expect, it } from 'vitest';
import {
  axisTicks,
  percentOf,
  tickStep,
  timelineModel,
  turnSteps,
  type TimelineStep,
} from '../../src/ui/timeline-model.js';

const T0 = Date.parse('2026-11-28T18:00:00.000Z');
/** The ISO time `ms` after T0. */
const at = (ms: number): string => new Date(T0 + ms).toISOString();

function step(
  id: string,
  fields: Partial<TimelineStep> & {
    created: number;
    started?: number | null;
    ended?: number | null;
  },
): TimelineStep {
  const { created, started = created, ended = null, ...rest } = fields;
  return {
    step_id: id,
    parent_step_id: null,
    name: id,
    type: 'agent',
    status: ended === null ? 'running' : 'succeeded',
    created_at: at(created),
    started_at: started === null ? null : at(started),
    ended_at: ended === null ? null : at(ended),
    budget_usage: { tokens_in: 0, tokens_out: 0, cost_usd: 0 },
    ...rest,
  };
}

describe('timelineModel', () => {
  it('nests the rows by parent_step_id, depth first, siblings in creation order', () => {
    const steps = [
      step('root', { created: 0, ended: 900 }),
      step('b', { created: 300, ended: 500, parent_step_id: 'root' }),
      step('a', { created: 100, ended: 800, parent_step_id: 'root' }),
      step('a1', { created: 150, ended: 200, parent_step_id: 'a' }),
      step('second', { created: 950, ended: 1000 }),
      // Its parent is not in the list: a root.
      step('orphan', { created: 960, ended: 990, parent_step_id: 'gone' }),
    ];
    const model = timelineModel(steps, { now: T0 + 5000 });
    expect(model.rows.map((r) => [r.stepId, r.depth])).toEqual([
      ['root', 0],
      ['a', 1],
      ['a1', 2],
      ['b', 1],
      ['second', 0],
      ['orphan', 0],
    ]);
    expect(model.rows.find((r) => r.stepId === 'a1')?.parentStepId).toBe('a');
  });

  it('gives each step its start offset from the first creation, its queue wait, duration and time to first token', () => {
    const steps = [
      step('plan', {
        created: 1000,
        started: 1250,
        ended: 4000,
        type: 'llm_call',
        first_token_at: at(1600),
        budget_usage: { tokens_in: 12, tokens_out: 34, cost_usd: 0.0021 },
      }),
      step('tool', { created: 1500, started: 1500, ended: 1700, type: 'tool_call' }),
    ];
    const model = timelineModel(steps, { now: T0 + 99_000 });
    expect(model.originMs).toBe(T0 + 1000);
    const [plan, tool] = model.rows;
    expect(plan).toMatchObject({
      createdOffsetMs: 0,
      startOffsetMs: 250,
      endOffsetMs: 3000,
      queueMs: 250,
      durationMs: 2750,
      ttftMs: 350,
      live: false,
      tokensIn: 12,
      tokensOut: 34,
      costUsd: 0.0021,
      type: 'llm_call',
    });
    expect(tool).toMatchObject({
      createdOffsetMs: 500,
      startOffsetMs: 500,
      queueMs: 0,
      durationMs: 200,
      ttftMs: null,
    });
    // Ended steps only: the axis ends at the latest end, not at now.
    expect(model.spanMs).toBe(3000);
  });

  it('extends the bars of steps still going on to now, and takes a first token learnt from a live stream', () => {
    const steps = [
      step('done', { created: 0, ended: 400 }),
      step('running', { created: 100, started: 200, type: 'llm_call' }),
      step('waiting', { created: 150, started: 160, status: 'waiting' }),
    ];
    const firstTokens = new Map([['running', T0 + 450]]);
    const now = T0 + 2000;
    const model = timelineModel(steps, { now, firstTokens });
    const running = model.rows.find((r) => r.stepId === 'running');
    expect(running).toMatchObject({ live: true, endOffsetMs: 2000, durationMs: 1800, ttftMs: 250 });
    expect(model.rows.find((r) => r.stepId === 'waiting')).toMatchObject({
      live: true,
      endOffsetMs: 2000,
    });
    expect(model.spanMs).toBe(2000);
    // A second later the same steps reach a second further.
    const later = timelineModel(steps, { now: now + 1000, firstTokens });
    expect(later.rows.find((r) => r.stepId === 'running')?.durationMs).toBe(2800);
    expect(later.spanMs).toBe(3000);
  });

  it('draws a step queued and never started as its queue wait alone: to now while queued, to its end when cancelled', () => {
    const steps = [
      step('queued', { created: 0, started: null, status: 'queued' }),
      step('dropped', { created: 100, started: null, ended: 700, status: 'cancelled' }),
    ];
    const model = timelineModel(steps, { now: T0 + 1500 });
    expect(model.rows[0]).toMatchObject({
      startOffsetMs: null,
      durationMs: null,
      ttftMs: null,
      queueMs: 1500,
      endOffsetMs: 1500,
      live: true,
    });
    expect(model.rows[1]).toMatchObject({
      startOffsetMs: null,
      durationMs: null,
      queueMs: 600,
      endOffsetMs: 700,
      live: false,
    });
  });

  it('keeps a step of no duration as a bar of zero length at its offset, and a run of such steps has an axis of 1 ms', () => {
    const model = timelineModel([step('instant', { created: 0, started: 0, ended: 0 })], {
      now: T0 + 10_000,
    });
    expect(model.rows[0]).toMatchObject({ startOffsetMs: 0, durationMs: 0, queueMs: 0 });
    expect(model.spanMs).toBe(1);
    expect(model.ticks).toEqual([0, 1]);
  });

  it('never puts a start before its creation nor an end before its start (clocks of two hosts)', () => {
    const model = timelineModel([step('skewed', { created: 500, started: 450, ended: 480 })], {
      now: T0,
    });
    expect(model.rows[0]).toMatchObject({
      startOffsetMs: 0,
      endOffsetMs: 0,
      durationMs: 0,
      queueMs: 0,
    });
  });

  it('has no rows and an axis of 1 ms for a run without steps', () => {
    const model = timelineModel([], { now: T0 });
    expect(model.rows).toEqual([]);
    expect(model.spanMs).toBe(1);
  });
});

describe('the axis', () => {
  it('ticks every 1, 2 or 5 × 10^k ms, at most maxTicks parts, from 0 within the span', () => {
    expect(tickStep(3000, 8)).toBe(500);
    expect(tickStep(1000, 8)).toBe(200);
    expect(tickStep(10, 8)).toBe(2);
    expect(tickStep(4, 8)).toBe(1);
    expect(tickStep(171_000, 8)).toBe(50_000);
    const model = timelineModel([step('s', { created: 0, ended: 3000 })], { now: T0 });
    expect(model.ticks).toEqual([0, 500, 1000, 1500, 2000, 2500, 3000]);
    expect(model.tickMs).toBe(500);
  });

  it('gives fewer ticks for fewer parts (a narrow axis asks again), each from 0 within the span', () => {
    expect(axisTicks(3000, 8)).toEqual({
      ticks: [0, 500, 1000, 1500, 2000, 2500, 3000],
      tickMs: 500,
    });
    expect(axisTicks(3000, 5)).toEqual({ ticks: [0, 1000, 2000, 3000], tickMs: 1000 });
    expect(axisTicks(3000, 2)).toEqual({ ticks: [0, 2000], tickMs: 2000 });
    expect(axisTicks(3000, 1)).toEqual({ ticks: [0], tickMs: 5000 });
  });

  it('places an offset in percent of the span, clamped to 0..100', () => {
    expect(percentOf(250, 1000)).toBe(25);
    expect(percentOf(-5, 1000)).toBe(0);
    expect(percentOf(2000, 1000)).toBe(100);
    expect(percentOf(5, 0)).toBe(0);
  });
});

describe('turnSteps', () => {
  it("draws a thread's turns one row each, in order, with the turn's own tokens and cost", () => {
    const turns = [
      {
        n: 1,
        role: 'writer',
        step_id: 's1',
        status: 'succeeded',
        started_at: at(100),
        ended_at: at(900),
        tokens_in: 10,
        tokens_out: 52,
        cost_usd: 0.001,
      },
      {
        n: 2,
        role: 'linter',
        step_id: 's2',
        status: 'running',
        started_at: at(950),
        ended_at: null,
        tokens_in: 0,
        tokens_out: 0,
        cost_usd: 0,
      },
    ];
    const model = timelineModel(turnSteps(turns, at(0)), { now: T0 + 2000 });
    expect(model.rows.map((r) => [r.name, r.depth, r.type])).toEqual([
      ['1. writer', 0, 'turn'],
      ['2. linter', 0, 'turn'],
    ]);
    expect(model.rows[0]).toMatchObject({ startOffsetMs: 0, durationMs: 800, tokensOut: 52 });
    expect(model.rows[1]).toMatchObject({ startOffsetMs: 850, live: true, durationMs: 1050 });
  });
});
