import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { StepActor } from '../../src/actors/step-actor.js';
import { stepMachine } from '../../src/actors/step-machine.js';
import { SimulatedClock } from '../../src/context/clock.js';
import type { StreamTap } from '../../src/context/stream-sink.js';
import { StreamClosedError } from '../../src/errors/stream-closed-error.js';
import { memoryStore, type MemoryRunStore } from '../../src/store/memory/memory-store.js';
import { emptyProvenance, type StepEvent } from '../../src/streams/events.js';
import { makeRun, makeStep } from '../support/records.js';

const usage = { tokens_in: 0, tokens_out: 0, cost_usd: 0, wall_ms: 0 };
const endFields = { output: 'done', budget_usage: usage, provenance: emptyProvenance() };
const cancelled = { code: 'CANCELLED' as const, message: 'cancelled', retriable: false };
const failed = { code: 'INTERNAL' as const, message: 'boom', retriable: false };

async function newStep(
  tap: StreamTap | null = null,
): Promise<{ step: StepActor; store: MemoryRunStore }> {
  const store = memoryStore();
  const clock = new SimulatedClock(1_000);
  await store.createRun(makeRun({ run_id: 'run-1' }));
  await store.createStep(makeStep('run-1', { step_id: 'step-1', name: 'a', actor_path: ['a'] }));
  return { step: new StepActor({ stepId: 'step-1', path: ['a'], store, clock, tap }), store };
}

