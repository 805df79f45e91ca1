/**
 * `axon agents` and `axon schedules` on a data dir (issue 46): `agents send` runs the actor in
 * this process on a runtime built as `axon serve` builds it (its example durable agents
 * `notebook` and `follow-up`), and the other commands read back what it stored — the tables,
 * the JSON, the wakes, the exit codes of each refusal, Ctrl-C while waiting — and a schedule
 * paused, resumed and deleted in the store. One command runs as a real child process.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_DURABLE_AGENTS } from '../../../examples/index.js';
import { defineAgent } from '../../../src/actors/define-agent.js';
import { createLogger } from '../../../src/observability/logger.js';
import { createRuntime, type Runtime } from '../../../src/runtime/runtime.js';
import { sqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { runAxon } from '../../support/axon-process.js';
import { axon, tableRows } from '../run-fixtures.js';

const ENV = { AXON_SCRIPTED_TOKEN_MS: '0' };

/** What this Node's JSON.parse says of `text` (its wording differs between Node 20 and 24). */
function parseError(text: string): string {
  try {
    JSON.parse(text);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`${text} parses`);
}

interface Shown {
  readonly agent: { status: string; state: unknown; mailbox_depth: number; user_id: string };
  readonly wakes: { kind: string; status: string; event: string | null; step_id: string }[];
  readonly messages: { message_id: string; status: string; input: unknown; output: unknown }[];
  readonly message_count: number;
}

/** A runtime on the data dir's store (the test's own, closed by the caller). */
function runtimeOn(dir: string): Runtime {
  return createRuntime({
    store: sqliteStore(join(dir, 'axon.db')),
    logger: createLogger({ level: 'silent' }),
  });
}

