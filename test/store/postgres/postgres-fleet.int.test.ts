/**
 * The PostgreSQL store as a fleet's records (issue 32): a replica's writes fenced by its turn
 * at the step (`takeTurn`, `PostgresStoreOptions.fence`), and budget reservations that every
 * process on the schema sees (`budgets`, POLICY-3000) — two stores on one schema standing for
 * two processes.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { BudgetExceededError } from '../../../src/errors/budget-exceeded-error.js';
import { NotFoundError } from '../../../src/errors/not-found-error.js';
import { WorkerLostError } from '../../../src/errors/worker-lost-error.js';
import {
  POSTGRES_SCHEMA_VERSION,
  postgresStore,
  type PostgresRunStore,
} from '../../../src/store/postgres/postgres-store.js';
import type { TurnFence } from '../../../src/store/write-target.js';
import { dropSchemas, POSTGRES_URL, sql, testSchema } from '../../support/postgres.js';
import { makeCheckpoint, makeFact, makeRun, makeStep, narration } from '../../support/records.js';

const schemas: string[] = [];
const stores: PostgresRunStore[] = [];
let n = 0;

afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await dropSchemas(schemas);
});

/** Two stores on a new schema: `writer` fences with the turn it is given, `other` does not. */
function twoProcesses(): { writer: PostgresRunStore; other: PostgresRunStore; turn: TurnFence[] } {
  const schema = `${testSchema('pg_fleet')}_${n++}`;
  schemas.push(schema);
  const turn: TurnFence[] = [];
  const writer = postgresStore({
    connection: POSTGRES_URL,
    schema,
    fence: (target) => turn.find((t) => t.stepId === target.stepId) ?? turn[0] ?? null,
  });
  const other = postgresStore({ connection: POSTGRES_URL, schema });
  stores.push(writer, other);
  return { writer, other, turn };
}

const fenced = (err: unknown): boolean =>
  err instanceof WorkerLostError && (err.details as { reason?: string }).reason === 'fenced';

describe('a fleet replica’s turn at a step fences its writes', () => {
  it('once a later turn is taken, every write of the earlier one is refused WORKER_LOST (fenced) and changes nothing; the later one writes on', async () => {
    const { writer, other, turn } = twoProcesses();
    const run = makeRun();
    await other.createRun(run);
    const step = makeStep(run.run_id);
    await other.createStep(step);
    await writer.takeTurn(step.step_id, 1, 'replica-a:1');
    turn.push({ stepId: step.step_id, token: 'replica-a:1' });
    await writer.appendEvents([narration(step.step_id, 1)]);
    await writer.updateStep(step.step_id, { status: 'running' });

    // Another replica took the job over (BullMQ's second start) and its turn with it.
    await other.takeTurn(step.step_id, 2, 'replica-b:7');
    const writes: [string, () => Promise<unknown>][] = [
      ['append', () => writer.appendEvents([narration(step.step_id, 2)])],
      ['update', () => writer.updateStep(step.step_id, { status: 'failed' })],
      [
        'end',
        () =>
          writer.endStep({
            stepId: step.step_id,
            runId: run.run_id,
            events: [narration(step.step_id, 2)],
            patch: { status: 'succeeded' },
          }),
      ],
      ['child', () => writer.createStep(makeStep(run.run_id, { parent_step_id: step.step_id }))],
      ['fact', () => writer.appendFact(makeFact(run.run_id, { emitted_by_step: step.step_id }))],
      [
        'checkpoint',
        () => writer.createCheckpoint(makeCheckpoint(run.run_id, { step_id: step.step_id })),
      ],
      [
        'reserve',
        () =>
          writer.budgets.reserve(
            { runId: run.run_id, stepId: step.step_id, token: 'x' },
            { tokens_in: 0, tokens_out: 1, cost_usd: 0 },
            {},
          ),
      ],
    ];
    for (const [name, write] of writes) {
      const err = await write().then(
        () => null,
        (e: unknown) => e,
      );
      expect(fenced(err), `${name}: ${String(err)}`).toBe(true);
    }
    // Nothing of them is there.
    expect(await other.readEvents(step.step_id)).toHaveLength(1);
    expect((await other.getStep(step.step_id))?.status).toBe('running');
    expect(await other.listSteps(run.run_id)).toHaveLength(1);
    expect(await other.listFacts({ runId: run.run_id })).toEqual([]);
    expect(await other.listCheckpoints(run.run_id)).toEqual([]);

    // The later turn writes on from where the log ends.
    turn.splice(0, 1, { stepId: step.step_id, token: 'replica-b:7' });
    await writer.appendEvents([narration(step.step_id, 2)]);
    expect((await other.readEvents(step.step_id)).map((e) => e.seq)).toEqual([1, 2]);
  });

  it('an earlier turn arriving after a later one is refused; the same turn again is a no-op', async () => {
    const { writer, other } = twoProcesses();
    const run = makeRun();
    await other.createRun(run);
    const step = makeStep(run.run_id);
    await other.createStep(step);
    await other.takeTurn(step.step_id, 3, 'replica-b:3');
    // A replica that took the job at its second start, frozen until now.
    const late = await writer.takeTurn(step.step_id, 2, 'replica-a:2').then(
      () => null,
      (e: unknown) => e,
    );
    expect(fenced(late)).toBe(true);
    // A turn sent again (a batch retried) is the same turn.
    await expect(other.takeTurn(step.step_id, 3, 'replica-b:3')).resolves.toBeUndefined();
  });

  it('a write about no step taken here is not fenced', async () => {
    const { writer } = twoProcesses();
    const run = makeRun();
    await writer.createRun(run);
    await writer.updateRun(run.run_id, { status: 'running' });
    expect((await writer.getRun(run.run_id))?.status).toBe('running');
  });
});

