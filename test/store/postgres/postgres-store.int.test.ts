/**
 * The PostgreSQL store (issue 32, first step): the RunStore conformance suite against the
 * server on 127.0.0.1:5432 (`AXON_TEST_POSTGRES` to name another), each store in a schema of
 * its own, dropped after; its migrations (a schema of the previous version migrated in place),
 * and a schema newer than the code refused. The ActorStore conformance suite (issue 46) too.
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  POSTGRES_SCHEMA_VERSION,
  postgresStore,
} from '../../../src/store/postgres/postgres-store.js';
import { defineAgent } from '../../../src/actors/define-agent.js';
import { MAX_BATCH } from '../../../src/store/postgres/postgres-batch.js';
import { writeSchemaV4 } from './postgres-schema-v4.js';
import { actorEntry, actorIdOf } from '../../../src/store/actor-records.js';
import { ConflictError } from '../../../src/errors/conflict-error.js';
import { InternalError } from '../../../src/errors/internal-error.js';
import { NotFoundError } from '../../../src/errors/not-found-error.js';
import { makeRun, makeStep, narration } from '../../support/records.js';
import { quietRuntime } from '../../support/runtime.js';
import { expectSharedLeases } from '../leases-conformance.js';
import { describeActorStore } from '../actor-store.conformance.js';
import { describeRunStore } from '../run-store.conformance.js';

const url = process.env['AXON_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const admin = new pg.Pool({ connectionString: url, max: 2 });
const schemas: string[] = [];
const schema = (): string => {
  const s = `axon_test_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  schemas.push(s);
  return s;
};

afterAll(async () => {
  for (const s of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await admin.end();
});

describeRunStore('postgres (a schema per store)', () =>
  postgresStore({ connection: url, schema: schema() }),
);

describeActorStore('postgres (a schema per store)', () =>
  postgresStore({ connection: url, schema: schema() }),
);

describe('the PostgreSQL store', () => {
  it('applies its migrations once, records the version, and opens the same schema again', async () => {
    const s = schema();
    const first = postgresStore({ connection: url, schema: s });
    const run = makeRun();
    await first.createRun(run);
    await first.close();
    const again = postgresStore({ connection: url, schema: s });
    expect(await again.getRun(run.run_id)).toEqual(run);
    await again.close();
    const { rows } = await admin.query(
      `SELECT value FROM "${s}".meta WHERE key = 'schema_version'`,
    );
    expect(rows).toEqual([{ value: String(POSTGRES_SCHEMA_VERSION) }]);
  });

  it('migrates a schema written by version 4 in place: runs, steps, logs, approvals and actors read back, and a running step goes on', async () => {
    const s = schema();
    const q = `"${s}"`;
    // The schema as the axon of version 4 left it, written through its own functions.
    const run = makeRun();
    const done = makeStep(run.run_id, { status: 'succeeded', output: { n: 1 } });
    const running = makeStep(run.run_id, { client_token: 'tok-1' });
    const actorRun = makeRun({ entry: actorEntry('notebook', 'k') });
    const actor = {
      actor_id: actorIdOf(null, 'notebook', 'k'),
      user_id: null,
      name: 'notebook',
      key: 'k',
      run_id: actorRun.run_id,
      version: 1,
      state: { pages: 2 },
      status: 'idle' as const,
      created_at: actorRun.created_at,
      updated_at: actorRun.created_at,
    };
    const approval = {
      approval_id: `apr_${randomUUID()}`,
      run_id: run.run_id,
      step_id: running.step_id,
      client_token: 'tok-1',
      actor_path: [],
      action: 'call_tool',
      target: 'deploy',
      subject: 'alice',
      rule: 'approvals.tools',
      approvers: ['bob'],
      status: 'pending' as const,
      snapshot: { value: 'waiting' },
      requested_at: '2026-11-23T10:00:00.000Z',
      decided_by: null,
      reason: null,
      decided_at: null,
    };
    const doneLog = [narration(done.step_id, 1), narration(done.step_id, 2)];
    const runningLog = [1, 2, 3].map((n) => narration(running.step_id, n));
    const client = await admin.connect();
    try {
      await client.query('BEGIN');
      await writeSchemaV4((text, values) => client.query(text, values as unknown[]), q);
      await client.query('COMMIT');
      const ops = [
        { op: 'create_run', run },
        { op: 'create_step', step: done, claim: false },
        { op: 'create_step', step: running, claim: true },
        { op: 'append', events: [...doneLog, ...runningLog] },
        { op: 'open_actor', actor, run: actorRun },
      ];
      const { rows } = await client.query(`SELECT ${q}.apply($1::jsonb, 'v4', false) AS a`, [
        JSON.stringify(ops),
      ]);
      expect((rows[0] as { a: unknown[] }).a).toHaveLength(ops.length);
      await client.query(
        `INSERT INTO ${q}.approvals (approval_id, run_id, record) VALUES ($1, $2, $3)`,
        [approval.approval_id, run.run_id, JSON.stringify(approval)],
      );
      const events = await client.query(`SELECT count(*)::int AS n FROM ${q}.events`);
      expect(events.rows).toEqual([{ n: 5 }]);
    } finally {
      client.release();
    }

    const store = postgresStore({ connection: url, schema: s });
    expect(await store.getRun(run.run_id)).toEqual(run);
    expect(await store.listSteps(run.run_id)).toEqual([done, running]);
    expect(await store.readEvents(done.step_id)).toEqual(doneLog);
    expect(await store.readEvents(running.step_id, 1)).toEqual(runningLog.slice(1));
    expect(await store.readEvents(running.step_id, 0, 2)).toEqual(runningLog.slice(0, 2));
    expect(await store.listApprovals(run.run_id)).toEqual([approval]);
    expect(await store.actors.getActor(actor.actor_id)).toEqual(actor);
    // The claimed token is still the running step's.
    expect(await store.claimStep(makeStep(run.run_id, { client_token: 'tok-1' }))).toEqual({
      step: running,
      created: false,
    });
    // The running step goes on where version 4 left its log, and ends.
    await expect(store.appendEvents([narration(running.step_id, 3)])).rejects.toThrow(
      ConflictError,
    );
    await store.appendEvents([narration(running.step_id, 4)]);
    await store.endStep({
      stepId: running.step_id,
      runId: run.run_id,
      events: [narration(running.step_id, 5)],
      patch: { status: 'succeeded', output: 'ok' },
    });
    await store.flush();
    const again = postgresStore({ connection: url, schema: s });
    expect((await again.readEvents(running.step_id)).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(await again.readEvents(running.step_id, 3)).toEqual([
      narration(running.step_id, 4),
      narration(running.step_id, 5),
    ]);
    expect(await again.getStep(running.step_id)).toEqual({
      ...running,
      status: 'succeeded',
      output: 'ok',
    });
    const { rows } = await admin.query(`SELECT value FROM ${q}.meta WHERE key = 'schema_version'`);
    expect(rows).toEqual([{ value: String(POSTGRES_SCHEMA_VERSION) }]);
    const tables = await admin.query(
      `SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'events'`,
      [s],
    );
    expect(tables.rowCount).toBe(0);
    await again.close();
    await store.close();
  });

  it('refuses a schema newer than the code knows, touching nothing', async () => {
    const s = schema();
    await admin.query(`CREATE SCHEMA "${s}"`);
    await admin.query(`CREATE TABLE "${s}".meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
    await admin.query(`INSERT INTO "${s}".meta VALUES ('schema_version', '99')`);
    const store = postgresStore({ connection: url, schema: s });
    await expect(store.getRun('run_x')).rejects.toThrow(/version 99, newer than this axon knows/);
    await store.close();
  });

  it('refuses a schema name that is not a plain identifier', () => {
    expect(() => postgresStore({ connection: url, schema: 'a"; DROP' })).toThrow(RangeError);
  });
});

describe('the PostgreSQL store’s batches (one call of its apply function per turn)', () => {
  it('a refused write in a batch rejects alone; the others of its turn commit', async () => {
    const store = postgresStore({ connection: url, schema: schema() });
    const first = makeRun();
    await store.createRun(first);
    const second = makeRun();
    // Asked in one turn: one batch.
    const asked = [
      store.createRun(first),
      store.createRun(second),
      store.updateRun('run_unknown', { status: 'failed' }),
      store.updateRun(second.run_id, { status: 'completed' }),
    ];
    const settled = await Promise.allSettled(asked);
    expect(settled.map((s) => s.status)).toEqual([
      'rejected',
      'fulfilled',
      'rejected',
      'fulfilled',
    ]);
    expect((settled[0] as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
    expect((settled[2] as PromiseRejectedResult).reason).toBeInstanceOf(NotFoundError);
    expect((await store.getRun(second.run_id))?.status).toBe('completed');
    await store.close();
  });

  it('a batch the server fails as a whole is run again one write at a time: only the bad one fails', async () => {
    const s = schema();
    // A step another store made: this one does not know where its log ends, so the server
    // checks its appends.
    const writer = postgresStore({ connection: url, schema: s });
    const run = makeRun();
    await writer.createRun(run);
    const step = makeStep(run.run_id);
    await writer.createStep(step);
    await writer.flush();
    await writer.close();
    const store = postgresStore({ connection: url, schema: s });
    await store.ready();
    // Held by this store, in the same batch: written again alone, before the others.
    const good = makeRun();
    const asked = [
      store.createRun(good),
      // A seq PostgreSQL cannot take as an integer fails the statement, not just the write.
      store.appendEvents([{ ...narration(step.step_id, 1), seq: 2 ** 40 }]),
      store.appendEvents([narration(step.step_id, 1)]),
    ];
    const settled = await Promise.allSettled(asked);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(String((settled[1] as PromiseRejectedResult).reason)).toMatch(/out of range/);
    expect(await store.getRun(good.run_id)).toEqual(good);
    expect((await store.readEvents(step.step_id)).map((e) => e.seq)).toEqual([1]);
    await store.close();
  });

  it('held rows the server refuses fail that flush and every later one: the store takes no more writes, and what committed before stays', async () => {
    const s = schema();
    const store = postgresStore({ connection: url, schema: s });
    const before = makeRun();
    await store.createRun(before);
    await store.flush();
    // The server refuses one run's row, as it would a row it cannot store.
    const refused = makeRun();
    await admin.query(`CREATE FUNCTION "${s}".refuse() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.run_id = '${refused.run_id}' THEN RAISE EXCEPTION 'refused by the test'; END IF;
        RETURN NEW;
      END $$`);
    await admin.query(
      `CREATE TRIGGER refuse BEFORE INSERT ON "${s}".runs FOR EACH ROW EXECUTE FUNCTION "${s}".refuse()`,
    );
    // Held: it resolves at once; the flush says whether it is durable.
    const beside = makeRun();
    await Promise.all([store.createRun(refused), store.createRun(beside)]);
    const failure = (await store.flush()?.catch((err: unknown) => err)) as Error;
    expect(failure).toBeInstanceOf(InternalError);
    expect(failure.message).toMatch(
      /^the PostgreSQL store could not commit the writes it held back \(.*refused by the test.*\); it takes no more$/,
    );
    // Every later write and flush is refused with the same error.
    await expect(store.createRun(makeRun())).rejects.toBe(failure);
    await expect(store.createStep(makeStep(before.run_id))).rejects.toBe(failure);
    await expect(store.flush()).rejects.toBe(failure);
    await store.close().catch(() => undefined);
    // Another process on the schema: what committed before is there, the held batch is not.
    const reader = postgresStore({ connection: url, schema: s });
    expect(await reader.getRun(before.run_id)).toEqual(before);
    expect(await reader.getRun(refused.run_id)).toBeNull();
    expect(await reader.getRun(beside.run_id)).toBeNull();
    await reader.close();
  });

  it('a turn asking more than MAX_BATCH writes sends them in bounded calls, each committed, in order', async () => {
    const store = postgresStore({ connection: url, schema: schema() });
    const runs = Array.from({ length: MAX_BATCH * 2 + 5 }, () => makeRun());
    await Promise.all(runs.map((r) => store.createRun(r)));
    expect((await store.listRuns()).map((r) => r.run_id)).toEqual(runs.map((r) => r.run_id));
    await store.close();
  });

  it('reads after writes of the same turn see them (a list waits for the batch before it)', async () => {
    const store = postgresStore({ connection: url, schema: schema() });
    const run = makeRun();
    const created = store.createRun(run);
    const listed = store.listRuns();
    await created;
    expect((await listed).map((r) => r.run_id)).toEqual([run.run_id]);
    await store.close();
  });
});

describe('the PostgreSQL store when the server drops its connections', () => {
  it('a step whose connections are killed mid-turn completes after reconnecting; nothing acknowledged is lost', async () => {
    const s = schema();
    const app = `axon_kill_${randomUUID().slice(0, 8)}`;
    const connection = `${url}${url.includes('?') ? '&' : '?'}application_name=${app}`;
    const store = postgresStore({ connection, schema: s });
    let killed = 0;
    const writer = defineAgent({
      name: 'writer',
      async *handler() {
        yield 'before ';
        const { rows } = await admin.query(
          `SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE application_name = $1`,
          [app],
        );
        killed = rows.length;
        yield 'after';
        return 'done';
      },
    });
    const rt = quietRuntime({ store, agents: [writer] });
    const result = await rt.invoke<string>('writer', 'go');
    expect(killed).toBeGreaterThan(0);
    expect(result.status).toBe('success');
    expect(result.output).toBe('done');
    await rt.close();

    // What the runtime was told is there, read through connections of another store.
    const again = postgresStore({ connection: url, schema: s });
    expect((await again.getRun(result.runId))?.status).toBe('completed');
    expect((await again.getStep(result.stepId))?.status).toBe('succeeded');
    const log = await again.readEvents(result.stepId);
    expect(log.map((e) => e.type)).toEqual(['started', 'token', 'token', 'end']);
    await again.close();
  });
});

/**
 * A TCP relay to the tests' PostgreSQL whose `swallowNextAnswer` drops the server's next answer
 * on a connection and cuts that connection: what a network failure between the commit and its
 * answer looks like to the client.
 */
