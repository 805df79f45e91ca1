/**
 * The RunStore conformance suite. Every RunStore implementation runs it from its own
 * `*.test.ts` (or `*.int.test.ts`) file:
 *
 * @example
 * describeRunStore('memory', () => memoryStore());
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConflictError } from '../../src/errors/conflict-error.js';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import {
  zeroUsage,
  type ApprovalRecord,
  type CallRecording,
  type RunRecord,
  type StepRecord,
} from '../../src/store/records.js';
import type { Provenance, StepEvent } from '../../src/streams/events.js';
import { flushed, type RunPageQuery, type RunStore } from '../../src/store/run-store.js';
import {
  makeCheckpoint,
  makeFact,
  makeFlow,
  makeRun,
  makeStep,
  narration,
  uid,
} from '../support/records.js';

/** The provenance of a step of the scripted engine (seed 7, pool `local`) that used `use`. */
function scriptedProvenance(
  use: Pick<Provenance, 'tokens_in' | 'tokens_out' | 'cost_usd'>,
): Provenance {
  return {
    seed: 7,
    prompt_hash: null,
    params_hash: null,
    engine: 'scripted',
    model_hash: null,
    pool_id: 'local',
    replica_id: null,
    ...use,
    decode_time_ms: null,
    price_table: null,
  };
}