describe('budget reservations every process on the schema sees (POLICY-3000)', () => {
  const draw = (tokensOut: number) => ({ tokens_in: 0, tokens_out: tokensOut, cost_usd: 0 });

  it('reservations of two processes against one run never pass its limit; the one that would is refused naming the limit and what is left', async () => {
    const { writer: one, other: two } = twoProcesses();
    const run = makeRun({ budgets: { max_tokens_out: 100 } });
    await one.createRun(run);
    const limits = run.budgets;
    const holders = Array.from({ length: 8 }, (_, i) => ({
      runId: run.run_id,
      stepId: `step_${i}`,
      token: `attempt-${i}`,
    }));
    const results = await Promise.allSettled(
      holders.map((h, i) => (i % 2 ? one : two).budgets.reserve(h, draw(30), limits)),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    for (const r of results) {
      if (r.status === 'rejected') {
        expect(r.reason).toBeInstanceOf(BudgetExceededError);
        expect(r.reason).toMatchObject({ details: { limit: 'max_tokens_out', remaining: 10 } });
      }
    }
    await expect(
      one.budgets.reserve({ runId: 'run_none', stepId: 's', token: 't' }, draw(1), limits),
    ).rejects.toBeInstanceOf(NotFoundError);
  });

  it('a settle gives back what was not used; a step’s end takes its hold off with its use added; a new attempt replaces a lost one’s hold', async () => {
    const { writer: one, other: two } = twoProcesses();
    const run = makeRun({ budgets: { max_tokens_out: 100 } });
    await one.createRun(run);
    const a = makeStep(run.run_id);
    const b = makeStep(run.run_id);
    await one.createStep(a);
    await one.createStep(b);
    const limits = run.budgets;
    const holdA = { runId: run.run_id, stepId: a.step_id, token: 'a1' };
    await one.budgets.reserve(holdA, draw(60), limits);
    await expect(
      two.budgets.reserve({ runId: run.run_id, stepId: b.step_id, token: 'b1' }, draw(50), limits),
    ).rejects.toBeInstanceOf(BudgetExceededError);
    // A used 20 of its 60: 40 back.
    await one.budgets.settle(holdA, { tokens_in: 0, tokens_out: -40, cost_usd: 0 });
    await two.budgets.reserve(
      { runId: run.run_id, stepId: b.step_id, token: 'b1' },
      draw(50),
      limits,
    );
    // A ends: its 20 enter the run's use and its hold leaves, in the same write.
    await one.endStep({
      stepId: a.step_id,
      runId: run.run_id,
      events: [],
      patch: { status: 'succeeded' },
      runUsage: { tokens_in: 0, tokens_out: 20, cost_usd: 0, wall_ms: 0 },
    });
    // B's attempt was lost; its next attempt's reservation replaces the lost one's 50.
    await two.budgets.reserve(
      { runId: run.run_id, stepId: b.step_id, token: 'b2' },
      draw(80),
      limits,
    );
    await expect(
      one.budgets.reserve({ runId: run.run_id, stepId: 'step_c', token: 'c1' }, draw(1), limits),
    ).rejects.toMatchObject({ details: { remaining: 0 } });
    // A settle of the lost attempt changes nothing; B's use then enters the run's.
    await two.budgets.settle(
      { runId: run.run_id, stepId: b.step_id, token: 'b1' },
      { tokens_in: 0, tokens_out: -50, cost_usd: 0 },
    );
    const used = await two.addRunUsage(
      run.run_id,
      { tokens_in: 0, tokens_out: 80, cost_usd: 0, wall_ms: 0 },
      b.step_id,
    );
    expect(used.tokens_out).toBe(100);
    await expect(
      one.budgets.reserve({ runId: run.run_id, stepId: 'step_c', token: 'c1' }, draw(1), limits),
    ).rejects.toBeInstanceOf(BudgetExceededError);
  });
});

describe('schema version 3', () => {
  it('a schema of version 2 (before turns, holds and kept answers) is brought to the current version at start, its runs kept and reservable', async () => {
    const { other: first } = twoProcesses();
    const run = makeRun({ budgets: { max_tokens_out: 50 } });
    await first.createRun(run);
    await first.flush();
    const schema = schemas.at(-1) as string;
    // Back to what version 4 had: a row per event, no log in the steps' rows.
    await sql(`DROP TABLE "${schema}".chunks`);
    await sql(`ALTER TABLE "${schema}".steps DROP COLUMN log`);
    await sql(
      `CREATE TABLE "${schema}".events (step_id TEXT NOT NULL, seq INTEGER NOT NULL,
        event JSON NOT NULL, PRIMARY KEY (step_id, seq))`,
    );
    // Back to what version 2 had.
    await sql(`DROP TABLE "${schema}".turns, "${schema}".holds, "${schema}".batches`);
    // And before version 4's durable agents.
    await sql(
      `DROP TABLE "${schema}".actors, "${schema}".mailbox, "${schema}".wakes, "${schema}".schedules`,
    );
    await sql(`DROP FUNCTION "${schema}".apply(jsonb, text, boolean, json)`);
    await sql(`DELETE FROM "${schema}".meta WHERE key = 'store_id'`);
    await sql(`UPDATE "${schema}".meta SET value = '2' WHERE key = 'schema_version'`);
    const reopened = postgresStore({ connection: POSTGRES_URL, schema });
    stores.push(reopened);
    expect(await reopened.getRun(run.run_id)).toEqual(run);
    expect(await reopened.identity()).toMatch(/^postgres:[0-9a-f-]{36}$/);
    await reopened.budgets.reserve(
      { runId: run.run_id, stepId: 's', token: 't' },
      { tokens_in: 0, tokens_out: 40, cost_usd: 0 },
      run.budgets,
    );
    expect(await sql(`SELECT value FROM "${schema}".meta WHERE key = 'schema_version'`)).toEqual([
      { value: String(POSTGRES_SCHEMA_VERSION) },
    ]);
  });
});