describe('axon agents on a data dir', () => {
  let root: string;
  let dir: string;
  const at = (): string[] => ['--data-dir', dir];
  const show = async (name: string, key: string): Promise<Shown> => {
    const out = await axon(['agents', 'show', name, key, '--json', ...at()]);
    expect(out.stderr).toBe('');
    return JSON.parse(out.stdout) as Shown;
  };
  const spawned: ChildProcess[] = [];

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), `axon-cli-agents-${randomUUID().slice(0, 8)}-`));
    dir = join(root, 'data');
  });
  afterEach(() => {
    for (const c of spawned.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  });
  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it('before anything was sent: list, show and schedules list are exit 3, naming the data dir', async () => {
    for (const argv of [
      ['agents', 'list'],
      ['agents', 'show', 'notebook', 'c-1'],
      ['schedules', 'list'],
    ]) {
      const out = await axon([...argv, ...at()]);
      expect(out.code).toBe(3);
      expect(out.stderr).toMatch(/: no data dir .*data \(give the --data-dir axon serve uses/);
    }
  });

  it('send makes the data dir, prints the receipt and handles the message before it ends, exit 0', async () => {
    const out = await axon(['agents', 'send', 'notebook', 'c-1', '{"text":"hello"}', ...at()], {
      env: ENV,
    });
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(
      new RegExp(
        `^message step_[0-9a-f]+ to notebook/c-1: queued\\nfollow it: axon agents show notebook c-1 --data-dir ${dir}\\n$`,
      ),
    );
    const shown = await show('notebook', 'c-1');
    expect(shown.agent).toMatchObject({ status: 'asleep', state: { notes: ['hello'] } });
    expect(shown.messages.map((m) => [m.status, m.output])).toEqual([['succeeded', { count: 1 }]]);
  });

  it('send --wait prints the output; --json the receipt with its end; a client token sent again sends nothing', async () => {
    const text = await axon(
      ['agents', 'send', 'notebook', 'c-1', '{"text":"again"}', '--wait', ...at()],
      { env: ENV },
    );
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(
      /^message step_[0-9a-f]+ to notebook\/c-1: succeeded\noutput: \{"count":2\}\n$/,
    );
    const argv = ['agents', 'send', 'notebook', 'c-1', '{"text":"t"}', '--client-token', 'tok-1'];
    const first = await axon([...argv, '--wait', '--json', ...at()], { env: ENV });
    expect(first.code).toBe(0);
    const end = JSON.parse(first.stdout) as Record<string, unknown>;
    expect(end).toMatchObject({
      status: 'succeeded',
      created: true,
      output: { count: 3 },
      error: null,
    });
    expect(Object.keys(end)).toEqual([
      'message_id',
      'step_id',
      'run_id',
      'status',
      'created',
      'output',
      'error',
    ]);
    const again = await axon([...argv, '--json', ...at()], { env: ENV });
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({
      message_id: end['message_id'],
      created: false,
      status: 'succeeded',
    });
    expect((await show('notebook', 'c-1')).agent.state).toEqual({
      notes: ['hello', 'again', 't'],
    });
  });

  it('a message that waits for an event: send exits once it waits; show lists its wake, list finds it waiting', async () => {
    const out = await axon(
      ['agents', 'send', 'follow-up', 't-1', '{"text":"ok","await":"approval"}', ...at()],
      { env: ENV },
    );
    expect(out.code).toBe(0);
    const queued = await axon(
      ['agents', 'send', 'follow-up', 't-1', '{"text":"later","after_ms":5}', ...at()],
      { env: ENV },
    );
    expect(queued.code).toBe(0);
    const shown = await show('follow-up', 't-1');
    expect(shown.agent).toMatchObject({ status: 'waiting', mailbox_depth: 1 });
    expect(shown.wakes).toEqual([
      expect.objectContaining({
        kind: 'event',
        status: 'pending',
        event: 'approval',
        step_id: shown.messages[0]?.message_id,
      }),
    ]);
    expect(shown.messages.map((m) => m.status)).toEqual(['waiting', 'queued']);
    const text = await axon(['agents', 'show', 'follow-up', 't-1', ...at()]);
    const wakeRows = tableRows(text.stdout.slice(text.stdout.indexOf('WAKE')));
    expect(wakeRows[1]?.slice(0, 4)).toEqual(['event', 'pending', '-', 'approval']);
    const waiting = await axon(['agents', 'list', '--status', 'waiting', ...at()]);
    expect(tableRows(waiting.stdout).map((r) => r.slice(0, 4))).toEqual([
      ['AGENT', 'KEY', 'USER', 'STATUS'],
      ['follow-up', 't-1', 'anonymous', 'waiting'],
    ]);
  });

  it('send --wait waits through a durable sleep in this process, then prints the line logged', async () => {
    const out = await axon(
      ['agents', 'send', 'follow-up', 's-1', '{"text":"slept","after_ms":300}', '--wait', ...at()],
      { env: ENV },
    );
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/: succeeded\noutput: \{"logged":"slept"\}\n$/);
  });

  it('list: newest first; --name, --key-prefix, --user, --limit filter; --json gives Agent bodies', async () => {
    const all = await axon(['agents', 'list', ...at()]);
    expect(all.code).toBe(0);
    expect(tableRows(all.stdout).map((r) => `${r[0] ?? ''}/${r[1] ?? ''}`)).toEqual([
      'AGENT/KEY',
      'follow-up/s-1',
      'follow-up/t-1',
      'notebook/c-1',
    ]);
    const one = await axon(['agents', 'list', '--name', 'notebook', '--json', ...at()]);
    const bodies = JSON.parse(one.stdout) as Record<string, unknown>[];
    expect(bodies).toHaveLength(1);
    expect(Object.keys(bodies[0] ?? {})).toEqual([
      'name',
      'key',
      'user_id',
      'version',
      'status',
      'state',
      'mailbox_depth',
      'next_timer_at',
      'run_id',
      'created_at',
      'updated_at',
    ]);
    const prefix = await axon(['agents', 'list', '--key-prefix', 's-', '--limit', '5', ...at()]);
    expect(
      tableRows(prefix.stdout)
        .slice(1)
        .map((r) => r[1]),
    ).toEqual(['s-1']);
    const limited = await axon(['agents', 'list', '--limit', '1', ...at()]);
    expect(tableRows(limited.stdout)).toHaveLength(2);
    const nobody = await axon(['agents', 'list', '--user', 'alice', ...at()]);
    expect(nobody).toMatchObject({
      code: 0,
      stdout: `no actors of user alice in data dir ${dir}\n`,
    });
  });

  it('each refusal is one line and its exit code; nothing is stored', async () => {
    const cases: [string[], number, string][] = [
      [
        ['agents', 'send', 'notebok', 'c-1', '{"text":"x"}'],
        1,
        `axon agents send: no durable agent "notebok" in data dir ${dir} (axon serve runs notebook, follow-up)\n`,
      ],
      [
        ['agents', 'send', 'notebook', 'c 1', '{"text":"x"}'],
        2,
        'axon agents send: <key> must be 1 to 128 letters, digits, ".", "_", "~" or "-", got "c 1"\n',
      ],
      [
        ['agents', 'send', 'notebook', 'c-1', '{text:1}'],
        2,
        `axon agents send: <message> is not JSON (${parseError('{text:1}')}): give one JSON value, e.g. '{"text":"hello"}'\n`,
      ],
      [
        ['agents', 'send', 'notebook', 'c-1', '{"note":"x"}'],
        1,
        'axon agents send: refused, SCHEMA_VIOLATION: a message to notebook: schema violation: text: Invalid input: expected string, received undefined; (root): Unrecognized key: "note"\n',
      ],
      [
        ['agents', 'show', 'notebok', 'c-1'],
        1,
        `axon agents show: no durable agent "notebok" in data dir ${dir} (axon serve runs notebook, follow-up)\n`,
      ],
      [
        ['agents', 'show', 'notebook', 'c-2'],
        1,
        `axon agents show: no actor notebook/c-2 in data dir ${dir}: it has had no message (axon agents list shows the actors there)\n`,
      ],
      [
        ['agents', 'show', 'notebook', 'c-1', '--user', 'alice'],
        1,
        `axon agents show: no actor notebook/c-1 of user alice in data dir ${dir}: it has had no message (axon agents list shows the actors there)\n`,
      ],
      [
        ['agents', 'list', '--status', 'awake'],
        2,
        'axon agents list: --status awake: only a server knows which of its actors are awake in it (give its --url); on a data dir an idle actor is asleep\n',
      ],
    ];
    for (const [argv, code, line] of cases) {
      const out = await axon([...argv, ...at()], { env: ENV });
      expect({ argv, code: out.code, stderr: out.stderr }).toEqual({ argv, code, stderr: line });
      expect(out.stdout).toBe('');
    }
    expect((await show('notebook', 'c-1')).message_count).toBe(3);
  });

  it('--wait is exit 1 for a message that fails: an actor stored at a newer version than the agent', async () => {
    // A runtime with a notebook at version 2 stores the actor there first.
    const newer = runtimeOn(dir);
    newer.registerAgent(
      defineAgent({
        name: 'notebook',
        input: z.object({ text: z.string() }),
        durable: {
          state: z.object({ notes: z.array(z.string()) }),
          initial: { notes: [] },
          version: 2,
        },
        handler: (m, actor) => ({ state: { notes: [...actor.state.notes, m.text] } }),
      }),
    );
    await newer.actor('notebook', 'v2', { userId: 'anonymous' }).ask({ text: 'at v2' });
    await newer.close();
    const out = await axon(
      ['agents', 'send', 'notebook', 'v2', '{"text":"x"}', '--wait', ...at()],
      {
        env: ENV,
      },
    );
    expect(out.code).toBe(1);
    expect(out.stdout).toMatch(
      /^message step_[0-9a-f]+ to notebook\/v2: failed\nerror: INVALID_PARAMS: .*version 2.*\n$/,
    );
    expect((await show('notebook', 'v2')).agent.state).toEqual({ notes: ['at v2'] });
  });

  it('Ctrl-C while waiting: exit 130, and the message goes on waiting in the store', async () => {
    const stop = new AbortController();
    const running = axon(
      ['agents', 'send', 'follow-up', 'c-9', '{"text":"x","await":"never"}', '--wait', ...at()],
      { env: ENV, signal: stop.signal },
    );
    await expect
      .poll(async () => (await axon(['agents', 'list', '--key-prefix', 'c-9', ...at()])).stdout, {
        timeout: 20_000,
        interval: 100,
      })
      .toContain('waiting');
    stop.abort('SIGINT');
    const out = await running;
    expect(out.code).toBe(130);
    expect(out.stderr).toMatch(
      new RegExp(
        `^axon agents send: stopped waiting for message step_[0-9a-f]+; it goes on \\(axon agents show follow-up c-9 --data-dir ${dir}\\)\\n$`,
      ),
    );
    expect((await show('follow-up', 'c-9')).messages.map((m) => m.status)).toEqual(['waiting']);
  });

  it('schedules: list, pause, resume and delete in the store; one not there is exit 1', async () => {
    const made = runtimeOn(dir);
    for (const agent of EXAMPLE_DURABLE_AGENTS) made.registerAgent(agent);
    const { schedule_id: id } = await made.schedule(
      { agent: 'notebook', key: 'team-a', message: { text: 'n' }, cron: '0 2 * * *' },
      { userId: 'anonymous' },
    );
    await made.close();
    const listed = await axon(['schedules', 'list', ...at()]);
    expect(tableRows(listed.stdout)[1]?.slice(0, 7)).toEqual([
      id,
      'notebook',
      'team-a',
      '0 2 * * *',
      'UTC',
      'skip',
      'active',
    ]);
    const paused = await axon(['schedules', 'pause', id, ...at()]);
    expect(paused).toMatchObject({
      code: 0,
      stdout: `schedule ${id}: paused (notebook/team-a, "0 2 * * *" UTC)\n`,
    });
    expect(tableRows((await axon(['schedules', 'list', ...at()])).stdout)[1]?.[6]).toBe('paused');
    const resumed = await axon(['schedules', 'resume', id, '--json', ...at()]);
    expect(resumed.code).toBe(0);
    const body = JSON.parse(resumed.stdout) as { status: string; next_at: string };
    expect(body.status).toBe('active');
    expect(Date.parse(body.next_at)).toBeGreaterThan(Date.now());
    expect(await axon(['schedules', 'delete', id, ...at()])).toMatchObject({
      code: 0,
      stdout: `schedule ${id} deleted\n`,
    });
    for (const action of ['pause', 'resume', 'delete']) {
      const gone = await axon(['schedules', action, id, ...at()]);
      expect(gone).toMatchObject({
        code: 1,
        stdout: '',
        stderr: `axon schedules ${action}: no schedule "${id}" in data dir ${dir}\n`,
      });
    }
    const listedAfter = await axon(['schedules', 'list', ...at()]);
    expect(listedAfter.stdout).toBe(`no schedules in data dir ${dir}\n`);
  });

  it('as a real process: send --wait prints the output and exits 0; a refused message exits 1', async () => {
    const ok = await runAxon(
      ['agents', 'send', 'notebook', 'p-1', '{"text":"from a process"}', '--wait', ...at()],
      ENV,
      spawned,
    );
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/: succeeded\noutput: \{"count":1\}\n$/);
    const refused = await runAxon(
      ['agents', 'send', 'follow-up', 'p-1', '{"text":"no wait nor sleep"}', ...at()],
      ENV,
      spawned,
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      'axon agents send: refused, SCHEMA_VIOLATION: a message to follow-up: schema violation: (root): Invalid input\n',
    );
  });
});