/** Registers the RunStore conformance suite for the implementation `create` makes. */
export function describeRunStore(name: string, create: () => Promise<RunStore> | RunStore): void {
  describe(`RunStore conformance: ${name}`, () => {
    let store: RunStore;

    beforeEach(async () => {
      store = await create();
    });

    afterEach(async () => {
      await store.close();
    });

    /** A stored run with `n` stored steps. */
    async function runWithSteps(n: number): Promise<{ run: RunRecord; steps: StepRecord[] }> {
      const run = makeRun();
      await store.createRun(run);
      const steps: StepRecord[] = [];
      for (let i = 0; i < n; i++) {
        const step = makeStep(run.run_id, { name: `step-${i}` });
        await store.createStep(step);
        steps.push(step);
      }
      return { run, steps };
    }

    describe('runs', () => {
      it('stores a run and returns it by id', async () => {
        const run = makeRun();
        await store.createRun(run);

        expect(await store.getRun(run.run_id)).toEqual(run);
      });

      it('resolves null for an unknown run id', async () => {
        expect(await store.getRun(uid('run'))).toBeNull();
      });

      it('refuses a second run with the same id with ConflictError and keeps the first', async () => {
        const run = makeRun();
        await store.createRun(run);

        await expect(store.createRun({ ...run, entry: 'intruder' })).rejects.toBeInstanceOf(
          ConflictError,
        );
        expect((await store.getRun(run.run_id))?.entry).toBe('planner');
      });

      it('updates the patched fields and keeps the rest', async () => {
        const run = makeRun();
        await store.createRun(run);
        const usage = { tokens_in: 10, tokens_out: 5, cost_usd: 0.01, wall_ms: 120 };

        await store.updateRun(run.run_id, {
          status: 'completed',
          ended_at: '2025-01-01T00:00:01.000Z',
          budget_usage: usage,
        });

        const expected = {
          ...run,
          status: 'completed',
          ended_at: '2025-01-01T00:00:01.000Z',
          budget_usage: usage,
        };
        expect(await store.getRun(run.run_id)).toEqual(expected);
      });

      it('rejects an update of an unknown run with NotFoundError', async () => {
        await expect(store.updateRun(uid('run'), { status: 'failed' })).rejects.toBeInstanceOf(
          NotFoundError,
        );
      });
    });

    describe('steps', () => {
      it('stores a step and returns it by id', async () => {
        const { steps } = await runWithSteps(1);
        const [step] = steps;

        expect(await store.getStep(step?.step_id ?? '')).toEqual(step);
      });

      it('resolves null for an unknown step id', async () => {
        expect(await store.getStep(uid('step'))).toBeNull();
      });

      it('refuses a second step with the same id with ConflictError', async () => {
        const { run, steps } = await runWithSteps(1);
        const [step] = steps;
        if (!step) throw new Error('no step');

        await expect(store.createStep({ ...step, name: 'intruder' })).rejects.toBeInstanceOf(
          ConflictError,
        );
        expect((await store.getStep(step.step_id))?.name).toBe('step-0');
        expect(await store.listSteps(run.run_id)).toHaveLength(1);
      });

      it('refuses a step id already used in another run with ConflictError', async () => {
        const { steps } = await runWithSteps(1);
        const other = makeRun();
        await store.createRun(other);
        const [step] = steps;
        if (!step) throw new Error('no step');

        await expect(
          store.createStep(makeStep(other.run_id, { step_id: step.step_id })),
        ).rejects.toBeInstanceOf(ConflictError);
        expect(await store.listSteps(other.run_id)).toEqual([]);
      });

      it('updates the patched fields and keeps the rest', async () => {
        const { steps } = await runWithSteps(1);
        const [step] = steps;
        if (!step) throw new Error('no step');
        const error = { code: 'TIMEOUT' as const, message: 'late', retriable: true };

        await store.updateStep(step.step_id, {
          status: 'failed',
          error,
          ended_at: '2025-01-01T00:00:02.000Z',
        });

        const expected = { ...step, status: 'failed', error, ended_at: '2025-01-01T00:00:02.000Z' };
        expect(await store.getStep(step.step_id)).toEqual(expected);
      });

      it("keeps a step's first_token_at: null when created, set by a patch and by its end", async () => {
        const { steps } = await runWithSteps(2);
        const [a, b] = steps;
        if (!a || !b) throw new Error('no step');
        expect((await store.getStep(a.step_id))?.first_token_at).toBeNull();
        await store.updateStep(a.step_id, { first_token_at: '2025-01-01T00:00:00.250Z' });
        expect(await store.getStep(a.step_id)).toEqual({
          ...a,
          first_token_at: '2025-01-01T00:00:00.250Z',
        });
        await store.endStep({
          stepId: b.step_id,
          runId: b.run_id,
          events: [],
          patch: {
            status: 'succeeded',
            ended_at: '2025-01-01T00:00:01.000Z',
            first_token_at: '2025-01-01T00:00:00.500Z',
          },
        });
        await flushed(store);
        expect((await store.listSteps(b.run_id)).map((s) => s.first_token_at)).toEqual([
          '2025-01-01T00:00:00.250Z',
          '2025-01-01T00:00:00.500Z',
        ]);
      });

      it('rejects an update of an unknown step with NotFoundError', async () => {
        await expect(store.updateStep(uid('step'), { status: 'succeeded' })).rejects.toBeInstanceOf(
          NotFoundError,
        );
      });

      it('lists the steps of each run in creation order, and only that run', async () => {
        const a = makeRun();
        const b = makeRun();
        await store.createRun(a);
        await store.createRun(b);
        const created: StepRecord[] = [];
        // Interleaved, with ids that do not sort in creation order.
        for (const [i, runId] of [a.run_id, b.run_id, a.run_id, a.run_id, b.run_id].entries()) {
          const step = makeStep(runId, { step_id: `${9 - i}_${randomUUID()}`, name: `s${i}` });
          await store.createStep(step);
          created.push(step);
        }

        expect((await store.listSteps(a.run_id)).map((s) => s.name)).toEqual(['s0', 's2', 's3']);
        expect((await store.listSteps(b.run_id)).map((s) => s.name)).toEqual(['s1', 's4']);
        expect(await store.listSteps(a.run_id)).toEqual(
          created.filter((s) => s.run_id === a.run_id),
        );
      });

      it('lists no steps for an unknown run', async () => {
        expect(await store.listSteps(uid('run'))).toEqual([]);
      });

      it('lists steps with their latest updates', async () => {
        const { run, steps } = await runWithSteps(2);
        await store.updateStep(steps[1]?.step_id ?? '', { status: 'succeeded', output: 'done' });

        const listed = await store.listSteps(run.run_id);

        expect(listed.map((s) => s.status)).toEqual(['running', 'succeeded']);
        expect(listed[1]?.output).toBe('done');
      });
    });

    describe('event logs', () => {
      it('appends events with seq 1, 2, 3 … and reads them back in order', async () => {
        const { steps } = await runWithSteps(1);
        const id = steps[0]?.step_id ?? '';

        await store.appendEvents([narration(id, 1), narration(id, 2)]);
        await store.appendEvents([narration(id, 3)]);

        expect(await store.readEvents(id)).toEqual([
          narration(id, 1),
          narration(id, 2),
          narration(id, 3),
        ]);
      });

      it('keeps every kind of event intact', async () => {
        const { steps } = await runWithSteps(2);
        const id = steps[0]?.step_id ?? '';
        const other = steps[1]?.step_id ?? '';
        const events: StepEvent[] = [
          {
            type: 'started',
            step_id: id,
            seq: 1,
            ts: 1,
            pool_id: 'local',
            provenance: scriptedProvenance({ tokens_in: 0, tokens_out: 0, cost_usd: 0 }),
          },
          { type: 'token', step_id: id, seq: 2, ts: 2, t: 'Hel', i: 0 },
          { type: 'tool_suggest', step_id: id, seq: 3, ts: 3, tool: 'add', args: { a: 1, b: [2] } },
          {
            type: 'fact',
            step_id: id,
            seq: 4,
            ts: 4,
            fact: {
              fact_id: 'fact_1',
              run_id: 'run_1',
              type: 'booking',
              schema_uri: null,
              data: { seat: '3A' },
              emitted_by_step: id,
              ts: 4,
            },
          },
          { type: 'metrics', step_id: id, seq: 5, ts: 5, tokens_in: 3, tokens_out: 1, cost_usd: 0 },
          { type: 'narration', step_id: id, seq: 6, ts: 6, text: 'thinking' },
          {
            type: 'escalation',
            step_id: id,
            seq: 7,
            ts: 7,
            reason: 'breaker open',
            target: 'tool:add',
            breaker_state: 'open',
          },
          { type: 'checkpoint', step_id: id, seq: 8, ts: 8, checkpoint_id: 'cp_1' },
          {
            type: 'end',
            step_id: id,
            seq: 9,
            ts: 9,
            output: { answer: 42, list: [null, 'x'] },
            budget_usage: { tokens_in: 3, tokens_out: 1, cost_usd: 0.5, wall_ms: 12 },
            provenance: {
              seed: null,
              prompt_hash: 'p',
              params_hash: 'q',
              engine: 'openai',
              model_hash: 'm',
              pool_id: null,
              replica_id: 'r-1',
              tokens_in: 3,
              tokens_out: 1,
              cost_usd: 0.5,
              decode_time_ms: 4.5,
              price_table: '2025-01',
            },
          },
        ];
        const failed: StepEvent = {
          type: 'error',
          step_id: other,
          seq: 1,
          ts: 10,
          code: 'SCHEMA_VIOLATION',
          message: 'bad',
          retriable: false,
          details: { issues: [{ path: ['a'], message: 'x' }] },
        };

        await store.appendEvents(events);
        await store.appendEvents([failed]);

        expect(await store.readEvents(id)).toEqual(events);
        expect(await store.readEvents(other)).toEqual([failed]);
      });

      it('pages through a log: at most limit events after a seq, across appends', async () => {
        const { steps } = await runWithSteps(1);
        const id = (steps[0] as StepRecord).step_id;
        // Three appends, so the log spans what a store keeps apart (SQLite: chunks).
        for (const [from, to] of [
          [1, 4],
          [5, 5],
          [6, 9],
        ] as const) {
          const batch = [];
          for (let seq = from; seq <= to; seq++) batch.push(narration(id, seq));
          await store.appendEvents(batch);
        }
        const seqs = async (after: number, limit?: number): Promise<number[]> =>
          (await store.readEvents(id, after, limit)).map((e) => e.seq);
        expect(await seqs(0, 3)).toEqual([1, 2, 3]);
        expect(await seqs(3, 3)).toEqual([4, 5, 6]);
        expect(await seqs(6, 100)).toEqual([7, 8, 9]);
        expect(await seqs(9, 3)).toEqual([]);
        expect(await seqs(2, 0)).toEqual([]);
        expect(await seqs(4)).toEqual([5, 6, 7, 8, 9]);
      });

      it('appends one batch across several steps, each continuing its own log', async () => {
        const { steps } = await runWithSteps(2);
        const a = steps[0]?.step_id ?? '';
        const b = steps[1]?.step_id ?? '';
        await store.appendEvents([narration(a, 1)]);

        await store.appendEvents([narration(b, 1), narration(a, 2), narration(b, 2)]);

        expect((await store.readEvents(a)).map((e) => e.seq)).toEqual([1, 2]);
        expect((await store.readEvents(b)).map((e) => e.seq)).toEqual([1, 2]);
        expect((await store.readEvents(b)).every((e) => e.step_id === b)).toBe(true);
      });

      it.each([
        ['a log that does not start at 1', [2]],
        ['a gap', [1, 3]],
        ['a repeated seq', [1, 1]],
        ['a seq going back', [1, 2, 1]],
      ])('refuses %s with ConflictError and writes none of the batch', async (_label, seqs) => {
        const { steps } = await runWithSteps(1);
        const id = steps[0]?.step_id ?? '';

        await expect(
          store.appendEvents(seqs.map((seq) => narration(id, seq))),
        ).rejects.toBeInstanceOf(ConflictError);
        expect(await store.readEvents(id)).toEqual([]);
      });

      it('refuses a batch that does not continue the stored log, keeping the log as it was', async () => {
        const { steps } = await runWithSteps(1);
        const id = steps[0]?.step_id ?? '';
        await store.appendEvents([narration(id, 1), narration(id, 2)]);

        await expect(store.appendEvents([narration(id, 2, 'again')])).rejects.toBeInstanceOf(
          ConflictError,
        );
        await expect(store.appendEvents([narration(id, 4)])).rejects.toBeInstanceOf(ConflictError);

        expect(await store.readEvents(id)).toEqual([narration(id, 1), narration(id, 2)]);
        await store.appendEvents([narration(id, 3)]);
        expect((await store.readEvents(id)).map((e) => e.seq)).toEqual([1, 2, 3]);
      });

      it('refuses the whole multi-step batch when one step is out of order', async () => {
        const { steps } = await runWithSteps(2);
        const a = steps[0]?.step_id ?? '';
        const b = steps[1]?.step_id ?? '';

        await expect(
          store.appendEvents([narration(a, 1), narration(a, 2), narration(b, 1), narration(b, 3)]),
        ).rejects.toBeInstanceOf(ConflictError);

        expect(await store.readEvents(a)).toEqual([]);
        expect(await store.readEvents(b)).toEqual([]);
      });

      it('reads only events after afterSeq, in order', async () => {
        const { steps } = await runWithSteps(1);
        const id = steps[0]?.step_id ?? '';
        await store.appendEvents([1, 2, 3, 4, 5].map((seq) => narration(id, seq)));

        expect((await store.readEvents(id, 0)).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
        expect((await store.readEvents(id, 2)).map((e) => e.seq)).toEqual([3, 4, 5]);
        expect((await store.readEvents(id, 4)).map((e) => e.seq)).toEqual([5]);
        expect(await store.readEvents(id, 5)).toEqual([]);
        expect(await store.readEvents(id, 99)).toEqual([]);
      });

      it('reads an empty log for a step without events and for an unknown step', async () => {
        const { steps } = await runWithSteps(1);

        expect(await store.readEvents(steps[0]?.step_id ?? '')).toEqual([]);
        expect(await store.readEvents(uid('step'))).toEqual([]);
      });
    });

    describe('idempotent steps (NERVE-4003)', () => {
      it('a second claim of a client token in a run returns the first step and writes nothing', async () => {
        const run = makeRun();
        await store.createRun(run);
        const first = makeStep(run.run_id, { client_token: 'c-1' });
        expect(await store.claimStep(first)).toEqual({ step: first, created: true });

        const again = makeStep(run.run_id, { client_token: 'c-1', name: 'other' });
        expect(await store.claimStep(again)).toEqual({ step: first, created: false });
        expect(await store.getStep(again.step_id)).toBeNull();
        expect(await store.listSteps(run.run_id)).toEqual([first]);
      });

      it('the same token in another run, and steps without a token, are new steps', async () => {
        const a = makeRun();
        const b = makeRun();
        await store.createRun(a);
        await store.createRun(b);
        await store.claimStep(makeStep(a.run_id, { client_token: 'c-1' }));
        expect((await store.claimStep(makeStep(b.run_id, { client_token: 'c-1' }))).created).toBe(
          true,
        );
        expect((await store.claimStep(makeStep(a.run_id))).created).toBe(true);
        expect((await store.claimStep(makeStep(a.run_id))).created).toBe(true);
        expect(await store.listSteps(a.run_id)).toHaveLength(3);
      });

      it('concurrent claims of one token create exactly one step', async () => {
        const run = makeRun();
        await store.createRun(run);
        const claims = await Promise.all(
          Array.from({ length: 12 }, () =>
            store.claimStep(makeStep(run.run_id, { client_token: 'same' })),
          ),
        );
        expect(claims.filter((c) => c.created)).toHaveLength(1);
        expect(new Set(claims.map((c) => c.step.step_id)).size).toBe(1);
        expect(await store.listSteps(run.run_id)).toHaveLength(1);
      });

      it('a claim in an unknown run is refused with NotFoundError', async () => {
        await expect(
          store.claimStep(makeStep(uid('run'), { client_token: 'x' })),
        ).rejects.toBeInstanceOf(NotFoundError);
      });
    });

    describe('flows (NERVE-4001)', () => {
      it('stores a flow, finds it by id and by hash', async () => {
        const flow = makeFlow();
        expect(await store.putFlow(flow)).toEqual({ flow, created: true });
        expect(await store.getFlow(flow.flow_id)).toEqual(flow);
        expect(await store.getFlowByHash(flow.hash)).toEqual(flow);
        expect(await store.getFlow(uid('flow'))).toBeNull();
        expect(await store.getFlowByHash('0'.repeat(64))).toBeNull();
      });

      it('the same content (the same hash) gives back the first flow, whatever the new id', async () => {
        const flow = makeFlow();
        await store.putFlow(flow);
        const same = makeFlow({ hash: flow.hash, created_at: '2030-01-01T00:00:00.000Z' });
        expect(await store.putFlow(same)).toEqual({ flow, created: false });
        expect(await store.getFlow(same.flow_id)).toBeNull();
      });

      it('concurrent puts of one content store it once', async () => {
        const hash = makeFlow().hash;
        const puts = await Promise.all(
          Array.from({ length: 8 }, () => store.putFlow(makeFlow({ hash }))),
        );
        expect(puts.filter((p) => p.created)).toHaveLength(1);
        expect(new Set(puts.map((p) => p.flow.flow_id)).size).toBe(1);
      });
    });

    describe('facts (NERVE-4004)', () => {
      it('appends facts and lists them by run in append order, by type, after a cursor, up to a limit', async () => {
        const run = makeRun();
        await store.createRun(run);
        const facts = [
          makeFact(run.run_id, { type: 'booking' }),
          makeFact(run.run_id, { type: 'note', data: 'hello' }),
          makeFact(run.run_id, { type: 'booking', data: { city: 'Rome' } }),
        ];
        for (const f of facts) await store.appendFact(f);

        expect(await store.listFacts({ runId: run.run_id })).toEqual(facts);
        expect(await store.listFacts({ runId: run.run_id, type: 'booking' })).toEqual([
          facts[0],
          facts[2],
        ]);
        expect(
          await store.listFacts({ runId: run.run_id, after: facts[0]?.fact_id ?? '' }),
        ).toEqual(facts.slice(1));
        expect(await store.listFacts({ runId: run.run_id, limit: 2 })).toEqual(facts.slice(0, 2));
        expect(await store.listFacts({ runId: run.run_id, after: uid('fact') })).toEqual([]);
        expect(await store.listFacts({ runId: uid('run') })).toEqual([]);
      });

      it("lists a flow's facts across its runs, in append order", async () => {
        const flow = makeFlow();
        await store.putFlow(flow);
        const a = makeRun({ flow_id: flow.flow_id });
        const b = makeRun({ flow_id: flow.flow_id });
        const other = makeRun();
        for (const r of [a, b, other]) await store.createRun(r);
        const f1 = makeFact(a.run_id);
        const f2 = makeFact(other.run_id);
        const f3 = makeFact(b.run_id);
        const f4 = makeFact(a.run_id, { type: 'note' });
        for (const f of [f1, f2, f3, f4]) await store.appendFact(f);

        expect(await store.listFacts({ flowId: flow.flow_id })).toEqual([f1, f3, f4]);
        expect(await store.listFacts({ flowId: flow.flow_id, type: 'booking' })).toEqual([f1, f3]);
        expect(await store.listFacts({ flowId: flow.flow_id, runId: other.run_id })).toEqual([]);
      });

      it('refuses a fact of an unknown run, a second fact with the same id, and a query with no run or flow', async () => {
        await expect(store.appendFact(makeFact(uid('run')))).rejects.toBeInstanceOf(NotFoundError);
        const run = makeRun();
        await store.createRun(run);
        const fact = makeFact(run.run_id);
        await store.appendFact(fact);
        await expect(store.appendFact({ ...fact, data: 'changed' })).rejects.toBeInstanceOf(
          ConflictError,
        );
        expect(await store.listFacts({ runId: run.run_id })).toEqual([fact]);
        await expect(store.listFacts({})).rejects.toThrow(/runId or a flowId/);
      });
    });

    describe('checkpoints (NERVE-4005)', () => {
      it("stores a run's checkpoints with their snapshots and log offsets, oldest first", async () => {
        const run = makeRun();
        await store.createRun(run);
        const first = makeCheckpoint(run.run_id, { label: 'one' });
        const second = makeCheckpoint(run.run_id, { label: 'two', log_offsets: { step_a: 9 } });
        await store.createCheckpoint(first);
        await store.createCheckpoint(second);
        expect(await store.listCheckpoints(run.run_id)).toEqual([first, second]);
        expect(await store.listCheckpoints(uid('run'))).toEqual([]);
        await expect(store.createCheckpoint(makeCheckpoint(uid('run')))).rejects.toBeInstanceOf(
          NotFoundError,
        );
      });
    });

    describe('restarts', () => {
      it('lists runs, or those of some statuses', async () => {
        const running = makeRun({ created_at: '2025-01-01T00:00:01.000Z' });
        const done = makeRun({ status: 'completed', created_at: '2025-01-01T00:00:02.000Z' });
        const cancelling = makeRun({
          status: 'cancelling',
          created_at: '2025-01-01T00:00:03.000Z',
        });
        for (const r of [running, done, cancelling]) await store.createRun(r);
        // A run's steps, facts and checkpoints are not runs.
        await store.createStep(makeStep(running.run_id));
        await store.appendFact(makeFact(running.run_id));
        await store.createCheckpoint(makeCheckpoint(running.run_id));
        const ids = (runs: RunRecord[]): string[] => runs.map((r) => r.run_id);
        const mine = new Set([running.run_id, done.run_id, cancelling.run_id]);
        const all = (await store.listRuns()).filter((r) => mine.has(r.run_id));
        expect(ids(all)).toEqual([running.run_id, done.run_id, cancelling.run_id]);
        expect(all[0]).toEqual(running);
        const live = (await store.listRuns({ status: ['running', 'cancelling'] })).filter((r) =>
          mine.has(r.run_id),
        );
        expect(ids(live)).toEqual([running.run_id, cancelling.run_id]);
      });

      it('pages runs newest first from its indexes: by status, user and entry, `before` going on where a page ended, each run once', async () => {
        const at = (s: number) => `2025-01-01T00:00:0${s}.000Z`;
        const spec: [string | null, RunRecord['status'], string, number][] = [
          ['alice', 'running', 'planner', 1],
          ['bob', 'running', 'planner', 1],
          ['alice', 'completed', 'workflow:review', 2],
          [null, 'running', 'planner', 2],
          ['alice', 'running', 'workflow:review', 2],
          ['bob', 'failed', 'workflow:review', 3],
          ['alice', 'waiting', 'planner', 4],
        ];
        const runs = spec.map(([user_id, status, entry, t]) =>
          makeRun({ user_id, status, entry, created_at: at(t) }),
        );
        for (const r of runs) await store.createRun(r);
        // One moves on after its creation: the indexes follow its status.
        await store.updateRun(runs[1]?.run_id ?? '', { status: 'completed' });
        const idsOf = (list: RunRecord[]) => list.map((r) => r.run_id);
        const pick = (...i: number[]) => i.map((k) => runs[k]?.run_id);
        const newestFirst = (list: RunRecord[]) => {
          const times = list.map((r) => r.created_at);
          expect(times).toEqual([...times].sort().reverse());
        };

        // Every run, two at a time: each once, newest first.
        const seen: RunRecord[] = [];
        let before: string | undefined;
        for (;;) {
          const page = await store.pageRuns({ limit: 2, ...(before ? { before } : {}) });
          seen.push(...page);
          if (page.length < 2) break;
          before = page.at(-1)?.run_id;
        }
        expect(new Set(idsOf(seen))).toEqual(new Set(pick(0, 1, 2, 3, 4, 5, 6)));
        expect(seen).toHaveLength(7);
        newestFirst(seen);
        expect(seen[0]).toEqual(runs[6]);

        const page = (q: Omit<RunPageQuery, 'limit'>, limit = 50) =>
          store.pageRuns({ ...q, limit }).then((l) => new Set(idsOf(l)));
        expect(await page({ userId: 'alice' })).toEqual(new Set(pick(0, 2, 4, 6)));
        expect(await page({ userId: 'alice', status: ['running'] })).toEqual(new Set(pick(0, 4)));
        expect(await page({ userId: null })).toEqual(new Set(pick(3)));
        expect(await page({ status: ['running'] })).toEqual(new Set(pick(0, 3, 4)));
        expect(await page({ status: ['completed', 'failed'] })).toEqual(new Set(pick(1, 2, 5)));
        expect(await page({ entry: 'workflow:review' })).toEqual(new Set(pick(2, 4, 5)));
        expect(await page({ entry: 'workflow:review', userId: 'alice' })).toEqual(
          new Set(pick(2, 4)),
        );
        expect(await page({ entry: 'workflow:review', status: ['running', 'failed'] })).toEqual(
          new Set(pick(4, 5)),
        );
        const [newest] = await store.pageRuns({ userId: 'alice', limit: 1 });
        expect(newest).toEqual(runs[6]);
        // Going on after the newest of alice's runs: her older ones.
        const older = await store.pageRuns({
          userId: 'alice',
          before: runs[6]?.run_id ?? '',
          limit: 50,
        });
        expect(new Set(idsOf(older))).toEqual(new Set(pick(0, 2, 4)));
        newestFirst(older);
        expect(idsOf(await store.listRuns({ status: ['completed'] }))).toEqual(pick(1, 2));
        await expect(store.pageRuns({ before: 'run_0000', limit: 5 })).rejects.toBeInstanceOf(
          NotFoundError,
        );
      });

      it('releases a client token: the step keeps everything else, and the token claims a new step', async () => {
        const run = makeRun();
        await store.createRun(run);
        const first = makeStep(run.run_id, { client_token: 'c-1' });
        await store.claimStep(first);
        const released = await store.releaseClientToken(first.step_id);
        expect(released).toEqual({ ...first, client_token: null });
        expect(await store.getStep(first.step_id)).toEqual(released);
        const second = makeStep(run.run_id, { client_token: 'c-1' });
        expect(await store.claimStep(second)).toEqual({ step: second, created: true });
        // Releasing the first again leaves the token with the second.
        await store.releaseClientToken(first.step_id);
        const third = makeStep(run.run_id, { client_token: 'c-1' });
        expect(await store.claimStep(third)).toEqual({ step: second, created: false });
        await expect(store.releaseClientToken(uid('step'))).rejects.toBeInstanceOf(NotFoundError);
      });
    });

    describe('call recordings (NERVE-4021)', () => {
      const recording = (runId: string, over: Partial<CallRecording> = {}): CallRecording => ({
        run_id: runId,
        client_token: 'c-1',
        actor_path: ['planner'],
        seq: 1,
        kind: 'engine',
        name: 'scripted',
        inputs: { prompt_hash: 'p', params_hash: 'q', seed: 7, engine: 'scripted' },
        output: { tokens: ['Hello', ' world'], error: null },
        ts: 1_700_000_000_000,
        ...over,
      });

      it('stores recordings by (client token, actor path, call sequence) and finds each by its key', async () => {
        const run = makeRun();
        await store.createRun(run);
        const one = recording(run.run_id);
        const two = recording(run.run_id, { seq: 2, output: { tokens: ['Again'], error: null } });
        const tool = recording(run.run_id, {
          actor_path: ['planner', 'add'],
          kind: 'tool',
          name: 'add',
          inputs: { tool: 'add', args_hash: 'h' },
          output: { value: { sum: 3 }, error: null },
        });
        const otherToken = recording(run.run_id, { client_token: 'c-2' });
        for (const r of [one, two, tool, otherToken]) await store.putRecording(r);

        expect(await store.getRecording(run.run_id, one)).toEqual(one);
        expect(await store.getRecording(run.run_id, two)).toEqual(two);
        expect(await store.getRecording(run.run_id, tool)).toEqual(tool);
        expect(await store.getRecording(run.run_id, otherToken)).toEqual(otherToken);
        expect(
          await store.getRecording(run.run_id, {
            client_token: 'c-1',
            actor_path: ['planner'],
            seq: 3,
          }),
        ).toBeNull();
        // A path is a list of names, not a string to split: ['a', 'b'] is not ['a/b'].
        await store.putRecording(recording(run.run_id, { actor_path: ['planner/add'] }));
        expect(await store.getRecording(run.run_id, tool)).toEqual(tool);
        expect(await store.getRecording(uid('run'), one)).toBeNull();
        expect((await store.listRecordings(run.run_id)).map((r) => r.actor_path)).toEqual([
          ['planner'],
          ['planner'],
          ['planner', 'add'],
          ['planner'],
          ['planner/add'],
        ]);
        expect(await store.listRecordings(uid('run'))).toEqual([]);
      });

      it('a recording stored again under its key replaces the first, in its place', async () => {
        const run = makeRun();
        await store.createRun(run);
        await store.putRecording(recording(run.run_id));
        await store.putRecording(recording(run.run_id, { seq: 2 }));
        const redone = recording(run.run_id, { output: { tokens: ['Redone'], error: null } });
        await store.putRecording(redone);
        expect(await store.getRecording(run.run_id, redone)).toEqual(redone);
        const listed = await store.listRecordings(run.run_id);
        expect(listed.map((r) => r.seq)).toEqual([1, 2]);
        expect(listed[0]).toEqual(redone);
      });

      it('refuses a recording of an unknown run with NotFoundError', async () => {
        await expect(store.putRecording(recording(uid('run')))).rejects.toBeInstanceOf(
          NotFoundError,
        );
      });
    });

    describe('approvals', () => {
      function approval(run: RunRecord, step: StepRecord, n: number): ApprovalRecord {
        return {
          approval_id: uid('apr'),
          run_id: run.run_id,
          step_id: step.step_id,
          client_token: 'c-1',
          actor_path: n === 1 ? [] : ['ops', 'deployer'],
          action: 'call_tool',
          target: 'deploy',
          subject: 'alice',
          rule: 'approvals.tools',
          approvers: ['bob', 'carol'],
          status: 'pending',
          snapshot: { value: 'running', context: { seq: 3, tokenIndex: 1, accepted: [] } },
          requested_at: '2026-11-23T10:00:00.000Z',
          decided_by: null,
          reason: null,
          decided_at: null,
        };
      }

      it('stores a request once: asked again under its id, the first is returned and nothing changes', async () => {
        const { run, steps } = await runWithSteps(1);
        const first = approval(run, steps[0] as StepRecord, 1);
        const second = approval(run, steps[0] as StepRecord, 2);

        expect(await store.createApproval(first)).toEqual({ approval: first, created: true });
        await store.createApproval(second);
        const again = await store.createApproval({ ...first, approvers: ['mallory'] });

        expect(again).toEqual({ approval: first, created: false });
        expect(await store.getApproval(first.approval_id)).toEqual(first);
        expect(await store.listApprovals(run.run_id)).toEqual([first, second]);
        expect(await store.getApproval(uid('apr'))).toBeNull();
        expect(await store.listApprovals(uid('run'))).toEqual([]);
      });

      it('decides a pending approval once; a second decision is a ConflictError naming the first', async () => {
        const { run, steps } = await runWithSteps(1);
        const a = approval(run, steps[0] as StepRecord, 1);
        await store.createApproval(a);
        const decision = {
          status: 'approved' as const,
          decided_by: 'bob',
          reason: 'looks fine',
          decided_at: '2026-11-23T10:05:00.000Z',
        };

        const done = await store.decideApproval(a.approval_id, decision);

        expect(done).toEqual({ ...a, ...decision });
        expect(await store.getApproval(a.approval_id)).toEqual(done);
        const again = store.decideApproval(a.approval_id, { ...decision, status: 'rejected' });
        await expect(again).rejects.toBeInstanceOf(ConflictError);
        await expect(again).rejects.toMatchObject({
          details: { status: 'approved', decided_by: 'bob' },
        });
        expect((await store.getApproval(a.approval_id))?.status).toBe('approved');
      });

      it('of concurrent decisions exactly one wins', async () => {
        const { run, steps } = await runWithSteps(1);
        const a = approval(run, steps[0] as StepRecord, 1);
        await store.createApproval(a);
        const at = '2026-11-23T10:05:00.000Z';

        const results = await Promise.allSettled(
          ['bob', 'carol', 'bob', 'carol'].map((by, i) =>
            store.decideApproval(a.approval_id, {
              status: i % 2 === 0 ? 'approved' : 'rejected',
              decided_by: by,
              reason: null,
              decided_at: at,
            }),
          ),
        );

        const won = results.filter((r) => r.status === 'fulfilled');
        expect(won).toHaveLength(1);
        const stored = await store.getApproval(a.approval_id);
        expect(stored).toEqual((won[0] as PromiseFulfilledResult<ApprovalRecord>).value);
        for (const r of results) {
          if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(ConflictError);
        }
      });

      it('refuses a request in an unknown run and a decision on an unknown approval with NotFoundError', async () => {
        const { run, steps } = await runWithSteps(1);
        const a = approval(run, steps[0] as StepRecord, 1);

        await expect(store.createApproval({ ...a, run_id: uid('run') })).rejects.toBeInstanceOf(
          NotFoundError,
        );
        await expect(
          store.decideApproval(uid('apr'), {
            status: 'approved',
            decided_by: 'bob',
            reason: null,
            decided_at: '2026-11-23T10:05:00.000Z',
          }),
        ).rejects.toBeInstanceOf(NotFoundError);
      });
    });

    describe('run settings (NERVE-4002)', () => {
      it("keeps a run's policy, pool policy, FS policy, replay_of and cancel_on_disconnect", async () => {
        const recorded = makeRun();
        await store.createRun(recorded);
        const run = makeRun({
          mode: 'strict_replay',
          seed: 42,
          policy: { tools: { allow: ['add'], deny: [] }, max_depth: 3 },
          pool_policy: { placement: { affinity: { tags: ['gpu'] } } },
          fs_policy: { roots: ['./sandbox'], allow: ['**/*.md'], quota_bytes: 1024 },
          replay_of: recorded.run_id,
          cancel_on_disconnect: true,
        });
        await store.createRun(run);
        expect(await store.getRun(run.run_id)).toEqual(run);
        await store.updateRun(run.run_id, { status: 'completed' });
        expect(await store.getRun(run.run_id)).toEqual({ ...run, status: 'completed' });
      });

      it("keeps each run's own entry, not its flow's name, and pages by it (issue 45)", async () => {
        // One flow (its content), posted as `hello` and later as `trip`: each run keeps the
        // name its caller made it under.
        const hello = `hello-${randomUUID()}`;
        const trip = `trip-${randomUUID()}`;
        const { flow } = await store.putFlow(makeFlow({ name: hello }));
        const asStored = makeRun({ flow_id: flow.flow_id, entry: hello });
        const asPosted = makeRun({
          flow_id: flow.flow_id,
          entry: trip,
          created_at: '2025-01-01T00:00:01.000Z',
        });
        for (const r of [asStored, asPosted]) await store.createRun(r);
        expect((await store.getRun(asPosted.run_id))?.entry).toBe(trip);
        const byEntry = async (entry: string) =>
          (await store.pageRuns({ entry, limit: 10 })).map((r) => r.run_id);
        expect(await byEntry(trip)).toEqual([asPosted.run_id]);
        expect(await byEntry(hello)).toEqual([asStored.run_id]);
        // Its end changes its status, never its entry.
        await store.updateRun(asPosted.run_id, { status: 'completed' });
        expect(await store.getRun(asPosted.run_id)).toEqual({ ...asPosted, status: 'completed' });
        expect(await byEntry(trip)).toEqual([asPosted.run_id]);
        expect(
          (await store.pageRuns({ entry: trip, status: ['completed'], limit: 10 })).map(
            (r) => r.entry,
          ),
        ).toEqual([trip]);
      });
    });

    describe("a step's end, one write", () => {
      const used = { tokens_in: 3, tokens_out: 4, cost_usd: 0.25, wall_ms: 9 };
      /** The step's end event at `seq`. */
      const endEvent = (stepId: string, seq: number): StepEvent => ({
        type: 'end',
        step_id: stepId,
        seq,
        ts: 1_700_000_000_100,
        output: { ok: true },
        budget_usage: used,
        provenance: scriptedProvenance({ tokens_in: 3, tokens_out: 4, cost_usd: 0.25 }),
      });

      it('appends its last events, ends its record and adds its use to the run', async () => {
        const { run, steps } = await runWithSteps(1);
        const id = steps[0]?.step_id ?? '';
        await store.appendEvents([narration(id, 1)]);
        await store.addRunUsage(run.run_id, { ...used, tokens_in: 100 });
        await store.endStep({
          stepId: id,
          runId: run.run_id,
          events: [narration(id, 2), endEvent(id, 3)],
          patch: { status: 'succeeded', output: { ok: true }, budget_usage: used, ended_at: 'x' },
          runUsage: used,
        });
        expect((await store.readEvents(id)).map((e) => e.seq)).toEqual([1, 2, 3]);
        expect((await store.readEvents(id))[2]).toEqual(endEvent(id, 3));
        const step = await store.getStep(id);
        expect(step).toMatchObject({ status: 'succeeded', output: { ok: true }, ended_at: 'x' });
        expect(step?.budget_usage).toEqual(used);
        expect((await store.getRun(run.run_id))?.budget_usage).toEqual({
          tokens_in: 103,
          tokens_out: 8,
          cost_usd: 0.5,
          wall_ms: 18,
        });
      });

      it('without events or use, only ends the record; the run is untouched', async () => {
        const { run, steps } = await runWithSteps(1);
        const id = steps[0]?.step_id ?? '';
        await store.endStep({
          stepId: id,
          runId: run.run_id,
          events: [],
          patch: { status: 'failed' },
        });
        expect((await store.getStep(id))?.status).toBe('failed');
        expect(await store.readEvents(id)).toEqual([]);
        expect((await store.getRun(run.run_id))?.budget_usage).toEqual(zeroUsage());
      });

      it('writes nothing when its events do not continue the log', async () => {
        const { run, steps } = await runWithSteps(1);
        const id = steps[0]?.step_id ?? '';
        await store.appendEvents([narration(id, 1)]);
        const end = store.endStep({
          stepId: id,
          runId: run.run_id,
          events: [endEvent(id, 3)],
          patch: { status: 'succeeded' },
          runUsage: used,
        });
        await expect(end).rejects.toBeInstanceOf(ConflictError);
        await expect(end).rejects.toMatchObject({ details: { step_id: id, expected: 2, got: 3 } });
        expect((await store.getStep(id))?.status).toBe('running');
        expect(await store.readEvents(id)).toEqual([narration(id, 1)]);
        expect((await store.getRun(run.run_id))?.budget_usage).toEqual(zeroUsage());
      });

      it('refuses an unknown step or run, writing nothing', async () => {
        const { run, steps } = await runWithSteps(1);
        const id = steps[0]?.step_id ?? '';
        const unknown = uid('step');
        await expect(
          store.endStep({
            stepId: unknown,
            runId: run.run_id,
            events: [],
            patch: { status: 'failed' },
          }),
        ).rejects.toBeInstanceOf(NotFoundError);
        await expect(
          store.endStep({
            stepId: id,
            runId: uid('run'),
            events: [endEvent(id, 1)],
            patch: { status: 'succeeded' },
            runUsage: used,
          }),
        ).rejects.toBeInstanceOf(NotFoundError);
        expect((await store.getStep(id))?.status).toBe('running');
        expect(await store.readEvents(id)).toEqual([]);
      });
    });

    describe('run usage (POLICY-3000)', () => {
      it('adds usage to a run atomically, also when steps add theirs at once', async () => {
        const run = makeRun();
        await store.createRun(run);
        const one = { tokens_in: 1, tokens_out: 2, cost_usd: 0.1, wall_ms: 5 };
        await Promise.all(Array.from({ length: 10 }, () => store.addRunUsage(run.run_id, one)));
        const total = await store.addRunUsage(run.run_id, { ...one, cost_usd: 0.2 });
        let cost = 0;
        for (let i = 0; i < 10; i++) cost += 0.1;
        expect(total).toEqual({
          tokens_in: 11,
          tokens_out: 22,
          cost_usd: cost + 0.2,
          wall_ms: 55,
        });
        expect((await store.getRun(run.run_id))?.budget_usage).toEqual(total);
        await expect(store.addRunUsage(uid('run'), one)).rejects.toBeInstanceOf(NotFoundError);
      });
    });

    describe('records are copies', () => {
      it('ignores changes to a returned run, nested fields included', async () => {
        const run = makeRun();
        const original = structuredClone(run);
        await store.createRun(run);

        const got = await store.getRun(run.run_id);
        if (!got) throw new Error('run not stored');
        Object.assign(got, { status: 'failed' });
        got.budget_usage.tokens_in = 999;
        await store.updateRun(run.run_id, { status: 'cancelling' });

        expect(await store.getRun(run.run_id)).toEqual({ ...original, status: 'cancelling' });
      });

      it('ignores changes to the run object after it was stored', async () => {
        const usage = zeroUsage();
        const run = makeRun({ budget_usage: usage });
        await store.createRun(run);

        usage.tokens_out = 42;
        Object.assign(run, { entry: 'changed' });

        expect(await store.getRun(run.run_id)).toMatchObject({
          entry: 'planner',
          budget_usage: zeroUsage(),
        });
      });

      it('ignores changes to a returned or listed step, nested fields included', async () => {
        const { run, steps } = await runWithSteps(1);
        const step = steps[0];
        if (!step) throw new Error('no step');
        const original = structuredClone(step);

        const got = await store.getStep(step.step_id);
        if (!got) throw new Error('step not stored');
        Object.assign(got, { status: 'failed' });
        got.budget_usage.tokens_in = 999;
        (got.input as { message: string }).message = 'changed';
        const [listed] = await store.listSteps(run.run_id);
        if (!listed) throw new Error('step not listed');
        Object.assign(listed, { name: 'changed' });
        listed.budget_usage.wall_ms = 999;

        expect(await store.getStep(step.step_id)).toEqual(original);
      });

      it('ignores changes to the step object after it was stored', async () => {
        const run = makeRun();
        await store.createRun(run);
        const usage = zeroUsage();
        const input = { message: 'plan a trip' };
        const step = makeStep(run.run_id, { budget_usage: usage, input });
        await store.createStep(step);

        usage.tokens_in = 42;
        input.message = 'changed';
        Object.assign(step, { name: 'changed' });

        expect(await store.getStep(step.step_id)).toMatchObject({
          name: 'planner',
          budget_usage: zeroUsage(),
          input: { message: 'plan a trip' },
        });
      });

      it('ignores changes to returned events and to events after they were appended', async () => {
        const { steps } = await runWithSteps(1);
        const id = steps[0]?.step_id ?? '';
        const appended = narration(id, 1, 'original');
        await store.appendEvents([appended]);

        Object.assign(appended, { text: 'changed after append' });
        const [read] = await store.readEvents(id);
        if (!read) throw new Error('event not stored');
        Object.assign(read, { text: 'changed after read' });
        (await store.readEvents(id)).push(narration(id, 2));

        expect(await store.readEvents(id)).toEqual([narration(id, 1, 'original')]);
      });
    });
  });
}