async function answerSwallowingRelay(): Promise<{
  url: string;
  swallowNextAnswer(): void;
  close(): Promise<void>;
}> {
  const target = new URL(url);
  const sockets = new Set<net.Socket>();
  let armed = false;
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    let asked = false;
    client.on('data', (chunk: Buffer) => {
      asked = true;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (armed && asked) {
        armed = false;
        client.destroy();
        upstream.destroy();
        return;
      }
      asked = false;
      client.write(chunk);
    });
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    for (const s of [client, upstream]) s.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  const via = new URL(url);
  via.hostname = '127.0.0.1';
  via.port = String(port);
  return {
    url: via.toString(),
    swallowNextAnswer: () => {
      armed = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const sock of sockets) sock.destroy();
        server.close(() => {
          resolve();
        });
      }),
  };
}

describe('the PostgreSQL store when an answer is lost after the commit', () => {
  it('a batch committed but unanswered is answered from what the server kept: each write resolves once, none is refused as done already', async () => {
    const relay = await answerSwallowingRelay();
    const s = schema();
    const store = postgresStore({ connection: relay.url, schema: s });
    await store.ready();
    const run = makeRun();
    await store.createRun(run);
    const step = makeStep(run.run_id);
    await store.createStep(step);
    // One batch: the run's patch, two appends and a read; its answer never arrives.
    relay.swallowNextAnswer();
    const writes = await Promise.allSettled([
      store.updateRun(run.run_id, { status: 'running' }),
      store.appendEvents([narration(step.step_id, 1), narration(step.step_id, 2)]),
      store.appendEvents([narration(step.step_id, 3)]),
      store.getStep(step.step_id),
    ]);
    expect(writes.map((w) => w.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'fulfilled',
    ]);
    expect((writes[3] as PromiseFulfilledResult<unknown>).value).toEqual(step);
    // Each once, read through a connection of another store.
    const again = postgresStore({ connection: url, schema: s });
    expect((await again.readEvents(step.step_id)).map((e) => e.seq)).toEqual([1, 2, 3]);
    expect((await again.getRun(run.run_id))?.status).toBe('running');
    // And the store goes on.
    await store.appendEvents([narration(step.step_id, 4)]);
    await store.flush();
    expect(await again.readEvents(step.step_id, 3)).toHaveLength(1);
    await again.close();
    await store.close();
    await relay.close();
  });
});

describe('the PostgreSQL store’s leases', () => {
  it('two stores on one schema (two processes) see each other’s leases, renewals, expiry and release', async () => {
    const s = schema();
    const a = postgresStore({ connection: url, schema: s });
    const b = postgresStore({ connection: url, schema: s });
    await expectSharedLeases(a.leases, b.leases);
    await expect(a.leases.acquire('thread:3', 'engine-a', 0)).rejects.toThrow(RangeError);
    await Promise.all([a.close(), b.close()]);
  });
});
