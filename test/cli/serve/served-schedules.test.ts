/**
 * `axon.yaml`'s `schedules:` (issue 46): each entry checked with the file (its fields, its cron
 * and time zone, names unique), each problem named by its line and key; at start, an entry the
 * runtime refuses (an unknown agent, a message its input refuses) is exit 2 naming its line,
 * and the others are kept as `sched_<name>` — made once, kept across restarts, made again when
 * the entry changes (a paused one stays paused).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ServeConfigError } from '../../../src/cli/serve/config-problems.js';
import { serveCommand } from '../../../src/cli/serve/serve-command.js';
import { loadServeConfig } from '../../../src/cli/serve/serve-config.js';
import { request } from '../../support/server.js';
import { serveOnFreePort } from '../../support/serve-cli.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), `axon-schedules-${randomUUID().slice(0, 8)}-`));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const config = (text: string): void => {
  writeFileSync(join(dir, 'axon.yaml'), text);
};

/** The one-line message of a configuration refused while it is read. */
function refused(): string {
  try {
    loadServeConfig({ cwd: dir, env: {} });
  } catch (err) {
    expect(err).toBeInstanceOf(ServeConfigError);
    return (err as Error).message;
  }
  throw new Error('the configuration was accepted');
}

const NIGHTLY = `schedules:
  - name: nightly
    agent: notebook
    key: team-a
    message: { text: night }
    cron: '0 2 * * *'
    timezone: Europe/Berlin
`;

describe('schedules: in axon.yaml, read', () => {
  it('reads each entry as written', () => {
    config(
      `${NIGHTLY}  - name: often\n    agent: follow-up\n    key: k\n    message: { text: t, after_ms: 0 }\n    cron: '*/10 * * * * *'\n    overlap: queue\n    catchup: true\n    user_id: alice\n`,
    );
    expect(loadServeConfig({ cwd: dir, env: {} }).schedules).toEqual([
      {
        name: 'nightly',
        agent: 'notebook',
        key: 'team-a',
        message: { text: 'night' },
        cron: '0 2 * * *',
        timezone: 'Europe/Berlin',
      },
      {
        name: 'often',
        agent: 'follow-up',
        key: 'k',
        message: { text: 't', after_ms: 0 },
        cron: '*/10 * * * * *',
        overlap: 'queue',
        catchup: true,
        user_id: 'alice',
      },
    ]);
  });

  it('names the line and key of a cron that does not parse, a bad time zone, a key or name of the wrong form, a missing message, an unknown field', () => {
    config(NIGHTLY.replace("'0 2 * * *'", "'0 25 * * *'"));
    expect(refused()).toMatch(
      /^axon\.yaml line 6: schedules\[0\]\.cron: cron "0 25 \* \* \*" does not parse/,
    );
    config(NIGHTLY.replace("'0 2 * * *'", "'every night'"));
    expect(refused()).toMatch(/^axon\.yaml line 6: schedules\[0\]\.cron: cron "every night"/);
    config(NIGHTLY.replace('Europe/Berlin', 'Mars/Olympus'));
    expect(refused()).toMatch(
      /^axon\.yaml line 7: schedules\[0\]\.timezone: timezone "Mars\/Olympus" is not an IANA time zone$/,
    );
    config(NIGHTLY.replace('key: team-a', 'key: team a'));
    expect(refused()).toMatch(/^axon\.yaml line 4: schedules\[0\]\.key: must be 1 to 128/);
    config(NIGHTLY.replace('name: nightly', 'name: "night/ly"'));
    expect(refused()).toMatch(/^axon\.yaml line 2: schedules\[0\]\.name: must be 1 to 64/);
    config(NIGHTLY.replace('    message: { text: night }\n', ''));
    expect(refused()).toMatch(/^axon\.yaml line \d+: schedules\[0\]\.message: is required/);
    config(`${NIGHTLY}    colour: red\n`);
    expect(refused()).toBe('axon.yaml line 8: schedules[0].colour: unknown key "colour"');
    config(`${NIGHTLY}    overlap: sometimes\n`);
    expect(refused()).toMatch(/^axon\.yaml line 8: schedules\[0\]\.overlap: /);
  });

  it('refuses two entries of one name, naming the second', () => {
    config(`${NIGHTLY}${NIGHTLY.replace('schedules:\n', '').replace('team-a', 'team-b')}`);
    expect(refused()).toBe(
      'axon.yaml line 8: schedules[1].name: "nightly" names another schedule of the list already',
    );
  });
});

