import { describe, expect, it } from 'vitest';
import {
  copyRunRecord,
  copyStepEvent,
  copyStepRecord,
  KEPT,
  patchRunRecord,
  patchStepRecord,
} from '../../src/store/copy-records.js';
import { emptyProvenance, type StepEvent } from '../../src/streams/events.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import { makeRun, makeStep } from '../support/records.js';

/** Every object reachable from `value`. */
function objectsIn(value: unknown, out = new Set<object>()): Set<object> {
  if (value !== null && typeof value === 'object' && !out.has(value)) {
    out.add(value);
    for (const v of Object.values(value)) objectsIn(v, out);
  }
  return out;
}

/** The copy equals the original and shares no object with it. */
function expectIndependentCopy<T>(original: T, copy: T): void {
  expect(copy).toStrictEqual(original);
  const shared = [...objectsIn(copy)].filter((o) => objectsIn(original).has(o));
  expect(shared).toEqual([]);
}

const usage = { tokens_in: 1, tokens_out: 2, cost_usd: 0.5, wall_ms: 3 };
const provenance = { ...emptyProvenance(42), engine: 'scripted', tokens_in: 1 };
const base = { step_id: 's', seq: 1, ts: 1_000 };

const events: StepEvent[] = [
  { ...base, type: 'started', provenance },
  { ...base, type: 'started', provenance, pool_id: 'p', replica_id: 'r', queue_position: 0 },
  { ...base, type: 'token', t: 'Hel', i: 0 },
  { ...base, type: 'tool_suggest', tool: 'add', args: { a: 1, b: [2, { c: 3 }] }, reason: 'r' },
  {
    ...base,
    type: 'fact',
    fact: {
      fact_id: 'f',
      run_id: 'r',
      type: 'note',
      schema_uri: null,
      data: { nested: [1] },
      emitted_by_step: 's',
      ts: 1,
    },
  },
  { ...base, type: 'metrics', tokens_in: 1, tokens_out: 2, cost_usd: 0, queue_depth: 1 },
  { ...base, type: 'narration', text: 'hi' },
  { ...base, type: 'checkpoint', checkpoint_id: 'cp' },
  { ...base, type: 'end', output: { answer: [1, 2] }, budget_usage: usage, provenance },
  { ...base, type: 'error', code: 'INTERNAL', message: 'x', retriable: false, details: { a: [1] } },
  { ...base, type: 'escalation', reason: 'open', target: 'tool:add', breaker_state: 'open' },
];

describe('copies of records and events by shape', () => {
  it.each(events.map((e) => [e.type, e] as const))(
    'copies a %s event whole and independent of the original',
    (_type, event) => {
      expectIndependentCopy(event, copyStepEvent(event));
    },
  );

  it('copies run and step records whole and independent, nested values included', () => {
    const run = makeRun({ run_id: 'r', budgets: { max_tokens_in: 10 }, provenance });
    expectIndependentCopy(run, copyRunRecord(run));
    const step = makeStep('r', {
      input: { message: 'x', data: { deep: [1] } },
      output: [{ a: 1 }],
      error: { code: 'INTERNAL', message: 'x', retriable: false, details: { why: ['y'] } },
      provenance,
    });
    expectIndependentCopy(step, copyStepRecord(step));
  });

  it('applies a patch, copying what it brings and keeping the rest', () => {
    const step = makeStep('r', { status: 'running', output: null });
    const output = { answer: [1] };
    const patched = patchStepRecord(step, { status: 'succeeded', output, budget_usage: usage });
    expect(patched).toStrictEqual({ ...step, status: 'succeeded', output, budget_usage: usage });
    expect(patched.output).not.toBe(output);
    // An explicit null output or error is a change, not an absence.
    expect(patchStepRecord(patched, { output: null }).output).toBeNull();

    const run = makeRun({ run_id: 'r', status: 'running' });
    const ended = patchRunRecord(run, { status: 'completed', ended_at: 'later' });
    expect(ended).toStrictEqual({ ...run, status: 'completed', ended_at: 'later' });
  });

  it('kept copies share one frozen empty provenance and zero usage; nothing else is shared', () => {
    const zero = { tokens_in: 0, tokens_out: 0, cost_usd: 0, wall_ms: 0 };
    const a = copyStepRecord(
      makeStep('r', { provenance: emptyProvenance(), budget_usage: zero }),
      KEPT,
    );
    const b = copyStepRecord(
      makeStep('r', { provenance: emptyProvenance(), budget_usage: zero }),
      KEPT,
    );
    expect(a.provenance).toBe(b.provenance);
    expect(a.budget_usage).toBe(b.budget_usage);
    expect(Object.isFrozen(a.provenance)).toBe(true);
    // A seed, a token or a millisecond makes a value of its own.
    const seeded = copyStepRecord(makeStep('r', { provenance: emptyProvenance(1) }), KEPT);
    expect(seeded.provenance).not.toBe(a.provenance);
    expect(seeded.provenance).toStrictEqual(emptyProvenance(1));
    const spent = copyStepRecord(makeStep('r', { budget_usage: { ...zero, wall_ms: 1 } }), KEPT);
    expect(spent.budget_usage).not.toBe(a.budget_usage);
    // Copies handed out are new and mutable.
    const out = copyStepRecord(a);
    expect(out.provenance).not.toBe(a.provenance);
    expect(Object.isFrozen(out.provenance)).toBe(false);
    // The same for a run's budgets: empty ones shared, others copied.
    const r1 = copyRunRecord(makeRun({ run_id: 'r1', budgets: {} }), KEPT);
    const r2 = copyRunRecord(makeRun({ run_id: 'r2', budgets: {} }), KEPT);
    expect(r1.budgets).toBe(r2.budgets);
    const limited = makeRun({ run_id: 'r3', budgets: { max_tokens_in: 5 } });
    expect(copyRunRecord(limited, KEPT).budgets).toStrictEqual({ max_tokens_in: 5 });
    expect(copyRunRecord(limited, KEPT).budgets).not.toBe(limited.budgets);
    expect(Object.isFrozen(copyRunRecord(r1).budgets)).toBe(false);
  });

  it('the memory store hands out mutable copies of what it keeps shared', async () => {
    const store = memoryStore();
    await store.createRun(makeRun({ run_id: 'r' }));
    await store.createStep(makeStep('r', { step_id: 's1', provenance: emptyProvenance() }));
    await store.createStep(makeStep('r', { step_id: 's2', provenance: emptyProvenance() }));
    await store.appendEvents([
      { ...base, step_id: 's1', type: 'started', provenance: emptyProvenance() },
    ]);
    const s1 = await store.getStep('s1');
    const [started] = await store.readEvents('s1');
    if (!s1?.provenance || started?.type !== 'started') throw new Error('not stored');
    (s1.provenance as { engine: string | null }).engine = 'changed';
    (started.provenance as { engine: string | null }).engine = 'changed';
    expect((await store.getStep('s2'))?.provenance?.engine).toBeNull();
    expect((await store.getStep('s1'))?.provenance?.engine).toBeNull();
  });
});