describe('STREAM-2001: the step lifecycle enforces event order', () => {
  it('refuses a token before started, and logs nothing', async () => {
    const { step, store } = await newStep();
    expect(() => {
      step.tokens(['early']);
    }).toThrow(StreamClosedError);
    expect(() => {
      step.sink.push('early');
    }).toThrow(StreamClosedError);
    expect(() => {
      step.end(endFields);
    }).toThrow(StreamClosedError);
    await step.drain();
    expect(await store.readEvents('step-1')).toEqual([]);
    expect(step.state).toBe('pending');
  });

  it('refuses a token after end', async () => {
    const { step, store } = await newStep();
    step.start({ provenance: emptyProvenance() });
    step.tokens(['a', 'b']);
    step.end(endFields);
    expect(() => {
      step.tokens(['late']);
    }).toThrow(StreamClosedError);
    expect(() => {
      step.sink.push('late');
    }).toThrow(/cannot emit "token"/);
    expect(() => {
      step.emit({ type: 'narration', text: 'late' });
    }).toThrow(StreamClosedError);
    await step.drain();
    const types = (await store.readEvents('step-1')).map((e) => e.type);
    expect(types).toEqual(['started', 'token', 'token', 'end']);
  });

  it('refuses a token after a cancel; the cancel is logged as error CANCELLED', async () => {
    const { step, store } = await newStep();
    step.start({ provenance: emptyProvenance() });
    step.tokens(['a']);
    step.cancel(cancelled);
    expect(() => {
      step.tokens(['after-cancel']);
    }).toThrow(StreamClosedError);
    expect(() => {
      step.end(endFields);
    }).toThrow(StreamClosedError);
    await step.drain();
    const log = await store.readEvents('step-1');
    expect(log.map((e) => e.type)).toEqual(['started', 'token', 'error']);
    expect(log[2]).toMatchObject({ type: 'error', code: 'CANCELLED' });
    expect(step.state).toBe('cancelled');
  });

  it('after a checkpoint only end or error may follow', async () => {
    const { step, store } = await newStep();
    step.start({ provenance: emptyProvenance() });
    step.checkpoint('cp-1');
    expect(() => {
      step.tokens(['x']);
    }).toThrow(StreamClosedError);
    expect(() => {
      step.checkpoint('cp-2');
    }).toThrow(StreamClosedError);
    step.fail(failed);
    await step.drain();
    expect((await store.readEvents('step-1')).map((e) => e.type)).toEqual([
      'started',
      'checkpoint',
      'error',
    ]);
  });

  it('logs every field of started, end and error events, optional ones included', async () => {
    const { step, store } = await newStep();
    const provenance = { ...emptyProvenance(3), engine: 'scripted' };
    step.start({ provenance, pool_id: 'gpu', replica_id: 'r-2', queue_position: 4 });
    step.end({ output: { answer: [1] }, budget_usage: usage, provenance });
    const { step: other, store: otherStore } = await newStep();
    other.start({ provenance });
    other.fail({ ...failed, details: { why: ['x'] } });
    await step.drain();
    await other.drain();
    const stamp = { step_id: 'step-1', ts: 1_000 };
    expect(await store.readEvents('step-1')).toStrictEqual([
      {
        type: 'started',
        ...stamp,
        seq: 1,
        provenance,
        pool_id: 'gpu',
        replica_id: 'r-2',
        queue_position: 4,
      },
      { type: 'end', ...stamp, seq: 2, output: { answer: [1] }, budget_usage: usage, provenance },
    ]);
    expect(await otherStore.readEvents('step-1')).toStrictEqual([
      { type: 'started', ...stamp, seq: 1, provenance },
      { type: 'error', ...stamp, seq: 2, ...failed, details: { why: ['x'] } },
    ]);
  });

  it('numbers events from 1 without gaps and tokens from 0', async () => {
    const { step, store } = await newStep();
    step.start({ provenance: emptyProvenance(), pool_id: 'local' });
    step.tokens(['x', 'y']);
    step.emit({ type: 'narration', text: 'hello' });
    step.tokens(['z']);
    step.end(endFields);
    await step.drain();
    const log = await store.readEvents('step-1');
    expect(log.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(log.flatMap((e) => (e.type === 'token' ? [[e.t, e.i]] : []))).toEqual([
      ['x', 0],
      ['y', 1],
      ['z', 2],
    ]);
    expect(log.every((e) => e.step_id === 'step-1' && e.ts === 1_000)).toBe(true);
  });

  it('validates emitted events against the schema', async () => {
    const { step } = await newStep();
    step.start({ provenance: emptyProvenance() });
    expect(() => {
      step.emit({ type: 'narration' });
    }).toThrow(/schema violation/);
    expect(() => {
      step.emit({ type: 'end', output: 1 });
    }).toThrow(/schema violation/);
  });

  it('publishes an event only after it is in the log', async () => {
    const seenInLog: boolean[] = [];
    let store: MemoryRunStore | null = null;
    const tap: StreamTap = {
      onEvent: (_path, event) => {
        const e = event as StepEvent;
        void store
          ?.readEvents(e.step_id)
          .then((log) => seenInLog.push(log.some((l) => l.seq === e.seq)));
      },
    };
    const made = await newStep(tap);
    store = made.store;
    made.step.start({ provenance: emptyProvenance() });
    made.step.tokens(['a', 'b', 'c']);
    made.step.end(endFields);
    await made.step.drain();
    await Promise.resolve();
    expect(seenInLog).toEqual([true, true, true, true, true]);
  });

  it('a subscriber that throws does not reach the producer', async () => {
    const { step, store } = await newStep({
      onEvent: () => {
        throw new Error('subscriber failure');
      },
    });
    step.start({ provenance: emptyProvenance() });
    step.tokens(['a']);
    step.end(endFields);
    await expect(step.drain()).resolves.toBeUndefined();
    expect(await store.readEvents('step-1')).toHaveLength(3);
  });

  it('the bare machine accepts nothing out of order (property over random sequences)', () => {
    const command = fc.constantFrom(
      'START',
      'TOKENS',
      'EMIT',
      'CHECKPOINT',
      'END',
      'FAIL',
      'CANCEL',
    );
    fc.assert(
      fc.property(fc.array(command, { maxLength: 30 }), (commands) => {
        const actor = createActor(stepMachine).start();
        const accepted: string[] = [];
        for (const c of commands) {
          if (actor.getSnapshot().status !== 'active') break;
          const seqBefore = actor.getSnapshot().context.seq;
          switch (c) {
            case 'START':
              actor.send({ type: 'START', fields: { provenance: emptyProvenance() } });
              break;
            case 'TOKENS':
              actor.send({ type: 'TOKENS', texts: ['t'] });
              break;
            case 'EMIT':
              actor.send({ type: 'EMIT', body: { type: 'narration', text: 'n' } });
              break;
            case 'CHECKPOINT':
              actor.send({ type: 'CHECKPOINT', checkpointId: 'c' });
              break;
            case 'END':
              actor.send({ type: 'END', fields: endFields });
              break;
            case 'FAIL':
              actor.send({ type: 'FAIL', error: failed });
              break;
            case 'CANCEL':
              actor.send({ type: 'CANCEL', error: cancelled });
              break;
          }
          // A refused event leaves the context as it was; only a new seq means acceptance.
          if (actor.getSnapshot().context.seq !== seqBefore) {
            for (const e of actor.getSnapshot().context.accepted) accepted.push(e.type);
          }
        }
        // STREAM-2001, as a regular expression over the accepted event types.
        const order =
          /^(started( (token|tool_suggest|fact|metrics|narration))*( checkpoint)?( (end|error))?)?$|^error$/;
        expect(accepted.join(' ')).toMatch(order);
        const seqs = actor.getSnapshot().context.seq;
        expect(seqs).toBe(accepted.length);
      }),
    );
  });
});