/** `axon serve` in this process; its exit code and what it wrote, once it has stopped. */
async function serveRefused(): Promise<{ code: number; stderr: string }> {
  let stderr = '';
  const stop = new AbortController();
  const code = await serveCommand(
    { flags: { port: '0' }, env: {}, cwd: dir, version: '0.0.0-test', signal: stop.signal },
    { stdout: { write: () => true }, stderr: { write: (t: string) => (stderr += t) } },
  );
  return { code, stderr };
}

describe('schedules: in axon.yaml, kept by axon serve', () => {
  it('an entry for an unknown agent, or whose message the agent refuses, is exit 2 naming its line', async () => {
    config(
      `${NIGHTLY}  - name: ghost\n    agent: nobody\n    key: k\n    message: {}\n    cron: '0 * * * *'\n`,
    );
    expect(await serveRefused()).toEqual({
      code: 2,
      stderr: expect.stringMatching(
        /^axon serve: axon\.yaml line 8: schedule "ghost": .*nobody.*\n$/,
      ) as string,
    });
    config(NIGHTLY.replace('{ text: night }', '{ text: 7 }'));
    const { code, stderr } = await serveRefused();
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /^axon serve: axon\.yaml line 2: schedule "nightly": .*schema violation.*text/,
    );
  });

  it('keeps each entry as sched_<name>: the same after a restart, made again when its entry changes, a paused one staying paused', async () => {
    config(NIGHTLY);
    const first = await serveOnFreePort({}, dir);
    expect(first.stdout()).toContain('axon serve: schedules: sched_nightly\n');
    const made = await request(first.url, 'GET', '/v1/schedules/sched_nightly');
    expect(made.status, made.text).toBe(200);
    expect(made.body).toMatchObject({
      schedule_id: 'sched_nightly',
      agent: 'notebook',
      key: 'team-a',
      message: { text: 'night' },
      cron: '0 2 * * *',
      timezone: 'Europe/Berlin',
      status: 'active',
    });
    // 02:00 in Berlin is 00:00 or 01:00 UTC.
    expect((made.body as { next_at: string }).next_at).toMatch(/T0[01]:00:00\.000Z$/);
    expect(await first.stop()).toBe(0);

    const second = await serveOnFreePort({}, dir);
    const kept = await request(second.url, 'GET', '/v1/schedules/sched_nightly');
    expect(kept.body).toEqual(made.body);
    expect(
      (await request(second.url, 'POST', '/v1/schedules/sched_nightly/pause')).body,
    ).toMatchObject({ status: 'paused' });
    expect(await second.stop()).toBe(0);

    config(NIGHTLY.replace("'0 2 * * *'", "'30 3 * * *'"));
    const third = await serveOnFreePort({}, dir);
    const remade = await request(third.url, 'GET', '/v1/schedules/sched_nightly');
    expect(remade.body).toMatchObject({ cron: '30 3 * * *', status: 'paused' });
    expect((await request(third.url, 'GET', '/v1/schedules')).body).toEqual({
      schedules: [remade.body],
    });
    expect(await third.stop()).toBe(0);
  });

  it("an entry's user_id names whose actor it messages: the schedule is that user's", async () => {
    config(
      `auth:\n  keys:\n    - { key: alice-key-0123456789, user_id: alice }\n    - { key: bob-key-01234567890, user_id: bob }\n${NIGHTLY}    user_id: alice\n`,
    );
    const served = await serveOnFreePort({}, dir);
    const get = (key: string) =>
      request(served.url, 'GET', '/v1/schedules/sched_nightly', undefined, {
        authorization: `Bearer ${key}`,
      });
    expect((await get('alice-key-0123456789')).status).toBe(200);
    expect((await get('bob-key-01234567890')).status).toBe(404);
    expect(await served.stop()).toBe(0);
  });
});
