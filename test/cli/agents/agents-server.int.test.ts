/**
 * `axon agents` and `axon schedules` against a real `axon serve` process (`--url`; issue 46),
 * with API keys: the actors and schedules are the key's user's (an admin key's, every user's),
 * `send --wait` follows a message through its wait for an event to its end (exit 0), a
 * cancelled one is exit 1, Ctrl-C stops waiting (exit 130); each refusal is one line and its
 * exit code. And the server's data dir: read beside it, but sending and changing schedules
 * there are refused (exit 2), naming the server's URL.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runAxon, spawnAxon, type FleetProcess } from '../../support/axon-process.js';
import { POLL, request } from '../../support/server.js';
import { axon, tableRows } from '../run-fixtures.js';

const ALICE = 'alice-key-0123456789';
const BOB = 'bob-key-0123456789ab';
const ADMIN = 'admin-key-0123456789';
const KEYS = `${ALICE}:alice,${BOB}:bob,${ADMIN}:root:read+write+admin`;

describe('axon agents against a server', () => {
  let root: string;
  let dataDir: string;
  let url: string;
  let server: FleetProcess;
  const processes: FleetProcess[] = [];
  const children: ChildProcess[] = [];
  const as = (key: string): string[] => ['--url', url, '--api-key', key];
  const auth = (key: string) => ({ authorization: `Bearer ${key}` });
  const status = async (path: string, key = ALICE): Promise<string> => {
    const res = await request(url, 'GET', `/v1/agents/${path}`, undefined, auth(key));
    return res.status === 200 ? (res.body as { status: string }).status : 'none';
  };

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), `axon-cli-agents-srv-${randomUUID().slice(0, 8)}-`));
    dataDir = join(root, 'data');
    const started = await spawnAxon(
      ['serve', '--port', '0', '--data-dir', dataDir],
      { AXON_SCRIPTED_TOKEN_MS: '0', AXON_API_KEYS: KEYS },
      /listening on (http:\/\/\S+) /,
      processes,
    );
    server = started.process;
    url = started.match[1] ?? '';
  });
  afterEach(() => {
    for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  });
  afterAll(async () => {
    server.child.kill('SIGTERM');
    await server.exited;
    rmSync(root, { recursive: true, force: true });
  });

  it("send: the 202's receipt and how to follow it; --wait --json its end; a client token again sends nothing", async () => {
    const sent = await axon(['agents', 'send', 'notebook', 'c-1', '{"text":"one"}', ...as(ALICE)]);
    expect(sent.stderr).toBe('');
    expect(sent.code).toBe(0);
    expect(sent.stdout).toMatch(
      new RegExp(
        `^message step_[0-9a-f]+ to notebook/c-1: (queued|running)\\nfollow it: axon agents show notebook c-1 --url ${url}\\n$`,
      ),
    );
    const argv = ['agents', 'send', 'notebook', 'c-1', '{"text":"two"}', '--client-token', 'k-2'];
    const waited = await axon([...argv, '--wait', '--json', ...as(ALICE)]);
    expect(waited.code).toBe(0);
    const end = JSON.parse(waited.stdout) as Record<string, unknown>;
    expect(end).toMatchObject({ status: 'succeeded', created: true, output: { count: 2 } });
    const again = await axon([...argv, '--json', ...as(ALICE)]);
    expect(JSON.parse(again.stdout)).toMatchObject({
      message_id: end['message_id'],
      created: false,
      status: 'succeeded',
    });
  });

  it("list and show: the key's own actors; an admin's every user's, --user one of them", async () => {
    await axon(['agents', 'send', 'notebook', 'b-1', '{"text":"bob"}', '--wait', ...as(BOB)]);
    const alice = await axon(['agents', 'list', ...as(ALICE)]);
    expect(tableRows(alice.stdout).map((r) => r.slice(0, 3))).toEqual([
      ['AGENT', 'KEY', 'USER'],
      ['notebook', 'c-1', 'alice'],
    ]);
    const admin = await axon(['agents', 'list', '--json', ...as(ADMIN)]);
    const all = JSON.parse(admin.stdout) as { key: string; user_id: string }[];
    expect(all.map((a) => `${a.user_id}:${a.key}`)).toEqual(['bob:b-1', 'alice:c-1']);
    const onlyBob = await axon(['agents', 'list', '--user', 'bob', ...as(ADMIN)]);
    expect(
      tableRows(onlyBob.stdout)
        .slice(1)
        .map((r) => r[1]),
    ).toEqual(['b-1']);
    const shown = await axon(['agents', 'show', 'notebook', 'b-1', '--user', 'bob', ...as(ADMIN)]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('agent notebook/b-1: ');
    expect(shown.stdout).toContain('state\n  {\n    "notes": [\n      "bob"\n    ]\n  }\n');
    const json = await axon(['agents', 'show', 'notebook', 'c-1', '--json', ...as(ALICE)]);
    const detail = JSON.parse(json.stdout) as {
      agent: { user_id: string; state: unknown };
      wakes: unknown;
      messages: { input: unknown; output: unknown }[];
      message_count: number;
    };
    expect(detail.agent).toMatchObject({ user_id: 'alice', state: { notes: ['one', 'two'] } });
    expect(detail.wakes).toEqual([]);
    expect(detail.messages.map((m) => [m.input, m.output])).toEqual([
      [{ text: 'one' }, { count: 1 }],
      [{ text: 'two' }, { count: 2 }],
    ]);
    expect(detail.message_count).toBe(2);
    // Bob may not read Alice's actors.
    const refused = await axon(['agents', 'list', '--user', 'alice', ...as(BOB)]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^axon agents list: the server refused GET \/v1\/agents: 403 /);
    const hidden = await axon(['agents', 'show', 'notebook', 'c-1', ...as(BOB)]);
    expect(hidden).toMatchObject({
      code: 1,
      stderr: `axon agents show: no actor notebook/c-1 at ${url}: it has had no message (or is not one this key may read)\n`,
    });
  });

  it('send --wait follows a message through its wait for an event to its end, exit 0', async () => {
    const waiting = runAxon(
      [
        'agents',
        'send',
        'follow-up',
        't-1',
        '{"text":"ok","await":"approval"}',
        '--wait',
        ...as(ALICE),
      ],
      {},
      children,
    );
    await expect.poll(() => status('follow-up/t-1'), POLL).toBe('waiting');
    // What it waits for is shown (the server's GET /v1/agents/{name}/{key}/wakes).
    const shown = await axon(['agents', 'show', 'follow-up', 't-1', '--json', ...as(ALICE)]);
    expect(shown.code).toBe(0);
    const wakes = (
      JSON.parse(shown.stdout) as { wakes: { kind: string; status: string; event: string }[] }
    ).wakes;
    expect(wakes).toMatchObject([{ kind: 'event', status: 'pending', event: 'approval' }]);
    const signal = await request(
      url,
      'POST',
      '/v1/events',
      { name: 'approval', data: { answer: 'yes' } },
      auth(ALICE),
    );
    expect(signal.status).toBe(202);
    const out = await waiting;
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(
      /^message step_[0-9a-f]+ to follow-up\/t-1: succeeded\noutput: \{"logged":"ok:yes"\}\n$/,
    );
  });

  it('send --wait: a message cancelled while it waits is exit 1; Ctrl-C stops waiting, exit 130', async () => {
    const cancelled = runAxon(
      [
        'agents',
        'send',
        'follow-up',
        't-2',
        '{"text":"x","await":"never"}',
        '--wait',
        ...as(ALICE),
      ],
      {},
      children,
    );
    await expect.poll(() => status('follow-up/t-2'), POLL).toBe('waiting');
    const cancel = await request(url, 'POST', '/v1/agents/follow-up/t-2/cancel', {}, auth(ALICE));
    expect(cancel.status).toBe(202);
    const out = await cancelled;
    expect(out.code).toBe(1);
    expect(out.stdout).toMatch(
      /^message step_[0-9a-f]+ to follow-up\/t-2: cancelled\nerror: CANCELLED: /,
    );

    const interrupted = runAxon(
      [
        'agents',
        'send',
        'follow-up',
        't-3',
        '{"text":"x","await":"never"}',
        '--wait',
        ...as(ALICE),
      ],
      {},
      children,
    );
    await expect.poll(() => status('follow-up/t-3'), POLL).toBe('waiting');
    children.at(-1)?.kill('SIGINT');
    const stopped = await interrupted;
    expect(stopped.code).toBe(130);
    expect(stopped.stderr).toMatch(
      new RegExp(
        `^axon agents send: stopped waiting for message step_[0-9a-f]+; it goes on \\(axon agents show follow-up t-3 --url ${url}\\)\\n$`,
      ),
    );
    expect(await status('follow-up/t-3')).toBe('waiting');
  });

  it('each refusal is one line and its exit code', async () => {
    const cases: [string[], number, string][] = [
      [
        ['agents', 'send', 'notebok', 'c-1', '{"text":"x"}', ...as(ALICE)],
        1,
        `axon agents send: no durable agent "notebok" at ${url}\n`,
      ],
      [
        ['agents', 'show', 'notebok', 'c-1', ...as(ALICE)],
        1,
        `axon agents show: no durable agent "notebok" at ${url}\n`,
      ],
      [
        ['agents', 'send', 'notebook', 'c-1', '{"note":"x"}', ...as(ALICE)],
        1,
        'axon agents send: refused, SCHEMA_VIOLATION: a message to notebook: schema violation: text: Invalid input: expected string, received undefined; (root): Unrecognized key: "note"\n',
      ],
      [
        ['agents', 'send', 'notebook', 'c/1', '{"text":"x"}', ...as(ALICE)],
        2,
        'axon agents send: <key> must be 1 to 128 letters, digits, ".", "_", "~" or "-", got "c/1"\n',
      ],
      [
        ['agents', 'send', 'notebook', 'c-1', '{"text":"x"}', '--user', 'bob', ...as(ADMIN)],
        2,
        "axon agents send: --user goes with a data dir: over --url a message goes to the actor of the key's user\n",
      ],
      [
        ['schedules', 'pause', 'sched_nope', ...as(ALICE)],
        1,
        `axon schedules pause: no schedule "sched_nope" at ${url} (or not one this key may see)\n`,
      ],
      [
        ['agents', 'list', '--url', url],
        1,
        'axon agents list: the server refused GET /v1/agents: 401 UNAUTHORIZED: ',
      ],
      [
        ['agents', 'list', '--url', 'http://127.0.0.1:1'],
        3,
        'axon agents list: cannot reach the server at http://127.0.0.1:1: ',
      ],
    ];
    for (const [argv, code, line] of cases) {
      const out = await axon(argv);
      expect({ argv, code: out.code }).toEqual({ argv, code });
      expect(out.stderr.startsWith(line), out.stderr).toBe(true);
      expect(out.stdout).toBe('');
    }
  });

  it("schedules: the key's own; pause, resume and delete them; another user's is not there", async () => {
    const made = await request(
      url,
      'POST',
      '/v1/schedules',
      {
        agent: 'notebook',
        key: 'team-a',
        message: { text: 'n' },
        cron: '0 2 * * *',
        timezone: 'Europe/Berlin',
      },
      auth(ALICE),
    );
    expect(made.status).toBe(201);
    const id = (made.body as { schedule_id: string }).schedule_id;
    const listed = await axon(['schedules', 'list', ...as(ALICE)]);
    expect(tableRows(listed.stdout)[1]?.slice(0, 7)).toEqual([
      id,
      'notebook',
      'team-a',
      '0 2 * * *',
      'Europe/Berlin',
      'skip',
      'active',
    ]);
    expect((await axon(['schedules', 'list', ...as(BOB)])).stdout).toBe(`no schedules in ${url}\n`);
    expect(await axon(['schedules', 'pause', id, ...as(BOB)])).toMatchObject({ code: 1 });
    expect(await axon(['schedules', 'pause', id, ...as(ALICE)])).toMatchObject({
      code: 0,
      stdout: `schedule ${id}: paused (notebook/team-a, "0 2 * * *" Europe/Berlin)\n`,
    });
    const resumed = await axon(['schedules', 'resume', id, '--json', ...as(ALICE)]);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ schedule_id: id, status: 'active' });
    expect(await axon(['schedules', 'delete', id, '--json', ...as(ADMIN)])).toMatchObject({
      code: 0,
      stdout: `{\n  "schedule_id": "${id}",\n  "deleted": true\n}\n`,
    });
    expect(await axon(['schedules', 'delete', id, ...as(ALICE)])).toMatchObject({ code: 1 });
  });

  it("the server's data dir: read beside it; sending and changing schedules there are refused, exit 2", async () => {
    const read = await axon(['agents', 'list', '--data-dir', dataDir]);
    expect(read.code).toBe(0);
    expect(tableRows(read.stdout).map((r) => r[2])).toContain('alice');
    const refusals: [string[], string][] = [
      [['agents', 'send', 'notebook', 'c-1', '{"text":"x"}'], 'send'],
      [['schedules', 'pause', 'sched_x'], 'pause schedules'],
      [['schedules', 'resume', 'sched_x'], 'resume schedules'],
      [['schedules', 'delete', 'sched_x'], 'delete schedules'],
    ];
    for (const [argv, action] of refusals) {
      const out = await axon([...argv, '--data-dir', dataDir]);
      expect(out.code).toBe(2);
      expect(out.stderr).toBe(
        `axon ${argv[0] ?? ''} ${argv[1] ?? ''}: axon serve (pid ${server.pid}) is running on the data dir ${dataDir}: ${action} through it with --url ${url} (or stop it first)\n`,
      );
    }
    // Nothing was sent: c-1 has the two messages of the first test only.
    const detail = await axon(['agents', 'show', 'notebook', 'c-1', '--json', ...as(ALICE)]);
    expect((JSON.parse(detail.stdout) as { message_count: number }).message_count).toBe(2);
  });
});
