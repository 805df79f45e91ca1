import { describe, expect, it } from 'vitest';
import { emptyProvenance, stepEventSchema, type StepEvent } from '../../src/streams/events.js';

const base = { step_id: 's1', seq: 1, ts: 1 };
const usage = { tokens_in: 1, tokens_out: 2, cost_usd: 0, wall_ms: 3 };
const fact = {
  fact_id: 'f1',
  run_id: 'r1',
  type: 'booking',
  schema_uri: null,
  data: { ok: true },
  emitted_by_step: 's1',
  ts: 1,
};

/** One valid event of each type of API.md's table. */
const EXAMPLES: StepEvent[] = [
  { ...base, type: 'started', provenance: emptyProvenance(42), pool_id: 'local' },
  { ...base, type: 'token', t: 'hi', i: 0 },
  { ...base, type: 'tool_suggest', tool: 'add', args: { a: 1 }, reason: 'sum' },
  { ...base, type: 'fact', fact },
  { ...base, type: 'metrics', tokens_in: 1, tokens_out: 2, cost_usd: 0.1 },
  { ...base, type: 'narration', text: 'thinking' },
  { ...base, type: 'checkpoint', checkpoint_id: 'cp1' },
  { ...base, type: 'end', output: 'x', budget_usage: usage, provenance: emptyProvenance() },
  { ...base, type: 'error', code: 'TIMEOUT', message: 'late', retriable: true },
  {
    ...base,
    type: 'escalation',
    reason: 'breaker open',
    target: 'engine:openai',
    breaker_state: 'open',
  },
];

describe('the step event union', () => {
  it("covers exactly API.md's event types", () => {
    const tags = stepEventSchema.options.map((o) => o.shape.type.value).sort();
    expect(tags).toEqual(
      [
        'checkpoint',
        'end',
        'error',
        'escalation',
        'fact',
        'metrics',
        'narration',
        'started',
        'token',
        'tool_suggest',
      ].sort(),
    );
  });

  it.each(EXAMPLES)('parses a valid $type event', (event) => {
    expect(stepEventSchema.parse(event)).toEqual(event);
  });

  it('refuses unknown types, missing stamps and bad values', () => {
    expect(stepEventSchema.safeParse({ ...base, type: 'tokens', t: 'x', i: 0 }).success).toBe(
      false,
    );
    expect(
      stepEventSchema.safeParse({ type: 'token', step_id: 's', ts: 1, t: 'x', i: 0 }).success,
    ).toBe(false);
    expect(
      stepEventSchema.safeParse({ ...base, seq: 0, type: 'token', t: 'x', i: 0 }).success,
    ).toBe(false);
    expect(stepEventSchema.safeParse({ ...base, type: 'token', t: 'x', i: -1 }).success).toBe(
      false,
    );
    expect(
      stepEventSchema.safeParse({
        ...base,
        type: 'error',
        code: 'OOPS',
        message: 'x',
        retriable: false,
      }).success,
    ).toBe(false);
  });
});
