import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ConflictError } from '../../../src/errors/conflict-error.js';
import { NotFoundError } from '../../../src/errors/not-found-error.js';
import { WalCheckpointer } from '../../../src/store/sqlite/sqlite-checkpointer.js';
import { MIGRATIONS } from '../../../src/store/sqlite/sqlite-migrations.js';
import {
  migrate,
  sqliteStore,
  type SqliteRunStore,
} from '../../../src/store/sqlite/sqlite-store.js';
import { emptyProvenance, type StepEvent } from '../../../src/streams/events.js';
import { makeCheckpoint, makeFact, makeRun, makeStep, narration } from '../../support/records.js';
import type { CallRecording, RunPatch, StepPatch, StepRecord } from '../../../src/store/records.js';
import { expectSharedLeases } from '../leases-conformance.js';
import { describeActorStore } from '../actor-store.conformance.js';
import { describeRunStore } from '../run-store.conformance.js';

const dir = mkdtempSync(join(tmpdir(), 'axon-sqlite-'));
let n = 0;
const file = (): string => join(dir, `store-${++n}.db`);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describeRunStore('sqlite (a file, WAL)', () => sqliteStore(file()));
describeActorStore('sqlite (a file, WAL)', () => sqliteStore(file()));

describe('SqliteRunStore', () => {
  it('keeps runs, steps and logs across a reopen of the same file', async () => {
    const path = file();
    const first = sqliteStore(path);
    const run = makeRun();
    const step = makeStep(run.run_id);
    await first.createRun(run);
    await first.createStep(step);
    await first.appendEvents([
      narration(step.step_id, 1, 'one'),
      narration(step.step_id, 2, 'two'),
    ]);
    await first.close();

    const second = sqliteStore(path);
    expect(await second.getRun(run.run_id)).toEqual(run);
    expect(await second.getStep(step.step_id)).toEqual(step);
    expect((await second.readEvents(step.step_id, 1)).map((e) => e.seq)).toEqual([2]);
    // The log goes on where it stopped.
    await expect(second.appendEvents([narration(step.step_id, 2, 'again')])).rejects.toBeInstanceOf(
      ConflictError,
    );
    await second.appendEvents([narration(step.step_id, 3, 'three')]);
    await second.close();
  });

  it('runs in WAL mode and records its migrations', async () => {
    const store = sqliteStore(file());
    expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(store.schemaVersion).toBe(MIGRATIONS.length);
    const applied = store.db
      .prepare('SELECT version FROM schema_migrations ORDER BY version')
      .all();
    expect(applied).toEqual(MIGRATIONS.map((m) => ({ version: m.version })));
    await store.close();
  });

  it('refuses a database written by a newer schema, naming the versions', async () => {
    const path = file();
    const newer = sqliteStore(path, {
      migrations: [
        ...MIGRATIONS,
        { version: 99, name: 'from the future', sql: 'CREATE TABLE future (x)' },
      ],
    });
    await newer.close();
    expect(() => sqliteStore(path)).toThrow(/schema version 99, newer than this axon knows/);
  });

  it('migrates a file of an older schema in place: its runs gain the run settings, with their defaults', async () => {
    const path = file();
    // A file written by the axon of schema 2 (its store could not even prepare today's statements).
    const older = new Database(path);
    expect(
      migrate(
        older,
        MIGRATIONS.filter((m) => m.version <= 2),
      ),
    ).toBe(2);
    const run = makeRun();
    older
      .prepare(
        `INSERT INTO runs (run_id, flow_id, mode, seed, budgets, status, budget_usage, provenance, entry, trace_id, user_id, created_at, ended_at)
         VALUES (?, NULL, 'record', NULL, '{}', 'running', ?, NULL, 'old', 't', NULL, ?, NULL)`,
      )
      .run(run.run_id, JSON.stringify(run.budget_usage), run.created_at);
    older.close();

    const store = sqliteStore(path);
    expect(store.schemaVersion).toBe(MIGRATIONS.length);
    expect(await store.getRun(run.run_id)).toMatchObject({
      run_id: run.run_id,
      policy: {},
      pool_policy: {},
      fs_policy: null,
      replay_of: null,
      cancel_on_disconnect: false,
    });
    expect(await store.listRecordings(run.run_id)).toEqual([]);
    await store.close();
  });

  it('migrates a file of schema 4 to compact rows and chunked logs: every record and event reads back the same', async () => {
    const path = file();
    const older = new Database(path);
    migrate(
      older,
      MIGRATIONS.filter((m) => m.version <= 4),
    );
    const run = makeRun({
      status: 'completed',
      seed: 7,
      budgets: { max_tokens_out: 500, max_cost_usd: 0.25 },
      budget_usage: { tokens_in: 3, tokens_out: 5, cost_usd: 0.01, wall_ms: 40 },
      policy: { max_depth: 2 },
      fs_policy: { roots: ['./sandbox'] },
      cancel_on_disconnect: true,
      ended_at: '2025-01-01T00:00:02.000Z',
    });
    const provenance = { ...emptyProvenance(7), engine: 'scripted', tokens_in: 3, tokens_out: 5 };
    // Steps of schema 4 had no placement decision: they read back with none.
    const root = makeStep(run.run_id, {
      placement_decision: null,
      client_token: 'c-1',
      status: 'succeeded',
      provenance,
      output: { plan: ['a', 'b'] },
      ended_at: '2025-01-01T00:00:01.000Z',
    });
    const child = makeStep(run.run_id, {
      placement_decision: null,
      parent_step_id: root.step_id,
      status: 'failed',
      error: { code: 'TIMEOUT', message: 'slow', retriable: true },
    });
    const insertRun = older.prepare(
      `INSERT INTO runs (run_id, flow_id, mode, seed, budgets, status, budget_usage, provenance, entry, trace_id, user_id, created_at, ended_at, policy, pool_policy, fs_policy, replay_of, cancel_on_disconnect)
       VALUES (@run_id, @flow_id, @mode, @seed, @budgets, @status, @budget_usage, @provenance, @entry, @trace_id, @user_id, @created_at, @ended_at, @policy, @pool_policy, @fs_policy, @replay_of, @cancel_on_disconnect)`,
    );
    insertRun.run({
      ...run,
      budgets: JSON.stringify(run.budgets),
      budget_usage: JSON.stringify(run.budget_usage),
      provenance: null,
      policy: JSON.stringify(run.policy),
      pool_policy: JSON.stringify(run.pool_policy),
      fs_policy: JSON.stringify(run.fs_policy),
      cancel_on_disconnect: 1,
    });
    const insertStep = older.prepare(
      `INSERT INTO steps (step_id, run_id, type, name, parent_step_id, actor_path, client_token, input, placement, status, budget_usage, provenance, output, error, created_at, started_at, ended_at)
       VALUES (@step_id, @run_id, @type, @name, @parent_step_id, @actor_path, @client_token, @input, @placement, @status, @budget_usage, @provenance, @output, @error, @created_at, @started_at, @ended_at)`,
    );
    for (const step of [root, child]) {
      insertStep.run({
        ...step,
        budgets: undefined,
        actor_path: JSON.stringify(step.actor_path),
        input: JSON.stringify(step.input),
        budget_usage: JSON.stringify(step.budget_usage),
        provenance: step.provenance === null ? null : JSON.stringify(step.provenance),
        output: JSON.stringify(step.output),
        error: step.error === null ? null : JSON.stringify(step.error),
      });
    }
    const events: StepEvent[] = [
      { type: 'started', step_id: root.step_id, seq: 1, ts: 1, provenance, pool_id: 'local' },
      { type: 'token', step_id: root.step_id, seq: 2, ts: 2, t: 'Hi', i: 0 },
      narration(root.step_id, 3),
      {
        type: 'end',
        step_id: root.step_id,
        seq: 4,
        ts: 4,
        output: { plan: ['a', 'b'] },
        budget_usage: run.budget_usage,
        provenance,
      },
    ];
    const insertEvent = older.prepare('INSERT INTO events (step_id, seq, body) VALUES (?, ?, ?)');
    for (const ev of events) insertEvent.run(ev.step_id, ev.seq, JSON.stringify(ev));
    const fact = makeFact(run.run_id, { emitted_by_step: root.step_id });
    older
      .prepare(
        'INSERT INTO facts (fact_id, run_id, type, schema_uri, data, emitted_by_step, ts) VALUES (?, ?, ?, ?, ?, ?, ?)',
      )
      .run(
        fact.fact_id,
        run.run_id,
        fact.type,
        null,
        JSON.stringify(fact.data),
        root.step_id,
        fact.ts,
      );
    older.close();

    const store = sqliteStore(path);
    expect(store.schemaVersion).toBe(MIGRATIONS.length);
    expect(await store.getRun(run.run_id)).toEqual(run);
    // Its user and entry were filled in by migration 8: the listings' indexes find it.
    expect(await store.pageRuns({ userId: run.user_id, status: ['completed'], limit: 5 })).toEqual([
      run,
    ]);
    expect(await store.pageRuns({ entry: run.entry, limit: 5 })).toEqual([run]);
    expect(await store.pageRuns({ userId: 'someone-else', limit: 5 })).toEqual([]);
    expect(await store.listSteps(run.run_id)).toEqual([root, child]);
    expect(await store.readEvents(root.step_id)).toEqual(events);
    expect(await store.readEvents(root.step_id, 2)).toEqual(events.slice(2));
    expect(await store.listFacts({ runId: run.run_id })).toEqual([fact]);
    // The client token still finds its step; the log goes on where it stopped.
    expect(await store.claimStep(makeStep(run.run_id, { client_token: 'c-1' }))).toEqual({
      step: root,
      created: false,
    });
    await expect(store.appendEvents([narration(root.step_id, 4)])).rejects.toMatchObject({
      details: { expected: 5 },
    });
    await store.appendEvents([narration(root.step_id, 5)]);
    expect(await store.readEvents(root.step_id, 4)).toEqual([narration(root.step_id, 5)]);
    // Foreign keys are on again, and hold.
    expect(store.db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(store.db.pragma('foreign_key_check')).toEqual([]);
    await expect(store.createStep(makeStep('run_nowhere'))).rejects.toThrow(NotFoundError);
    await store.close();
  });

  it('commits the writes of one turn together; flush() resolves once they are durable', async () => {
    const path = file();
    const store = sqliteStore(path);
    const other = new Database(path, { readonly: true });
    const count = (): number =>
      (other.prepare('SELECT COUNT(*) AS n FROM runs').get() as { n: number }).n;
    const a = makeRun();
    const b = makeRun();
    await store.createRun(a);
    await store.createRun(b);
    // This process reads its own writes at once; another sees them after the commit.
    expect(await store.getRun(b.run_id)).toEqual(b);
    expect(count()).toBe(0);
    const pending = store.flush();
    expect(pending).not.toBeNull();
    await pending;
    expect(count()).toBe(2);
    expect(store.flush()).toBeNull();
    // Without a flush, the end of the turn commits as well.
    await store.createRun(makeRun());
    await new Promise((resolve) => setImmediate(resolve));
    expect(count()).toBe(3);
    other.close();
    await store.close();
  });

  it('a run written and updated in one turn lands as its final rows, read back at once in this process', async () => {
    const path = file();
    const store = sqliteStore(path);
    const other = new Database(path, { readonly: true });
    const run = makeRun();
    const first = makeStep(run.run_id);
    const second = makeStep(run.run_id, { parent_step_id: first.step_id });
    await store.createRun(run);
    await store.createStep(first);
    await store.createStep(second);
    await store.appendEvents([narration(first.step_id, 1), narration(second.step_id, 1)]);
    await store.appendEvents([narration(first.step_id, 2)]);
    await store.updateStep(second.step_id, { status: 'succeeded', output: { ok: true } });
    await store.updateRun(run.run_id, {
      status: 'completed',
      ended_at: '2025-01-01T00:00:01.000Z',
    });
    // Nothing is committed yet; this process reads its own writes, updates included.
    expect((other.prepare('SELECT COUNT(*) AS n FROM steps').get() as { n: number }).n).toBe(0);
    expect(await store.getStep(second.step_id)).toMatchObject({
      status: 'succeeded',
      output: { ok: true },
    });
    expect((await store.readEvents(first.step_id)).map((e) => e.seq)).toEqual([1, 2]);
    // Reading wrote the held rows: an update after it changes the written row.
    await store.updateStep(first.step_id, {
      status: 'failed',
      error: { code: 'INTERNAL', message: 'x', retriable: false },
    });
    await store.flush();
    // A step's status and output are fields 8 and 11 of its record; a run's end, field 14.
    const rows = other
      .prepare(
        "SELECT step_id, record ->> '$[8]' AS status, record -> '$[11]' AS output FROM steps WHERE run_ref = (SELECT run_ref FROM runs WHERE run_id = ?) ORDER BY rowid",
      )
      .all(run.run_id);
    expect(rows).toEqual([
      { step_id: first.step_id, status: 'failed', output: 'null' },
      { step_id: second.step_id, status: 'succeeded', output: '{"ok":true}' },
    ]);
    const runRow = other
      .prepare("SELECT status, record ->> '$[14]' AS ended_at FROM runs WHERE run_id = ?")
      .get(run.run_id);
    expect(runRow).toEqual({ status: 'completed', ended_at: '2025-01-01T00:00:01.000Z' });
    // The events a step appended in the turn it was made in are one chunk of its log, in its
    // own row (issue 47: a step is one record): nothing in event_chunks.
    const logs = other
      .prepare('SELECT step_id, log_last, json_array_length(log) AS n FROM steps ORDER BY step_id')
      .all();
    expect(logs).toEqual(
      [
        { step_id: first.step_id, log_last: 2, n: 2 },
        { step_id: second.step_id, log_last: 1, n: 1 },
      ].sort((x, y) => (x.step_id < y.step_id ? -1 : 1)),
    );
    expect(other.prepare('SELECT COUNT(*) AS n FROM event_chunks').get()).toEqual({ n: 0 });
    other.close();
    await store.close();
  });

  it('a log appended in batches of every size, within turns and across them, reads back from every seq', async () => {
    const path = file();
    const store = sqliteStore(path);
    const run = makeRun();
    const step = makeStep(run.run_id);
    await store.createRun(run);
    await store.createStep(step);
    const id = step.step_id;
    const appended: StepEvent[] = [];
    const next = (seq: number): StepEvent =>
      seq % 5 === 0
        ? // Now and then an event larger than a chunk holds: it is a chunk of its own.
          narration(id, seq, 'x'.repeat(seq % 10 === 0 ? 5_000 : 300))
        : { type: 'token', step_id: id, seq, ts: seq, t: ` w${seq}`, i: seq - 1 };
    let seq = 0;
    for (const [i, size] of [1, 7, 64, 65, 130, 3, 1, 200].entries()) {
      const batch = Array.from({ length: size }, () => next(++seq));
      await store.appendEvents(batch);
      appended.push(...batch);
      // Every other batch ends its turn: its events and the next batch's are not one chunk.
      if (i % 2 === 1) await store.flush();
    }
    await store.flush();
    const reopened = sqliteStore(path);
    for (let after = 0; after <= seq; after++) {
      expect(await reopened.readEvents(id, after)).toEqual(appended.slice(after));
    }
    // Its first chunk is in its row (the step and its first events came in one turn), the
    // later ones in event_chunks.
    const inline = reopened.db
      .prepare('SELECT log_last FROM steps WHERE step_id = ?')
      .pluck()
      .get(id) as number;
    expect(inline).toBeGreaterThan(0);
    const chunks = [
      { first_seq: 1, last_seq: inline },
      ...(reopened.db
        .prepare(
          'SELECT first_seq, last_seq FROM event_chunks WHERE step_ref = (SELECT step_ref FROM steps WHERE step_id = ?) ORDER BY last_seq',
        )
        .all(id) as { first_seq: number; last_seq: number }[]),
    ];
    // The chunks tile the log, 1 … seq, none past 64 events, far fewer than the events.
    expect(chunks[0]?.first_seq).toBe(1);
    expect(chunks.at(-1)?.last_seq).toBe(seq);
    for (const [k, c] of chunks.entries()) {
      expect(c.last_seq - c.first_seq).toBeLessThan(64);
      if (k > 0) expect(c.first_seq).toBe((chunks[k - 1]?.last_seq ?? 0) + 1);
    }
    expect(chunks.length).toBeLessThan(seq / 4);
    await reopened.close();
    await store.close();
  });

  it('reads events back as the runtime wrote them, field order included', async () => {
    const store = sqliteStore(file());
    const run = makeRun();
    const step = makeStep(run.run_id);
    await store.createRun(run);
    await store.createStep(step);
    const id = step.step_id;
    // As the step actor builds them: a started event with the empty provenance, an end event.
    const events: StepEvent[] = [
      {
        type: 'started',
        step_id: id,
        seq: 1,
        ts: 1,
        provenance: emptyProvenance(),
        pool_id: 'local',
      },
      {
        type: 'end',
        step_id: id,
        seq: 2,
        ts: 2,
        output: 'b',
        budget_usage: { tokens_in: 0, tokens_out: 0, cost_usd: 0, wall_ms: 1 },
        provenance: { ...emptyProvenance(42), engine: 'scripted', tokens_out: 9 },
      },
    ];
    await store.appendEvents(events);
    await store.flush();
    expect(JSON.stringify(await store.readEvents(id))).toBe(JSON.stringify(events));
    // The empty provenance takes no room in the log (here its step's row: the step and its
    // events came in one turn).
    const stored = store.db
      .prepare('SELECT log FROM steps WHERE step_id = ?')
      .pluck()
      .get(id) as string;
    expect(JSON.parse(stored)).toEqual([
      { type: 'started', ts: 1, provenance: {}, pool_id: 'local' },
      {
        type: 'end',
        ts: 2,
        output: 'b',
        budget_usage: { tokens_in: 0, tokens_out: 0, cost_usd: 0, wall_ms: 1 },
        provenance: { seed: 42, engine: 'scripted', tokens_out: 9 },
      },
    ]);
    await store.close();
  });

  it('an update may set only what changes after creation, held or written: anything else is a TypeError and changes nothing', async () => {
    const store = sqliteStore(file());
    const run = makeRun();
    const step = makeStep(run.run_id);
    await store.createRun(run);
    await store.createStep(step);
    const bad = { status: 'succeeded', name: 'renamed' } as unknown as StepPatch;
    // Held (this turn), then written (after the commit).
    await expect(store.updateStep(step.step_id, bad)).rejects.toThrow(TypeError);
    await expect(
      store.updateRun(run.run_id, { entry: 'other' } as unknown as RunPatch),
    ).rejects.toThrow(/no field entry of runs/);
    await store.flush();
    await expect(store.updateStep(step.step_id, bad)).rejects.toThrow(/no field name of steps/);
    await expect(
      store.updateRun(run.run_id, { entry: 'other' } as unknown as RunPatch),
    ).rejects.toThrow(TypeError);
    expect(await store.getStep(step.step_id)).toEqual(step);
    expect(await store.getRun(run.run_id)).toEqual(run);
    await store.close();
  });

  it('refuses a held step in an unknown run, and a second run or step with a held id', async () => {
    const store = sqliteStore(file());
    const run = makeRun();
    await store.createRun(run);
    await expect(store.createRun(makeRun({ run_id: run.run_id }))).rejects.toThrow(ConflictError);
    const step = makeStep(run.run_id);
    await store.createStep(step);
    await expect(store.createStep(makeStep(run.run_id, { step_id: step.step_id }))).rejects.toThrow(
      ConflictError,
    );
    await expect(store.createStep(makeStep('run_nowhere'))).rejects.toThrow(NotFoundError);
    await expect(store.appendEvents([narration('step_nowhere', 1)])).rejects.toThrow(NotFoundError);
    // The refusals cost nothing else: the turn commits what was accepted.
    await store.flush();
    expect(await store.listSteps(run.run_id)).toEqual([step]);
    await store.close();
  });

  it("a call's recording, a fact or a checkpoint between a step's claim and its end leaves the held rows held: the step goes in ended, never updated; a run held in the same turn is written first", async () => {
    const path = file();
    const store = sqliteStore(path);
    const run = makeRun();
    await store.createRun(run);
    await store.flush();
    store.db.exec(
      'CREATE TABLE step_updates (step_id TEXT); CREATE TRIGGER count_step_updates AFTER UPDATE ON steps BEGIN INSERT INTO step_updates VALUES (NEW.step_id); END',
    );
    const updates = (): number =>
      (store.db.prepare('SELECT COUNT(*) AS n FROM step_updates').get() as { n: number }).n;
    const recording: CallRecording = {
      run_id: run.run_id,
      client_token: 'c-1',
      actor_path: ['add'],
      seq: 1,
      kind: 'tool',
      name: 'add',
      inputs: { args_hash: 'a' },
      output: { result: 3 },
      ts: 1_700_000_000_000,
    };
    const step = makeStep(run.run_id, { type: 'tool_call', client_token: 'c-1' });
    expect(await store.claimStep(step)).toEqual({ step, created: true });
    await store.putRecording(recording);
    await store.appendFact(makeFact(run.run_id));
    await store.createCheckpoint(makeCheckpoint(run.run_id, { step_id: step.step_id }));
    await store.updateStep(step.step_id, { status: 'succeeded', output: { result: 3 } });
    await store.flush();
    expect(updates()).toBe(0);
    expect(await store.getStep(step.step_id)).toMatchObject({
      status: 'succeeded',
      output: { result: 3 },
    });
    expect(await store.getRecording(run.run_id, recording)).toEqual(recording);
    expect(await store.listFacts({ runId: run.run_id })).toHaveLength(1);
    expect(await store.listCheckpoints(run.run_id)).toHaveLength(1);
    // A run created in this turn is held: its recording waits for its row (the foreign key).
    const fresh = makeRun();
    await store.createRun(fresh);
    await store.putRecording({ ...recording, run_id: fresh.run_id });
    await expect(store.putRecording({ ...recording, run_id: 'run_nowhere' })).rejects.toThrow(
      NotFoundError,
    );
    await store.flush();
    const other = new Database(path, { readonly: true });
    const rows = other.prepare('SELECT run_id FROM recordings ORDER BY run_id').all() as {
      run_id: string;
    }[];
    expect(rows.map((r) => r.run_id).sort()).toEqual([run.run_id, fresh.run_id].sort());
    other.close();
    await store.close();
  });

  it("continues a log another process appended to since this store's last commit", async () => {
    const path = file();
    const mine = sqliteStore(path);
    const theirs = sqliteStore(path);
    const run = makeRun();
    const step = makeStep(run.run_id);
    await mine.createRun(run);
    await mine.createStep(step);
    await mine.appendEvents([narration(step.step_id, 1)]);
    await mine.flush();
    await theirs.appendEvents([narration(step.step_id, 2)]);
    await theirs.flush();
    // This store last appended seq 1; the file has 2. A repeat of 2 is refused, 3 is taken.
    await expect(mine.appendEvents([narration(step.step_id, 2)])).rejects.toMatchObject({
      details: { expected: 3, got: 2 },
    });
    await mine.appendEvents([narration(step.step_id, 3)]);
    await mine.flush();
    expect((await theirs.readEvents(step.step_id)).map((e) => e.seq)).toEqual([1, 2, 3]);
    await theirs.close();
    await mine.close();
  });

  it('two stores on one file taking turns give their runs, steps and chunks rowids of their own', async () => {
    const path = file();
    const mine = sqliteStore(path);
    const theirs = sqliteStore(path);
    const runs = [makeRun(), makeRun(), makeRun()];
    const steps: StepRecord[] = [];
    // Turn by turn, alternating stores; each turn adds a run, a step of the previous turn's
    // run (made by the other store), and events to the previous turn's step.
    for (const [i, run] of runs.entries()) {
      const store = i % 2 === 0 ? mine : theirs;
      await store.createRun(run);
      const step = makeStep(runs[Math.max(0, i - 1)]?.run_id ?? '');
      await store.createStep(step);
      const previous = steps.at(-1);
      if (previous) await store.appendEvents([narration(previous.step_id, 2)]);
      await store.appendEvents([narration(step.step_id, 1)]);
      steps.push(step);
      await store.flush();
    }
    for (const store of [mine, theirs]) {
      expect(await store.listRuns()).toEqual(runs);
      expect(await store.listSteps(runs[0]?.run_id ?? '')).toEqual(steps.slice(0, 2));
      expect(await store.listSteps(runs[1]?.run_id ?? '')).toEqual(steps.slice(2));
      for (const [i, step] of steps.entries()) {
        const seqs = (await store.readEvents(step.step_id)).map((e) => e.seq);
        expect(seqs).toEqual(i < steps.length - 1 ? [1, 2] : [1]);
      }
    }
    await theirs.close();
    await mine.close();
  });

  // The file refuses new events (as a full disk would refuse the pages they need), after
  // an event was held: whatever writes the held rows next fails, as a failed commit does.
  it.each([
    [
      'a read, which writes the held rows first',
      (s: SqliteRunStore, stepId: string) => s.readEvents(stepId),
    ],
    ['the commit', (s: SqliteRunStore) => s.flush()],
  ])(
    'held rows that cannot be written: %s is refused, and so is everything after',
    async (_, next) => {
      const errors: Error[] = [];
      const store = sqliteStore(file(), { onError: (err) => errors.push(err) });
      const run = makeRun();
      const step = makeStep(run.run_id);
      await store.createRun(run);
      await store.createStep(step);
      await store.flush();
      store.db.exec(
        "CREATE TRIGGER no_events BEFORE INSERT ON event_chunks BEGIN SELECT RAISE(ABORT, 'no room'); END",
      );
      await store.appendEvents([narration(step.step_id, 1)]);
      await expect(next(store, step.step_id)).rejects.toThrow(/could not commit.*no room/);
      expect(errors).toHaveLength(1);
      await expect(store.createRun(makeRun())).rejects.toThrow(/could not commit/);
      await expect(store.close()).rejects.toThrow(/could not commit/);
    },
  );

  it('with maxBatchMs 0 every write is committed when it resolves', async () => {
    const path = file();
    const store = sqliteStore(path, { maxBatchMs: 0 });
    const other = new Database(path, { readonly: true });
    await store.createRun(makeRun());
    expect((other.prepare('SELECT COUNT(*) AS n FROM runs').get() as { n: number }).n).toBe(1);
    expect(store.flush()).toBeNull();
    other.close();
    await store.close();
    expect(() => sqliteStore(file(), { maxBatchMs: -1 })).toThrow(RangeError);
  });

  it('a commit that fails is reported, and the store refuses everything after it', async () => {
    const errors: Error[] = [];
    const store = sqliteStore(file(), { onError: (err) => errors.push(err) });
    await store.createRun(makeRun());
    const pending = store.flush();
    // The file's connection is lost under the store (as a disk or mount going away would).
    store.db.close();
    await expect(pending).rejects.toThrow(/could not commit/);
    expect(errors).toHaveLength(1);
    await expect(store.createRun(makeRun())).rejects.toThrow(/could not commit/);
    await expect(store.close()).rejects.toThrow(/could not commit/);
  });

  it('checkpoints the WAL into the database file from a thread of its own, not in commits', async () => {
    // The database file alone (without its -wal) shows what has been checkpointed into it.
    const checkpointedRuns = (path: string): number => {
      const copy = `${path}.copy`;
      copyFileSync(path, copy);
      const db = new Database(copy, { readonly: true });
      try {
        // Before its first checkpoint the file does not even hold the schema.
        if (!db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'runs'").get()) return 0;
        return (db.prepare('SELECT COUNT(*) AS n FROM runs').get() as { n: number }).n;
      } finally {
        db.close();
        rmSync(copy);
      }
    };
    const writeRuns = async (store: SqliteRunStore): Promise<void> => {
      for (let i = 0; i < 20; i++) await store.createRun(makeRun());
      await store.flush();
    };

    const inline = sqliteStore(file(), { checkpointIntervalMs: 0 });
    await writeRuns(inline);
    await new Promise((resolve) => setTimeout(resolve, 100));
    // Far below SQLite's 1 000 pages: without the thread nothing is copied back yet.
    expect(checkpointedRuns(inline.path)).toBe(0);
    await inline.close();

    const threaded = sqliteStore(file(), { checkpointIntervalMs: 5 });
    await writeRuns(threaded);
    await vi.waitFor(() => {
      expect(checkpointedRuns(threaded.path)).toBe(20);
    });
    await threaded.close();
    // Closed, its rows are all there for the next opener.
    const reopened = sqliteStore(threaded.path);
    expect(await reopened.listRuns()).toHaveLength(20);
    await reopened.close();

    expect(() => sqliteStore(file(), { checkpointIntervalMs: -1 })).toThrow(RangeError);
    expect(() => sqliteStore(file(), { checkpointIntervalMs: Number.NaN })).toThrow(
      /checkpointIntervalMs must be a number >= 0/,
    );
  });

  it('a checkpoint thread that cannot open its file says so, and closes cleanly', async () => {
    const errors: Error[] = [];
    const thread = new WalCheckpointer(join(dir, 'missing', 'folder', 'x.db'), 5, (err) =>
      errors.push(err),
    );
    await vi.waitFor(() => {
      expect(errors[0]?.message).toMatch(/directory does not exist|unable to open/);
    });
    await thread.close();
  });

  it('keeps leases in the file: two stores on one file (two processes) see each other’s, renewals, expiry and release', async () => {
    const path = file();
    const a = sqliteStore(path);
    const b = sqliteStore(path);
    await expectSharedLeases(a.leases, b.leases);
    await Promise.all([a.close(), b.close()]);
  });

  it('creates the folder of a new file', async () => {
    const store = sqliteStore(join(dir, 'nested', 'deeper', 'axon.db'));
    await store.createRun(makeRun());
    await store.close();
  });
});
