/**
 * Schema 10 of the SQLite store (issue 47: a step is one record): a file an older axon wrote
 * (`test/fixtures/stores/sqlite-schema-9.db`, schema 9: every log chunk in `event_chunks`, a
 * run's usage in its record) is migrated in place when a store opens it, and reads back what
 * it held — the run's usage to the last bit of its cost, each step, each log from every seq —
 * and takes new writes: an old step's log goes on in `event_chunks`, a new short step's log
 * goes in its own row, a step's end adds to the run's usage columns.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunRecord, StepRecord } from '../../../src/store/records.js';
import { sqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import type { StepEvent } from '../../../src/streams/events.js';
import { makeStep, narration } from '../../support/records.js';

const FIXTURES = join(import.meta.dirname, '../../fixtures/stores');
const dir = mkdtempSync(join(tmpdir(), 'axon-sqlite-schema-10-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** What the older axon wrote, as it read it back. */
const written = JSON.parse(readFileSync(join(FIXTURES, 'sqlite-schema-9.json'), 'utf8')) as {
  run: RunRecord;
  steps: StepRecord[];
  events: Record<string, StepEvent[]>;
};

/** A copy of the schema 9 file, to open (and migrate). */
function schema9(): string {
  const file = join(dir, `v9-${Math.random().toString(36).slice(2)}.db`);
  copyFileSync(join(FIXTURES, 'sqlite-schema-9.db'), file);
  return file;
}

describe('SQLite schema 10', () => {
  it('migrates a schema 9 file in place: the run (its usage exact), its steps and every log read back as written', async () => {
    const store = sqliteStore(schema9());
    expect(store.schemaVersion).toBe(10);
    expect(await store.getRun('run_v9')).toEqual(written.run);
    // 0.1 + 0.2, added by two calls: the same double it was, not 0.3.
    expect((await store.getRun('run_v9'))?.budget_usage.cost_usd).toBe(0.1 + 0.2);
    expect(await store.listSteps('run_v9')).toEqual(written.steps);
    for (const [stepId, events] of Object.entries(written.events)) {
      for (let after = 0; after <= events.length; after += 7) {
        expect(await store.readEvents(stepId, after)).toEqual(events.slice(after));
      }
    }
    // The usage left the record for the columns.
    expect(
      store.db.prepare("SELECT record ->> '$[12]' AS usage, tokens_in, cost_usd FROM runs").get(),
    ).toEqual({ usage: null, tokens_in: 3, cost_usd: 0.1 + 0.2 });
    await store.close();
  });

  it('takes new writes: an old log goes on, a new step keeps its first events in its row, an end adds to the usage columns', async () => {
    const file = schema9();
    const store = sqliteStore(file);
    const longLog = written.events['step_long'] ?? [];
    const more = [narration('step_long', longLog.length + 1, 'after the migration')];
    await store.appendEvents(more);
    const fresh = makeStep('run_v9', { step_id: 'step_fresh', client_token: 'tok-fresh' });
    await store.createStep(fresh);
    const freshEvents = [narration('step_fresh', 1), narration('step_fresh', 2)];
    await store.endStep({
      stepId: 'step_fresh',
      runId: 'run_v9',
      events: freshEvents,
      patch: { status: 'succeeded', output: 'ok', ended_at: '2026-12-07T00:00:00.000Z' },
      runUsage: { tokens_in: 1, tokens_out: 2, cost_usd: 0.7, wall_ms: 3 },
    });
    await store.flush();
    await store.close();

    const reopened = sqliteStore(file);
    expect(await reopened.readEvents('step_long')).toEqual([...longLog, ...more]);
    expect(await reopened.readEvents('step_long', longLog.length)).toEqual(more);
    expect(await reopened.readEvents('step_fresh')).toEqual(freshEvents);
    expect(await reopened.readEvents('step_fresh', 1)).toEqual(freshEvents.slice(1));
    // The new step is one row: its log with it, nothing in event_chunks.
    const row = reopened.db
      .prepare(
        "SELECT log_last, (SELECT COUNT(*) FROM event_chunks c WHERE c.step_ref = s.step_ref) AS chunks FROM steps s WHERE step_id = 'step_fresh'",
      )
      .get();
    expect(row).toEqual({ log_last: 2, chunks: 0 });
    expect((await reopened.getRun('run_v9'))?.budget_usage).toEqual({
      tokens_in: written.run.budget_usage.tokens_in + 1,
      tokens_out: written.run.budget_usage.tokens_out + 2,
      cost_usd: written.run.budget_usage.cost_usd + 0.7,
      wall_ms: written.run.budget_usage.wall_ms + 3,
    });
    await reopened.close();
  });
});
