import { describe, expect, it } from 'vitest';
import { LoggedWork } from '../../src/actors/logged-work.js';
import { WorkerLostError } from '../../src/errors/worker-lost-error.js';
import type { StepEvent } from '../../src/streams/events.js';

let seq = 0;
const at = (body: Record<string, unknown>): StepEvent =>
  ({ step_id: 'step_1', seq: ++seq, ts: 0, ...body }) as StepEvent;
const token = (t: string, i: number) => at({ type: 'token', t, i });
const narration = (text: string) => at({ type: 'narration', text });
const metrics = () => at({ type: 'metrics', tokens_in: 1, tokens_out: 2, cost_usd: 0 });

/** A log: started, then `work`. */
function logOf(...work: StepEvent[]): StepEvent[] {
  seq = 0;
  const started = at({ type: 'started', provenance: {} });
  return [started, ...work.map((e) => ({ ...e, seq: ++seq }))];
}

describe('LoggedWork: what a step run again must reproduce', () => {
  it('takes the log’s events again by content, then tells what is new', () => {
    const logged = new LoggedWork('step_1', logOf(token('a', 0), token('b', 1)));
    expect(logged.reproduces({ type: 'token', t: 'a' })).toBe(true);
    expect(logged.reproduces({ type: 'token', t: 'b' })).toBe(true);
    expect(logged.pending).toBe(false);
    expect(logged.reproduces({ type: 'token', t: 'c' })).toBe(false);
    expect(() => {
      logged.checkEnd();
    }).not.toThrow();
  });

  it('regression: a run again that makes other text is WORKER_LOST naming the seq, not spliced by count', () => {
    const logged = new LoggedWork('step_1', logOf(token('alpha', 0), token(' one', 1)));
    expect(logged.reproduces({ type: 'token', t: 'alpha' })).toBe(true);
    let err: unknown = null;
    try {
      logged.reproduces({ type: 'token', t: ' two' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(WorkerLostError);
    expect((err as WorkerLostError).retriable).toBe(true);
    expect((err as WorkerLostError).details).toEqual({ reason: 'diverged', seq: 3 });
  });

  it('is WORKER_LOST when the run again ends short of what the log holds', () => {
    const logged = new LoggedWork('step_1', logOf(token('a', 0), token('b', 1), metrics()));
    logged.reproduces({ type: 'token', t: 'a' });
    expect(() => {
      logged.checkEnd();
    }).toThrow(WorkerLostError);
  });

  it('passes over the log’s metrics and narration the run again does not make, and drops ones made anew amid the log', () => {
    const logged = new LoggedWork(
      'step_1',
      logOf(narration('preparing'), token('a', 0), metrics(), narration('waiting for approval')),
    );
    expect(logged.reproduces({ type: 'narration', text: 'preparing' })).toBe(true);
    // Made anew in the middle of what the log holds: dropped, not logged out of order.
    expect(logged.reproduces({ type: 'narration', text: 'thinking' })).toBe(true);
    expect(logged.reproduces({ type: 'token', t: 'a' })).toBe(true);
    // The log's metrics and the approval's narration are passed over: this one is new.
    expect(logged.reproduces({ type: 'narration', text: 'deployed' })).toBe(false);
    expect(logged.pending).toBe(false);
    expect(() => {
      logged.checkEnd();
    }).not.toThrow();
  });

  it('compares a tool suggestion by tool and arguments, a fact by type and data', () => {
    const suggest = at({ type: 'tool_suggest', tool: 'add', args: { a: 1, b: 2 } });
    const fact = at({
      type: 'fact',
      fact: { fact_id: 'fact_1', type: 'booking', data: { id: 7 }, ts: 1 },
    });
    const logged = new LoggedWork('step_1', logOf(suggest, fact));
    expect(logged.reproduces({ type: 'tool_suggest', tool: 'add', args: { b: 2, a: 1 } })).toBe(
      true,
    );
    // Another fact id and time, the same fact.
    expect(
      logged.reproduces({
        type: 'fact',
        fact: { fact_id: 'fact_2', type: 'booking', data: { id: 7 }, ts: 2 },
      }),
    ).toBe(true);
    const other = new LoggedWork('step_1', logOf(suggest));
    expect(() =>
      other.reproduces({ type: 'tool_suggest', tool: 'add', args: { a: 1, b: 3 } }),
    ).toThrow(WorkerLostError);
  });
});
