/**
 * `axon store copy` (issue 32): a data dir's SQLite store — runs a runtime made, with their
 * steps and logs, and a fact, a checkpoint, a call recording, a decided approval and a flow
 * no run uses — into a PostgreSQL schema of its own (dropped after), record for record; and
 * its refusals, a PostgreSQL URL it cannot use among them (real processes).
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import { runCli } from '../../src/cli/cli.js';
import type { CliIo } from '../../src/cli/cli-io.js';
import { postgresStore } from '../../src/store/postgres/postgres-store.js';
import type { RunStore } from '../../src/store/run-store.js';
import { sqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { runAxon } from '../support/axon-process.js';
import { makeCheckpoint, makeFact, makeFlow } from '../support/records.js';
import { freePort } from '../support/redis-setup.js';
import { quietRuntime } from '../support/runtime.js';

const url = process.env['AXON_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dir = mkdtempSync(join(tmpdir(), 'axon-store-copy-'));
const schemas: string[] = [];
const schema = (): string => {
  const s = `axon_test_copy_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  schemas.push(s);
  return s;
};
const spawned: ChildProcess[] = [];
afterAll(async () => {
  for (const child of spawned) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  for (const s of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await admin.end();
});

async function cli(argv: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = {
    stdout: { write: (t: string) => out.push(t) > 0 },
    stderr: { write: (t: string) => err.push(t) > 0 },
  };
  const code = await runCli(argv, io, '0.0.0-test');
  return { code, out: out.join(''), err: err.join('') };
}

const writer = defineAgent({
  name: 'writer',
  async *handler(input, ctx, rt) {
    yield 'draft ';
    const sub = await rt.delegate<string>('helper', input.message, ctx);
    return `${sub.output ?? ''}!`;
  },
});
const helper = defineAgent({ name: 'helper', handler: (input) => input.message.toUpperCase() });

/** Everything a store holds, read through the RunStore interface. */
async function contents(store: RunStore): Promise<unknown> {
  const runs = await store.listRuns();
  return {
    flows: await store.listFlows?.(),
    runs: await Promise.all(
      runs.map(async (run) => {
        const steps = await store.listSteps(run.run_id);
        return {
          run,
          steps: await Promise.all(
            steps.map(async (step) => ({ step, log: await store.readEvents(step.step_id) })),
          ),
          facts: await store.listFacts({ runId: run.run_id }),
          checkpoints: await store.listCheckpoints(run.run_id),
          recordings: await store.listRecordings(run.run_id),
          approvals: await store.listApprovals(run.run_id),
        };
      }),
    ),
  };
}

