import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { compileStepMachine, StepLifecycle } from '../../src/actors/step-lifecycle.js';
import { stepMachine, type StepMachineEvent } from '../../src/actors/step-machine.js';
import { emptyProvenance } from '../../src/streams/events.js';

const usage = { tokens_in: 0, tokens_out: 0, cost_usd: 0, wall_ms: 0 };

/** One message of each type, with arbitrary contents. */
const message: fc.Arbitrary<StepMachineEvent> = fc.oneof(
  fc.constant<StepMachineEvent>({ type: 'START', fields: { provenance: emptyProvenance(7) } }),
  fc
    .array(fc.string(), { minLength: 1, maxLength: 3 })
    .map((texts): StepMachineEvent => ({ type: 'TOKENS', texts })),
  fc
    .string()
    .map((text): StepMachineEvent => ({ type: 'EMIT', body: { type: 'narration', text } })),
  fc.string().map((id): StepMachineEvent => ({ type: 'CHECKPOINT', checkpointId: id })),
  fc.jsonValue().map((output): StepMachineEvent => ({
    type: 'END',
    fields: { output, budget_usage: usage, provenance: emptyProvenance() },
  })),
  fc.constant<StepMachineEvent>({
    type: 'FAIL',
    error: { code: 'INTERNAL', message: 'boom', retriable: false },
  }),
  fc.constantFrom<StepMachineEvent>(
    { type: 'ESCALATE', escalation: { reason: 'open', target: 'agent:x', breaker_state: 'open' } },
    { type: 'ESCALATE', escalation: { reason: 'restarts', target: 'pool:local' } },
  ),
  fc.constant<StepMachineEvent>({
    type: 'CANCEL',
    error: { code: 'CANCELLED', message: 'cancelled', retriable: false },
  }),
);

describe('the compiled step lifecycle', () => {
  it('derives the STREAM-2001 transition table from the XState machine', () => {
    const { transitions, final } = compileStepMachine();
    expect(transitions).toEqual({
      pending: { START: 'running', ESCALATE: 'pending', FAIL: 'failed', CANCEL: 'cancelled' },
      running: {
        TOKENS: 'running',
        EMIT: 'running',
        ESCALATE: 'running',
        CHECKPOINT: 'checkpointed',
        END: 'succeeded',
        FAIL: 'failed',
        CANCEL: 'cancelled',
      },
      checkpointed: {
        ESCALATE: 'checkpointed',
        END: 'succeeded',
        FAIL: 'failed',
        CANCEL: 'cancelled',
      },
      succeeded: {},
      failed: {},
      cancelled: {},
    });
    expect([...final].sort()).toEqual(['cancelled', 'failed', 'succeeded']);
  });

  it('answers every message sequence exactly as the XState interpreter does (property)', () => {
    fc.assert(
      fc.property(fc.array(message, { maxLength: 25 }), (messages) => {
        const interpreted = createActor(stepMachine).start();
        const compiled = new StepLifecycle('step-1');
        for (const m of messages) {
          // A finished XState actor takes no more messages; the compiled one refuses them.
          if (interpreted.getSnapshot().status === 'done') {
            expect(compiled.send(m)).toBe(false);
            continue;
          }
          const seqBefore = interpreted.getSnapshot().context.seq;
          interpreted.send(m);
          const acceptedByXState = interpreted.getSnapshot().context.seq !== seqBefore;
          expect(compiled.send(m)).toBe(acceptedByXState);
          const x = interpreted.getSnapshot();
          const c = compiled.getSnapshot();
          expect(c.value).toBe(x.value);
          expect(c.status).toBe(x.status);
          expect(c.context).toEqual(x.context);
        }
      }),
    );
  });

  it('round-trips through XState persisted snapshots, so checkpoints hold what XState would', () => {
    const compiled = new StepLifecycle('step-1');
    compiled.send({ type: 'START', fields: { provenance: emptyProvenance() } });
    compiled.send({ type: 'TOKENS', texts: ['a', 'b'] });
    const persisted = compiled.getPersistedSnapshot();

    // An XState actor restored from it carries on where the compiled one stopped.
    const restored = createActor(stepMachine, {
      snapshot: persisted as ReturnType<typeof stepMachine.getPersistedSnapshot>,
    }).start();
    restored.send({ type: 'TOKENS', texts: ['c'] });
    expect(restored.getSnapshot().context.accepted).toEqual([
      { type: 'token', t: 'c', i: 2, seq: 4 },
    ]);

    // And a compiled lifecycle resumed from an interpreted snapshot does the same.
    const resumed = StepLifecycle.fromXState('step-1', restored.getSnapshot());
    expect(resumed.getSnapshot()).toMatchObject({ value: 'running', status: 'active' });
    expect(resumed.send({ type: 'START', fields: { provenance: emptyProvenance() } })).toBe(false);
    expect(resumed.send({ type: 'TOKENS', texts: ['d'] })).toBe(true);
    expect(resumed.getSnapshot().context.accepted).toEqual([
      { type: 'token', t: 'd', i: 3, seq: 5 },
    ]);
  });

  it('a final snapshot resumes as done and accepts nothing', () => {
    const actor = createActor(stepMachine).start();
    actor.send({ type: 'CANCEL', error: { code: 'CANCELLED', message: 'x', retriable: false } });
    const resumed = StepLifecycle.fromXState('step-1', actor.getSnapshot());
    expect(resumed.getSnapshot()).toMatchObject({ value: 'cancelled', status: 'done' });
    expect(resumed.send({ type: 'TOKENS', texts: ['late'] })).toBe(false);
  });

  it('observers see messages and state changes only while subscribed', () => {
    const compiled = new StepLifecycle('step-1');
    const seen: string[] = [];
    const stop = compiled.observe((o) =>
      seen.push(o.type === 'message' ? o.message.type : o.snapshot.value),
    );
    compiled.send({ type: 'START', fields: { provenance: emptyProvenance() } });
    compiled.send({ type: 'CHECKPOINT', checkpointId: 'cp' });
    compiled.send({ type: 'TOKENS', texts: ['refused'] });
    stop();
    compiled.send({
      type: 'END',
      fields: { output: 1, budget_usage: usage, provenance: emptyProvenance() },
    });
    expect(seen).toEqual(['START', 'running', 'CHECKPOINT', 'checkpointed', 'TOKENS']);
  });
});