describe('axon store copy', () => {
  it('copies a SQLite data dir into PostgreSQL record for record; a second copy into it is refused', async () => {
    const data = join(dir, 'data');
    const source = sqliteStore(join(data, 'axon.db'));
    const rt = quietRuntime({ store: source, agents: [writer, helper] });
    const first = await rt.invoke<string>('writer', 'one');
    const second = await rt.invoke<string>('writer', 'two');
    expect([first.status, second.status]).toEqual(['success', 'success']);
    await rt.close();
    // The records a runtime makes less often, written to the file directly.
    const store = sqliteStore(join(data, 'axon.db'));
    const runId = first.runId;
    await store.putFlow(makeFlow({ name: 'unused' }));
    await store.appendFact(makeFact(runId));
    await store.createCheckpoint(makeCheckpoint(runId));
    await store.putRecording({
      run_id: runId,
      client_token: 'c-1',
      actor_path: ['writer'],
      seq: 1,
      kind: 'engine',
      name: 'scripted',
      inputs: { prompt_hash: 'p', params_hash: 'q', seed: 7, engine: 'scripted' },
      output: { tokens: ['Hello'], error: null },
      ts: 1_700_000_000_000,
    });
    const approval = {
      approval_id: `apr_${randomUUID()}`,
      run_id: runId,
      step_id: first.stepId,
      client_token: 'c-1',
      actor_path: [],
      action: 'call_tool' as const,
      target: 'deploy',
      subject: 'alice',
      rule: 'approvals.tools',
      approvers: ['bob'],
      status: 'pending' as const,
      snapshot: { value: 'running', context: {} },
      requested_at: '2026-11-23T10:00:00.000Z',
      decided_by: null,
      reason: null,
      decided_at: null,
    };
    await store.createApproval(approval);
    await store.decideApproval(approval.approval_id, {
      status: 'approved',
      decided_by: 'bob',
      reason: 'fine',
      decided_at: '2026-11-23T10:05:00.000Z',
    });
    const expected = await contents(store);
    await store.close();

    const s = schema();
    const copied = await cli([
      'store',
      'copy',
      '--from',
      `sqlite:${data}`,
      '--to',
      url,
      '--to-schema',
      s,
    ]);
    expect(copied.err).toBe('');
    expect(copied.code).toBe(0);
    expect(copied.out).toMatch(
      new RegExp(
        `^copied 2 runs \\(4 steps, \\d+ events, 1 facts, 1 checkpoints, 1 recordings, 1 approvals\\), \\d+ flows, 0 durable actors \\(0 wakes\\) and 0 schedules from sqlite:\\S+axon\\.db to postgres://\\S+ schema ${s}\\n$`,
      ),
    );
    const target = postgresStore({ connection: url, schema: s });
    expect(await contents(target)).toEqual(expected);
    expect((await target.listFlows()).map((f) => f.name)).toContain('unused');
    await target.close();

    const again = await cli([
      'store',
      'copy',
      '--from',
      `sqlite:${data}`,
      '--to',
      url,
      '--to-schema',
      s,
      '--json',
    ]);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/the target holds runs already .*: copy into an empty store/);
  });

  it('refuses a source that is not there, and a store it cannot name, changing nothing', async () => {
    const missing = await cli([
      'store',
      'copy',
      '--from',
      `sqlite:${join(dir, 'nope')}`,
      '--to',
      url,
    ]);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/--from: there is no SQLite store at \S+nope/);
    const bad = await cli(['store', 'copy', '--from', 'mysql://h/db', '--to', url]);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--from must be sqlite:<data dir or \.db file> or a postgres:\/\/ URL/);
  });
  it('regression: a wrong PostgreSQL URL printed a stack trace under axon:; it is one line naming the flag, the URL (password masked) and the cause, exit 2 (real processes)', async () => {
    const source = join(dir, `src-${randomUUID()}`);
    const made = await runAxon(
      ['run', 'help-desk', '--no-trace', '--token-ms', '0', '--data-dir', source],
      {},
      spawned,
    );
    expect(made.code).toBe(0);
    const at = (user: string, database: string, port?: number): string => {
      const u = new URL(url);
      u.username = user;
      u.password = 'secret-pw';
      u.pathname = `/${database}`;
      if (port !== undefined) u.port = String(port);
      return u.toString();
    };
    const host = new URL(url).host;
    const port = await freePort();
    const db = `axon_nope_${randomUUID().slice(0, 8)}`;
    const role = `nobody_${randomUUID().slice(0, 8)}`;
    const cases: [string[], string][] = [
      [
        ['--from', `sqlite:${source}`, '--to', at('postgres', 'postgres', port)],
        `axon store copy: cannot reach PostgreSQL at postgres://postgres:***@127.0.0.1:${port}/postgres (--to): connection refused`,
      ],
      [
        ['--from', `sqlite:${source}`, '--to', at('postgres', db)],
        `axon store copy: cannot reach PostgreSQL at postgres://postgres:***@${host}/${db} (--to): database "${db}" does not exist`,
      ],
      [
        ['--from', at(role, 'postgres'), '--to', `sqlite:${join(dir, randomUUID())}`],
        `axon store copy: cannot reach PostgreSQL at postgres://${role}:***@${host}/postgres (--from): role "${role}" does not exist`,
      ],
    ];
    for (const [args, line] of cases) {
      expect(await runAxon(['store', 'copy', ...args], {}, spawned)).toEqual({
        code: 2,
        signal: null,
        stdout: '',
        stderr: `${line}\n`,
      });
    }
  }, 60_000);
});
