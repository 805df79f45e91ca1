/**
 * The FS sandbox is the server's, not the caller's (docs/security.md, "The host's files";
 * POLICY-3001): a run's `fs_policy.roots` only narrow inside the operator's `fs.roots`, on one
 * process and on a fleet's worker alike. Attacked over real HTTP with an ordinary write key.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnAxon, type FleetProcess } from '../support/axon-process.js';
import { expectApiError, parseSse } from '../support/server.js';
import { useTarget, type TargetKind } from './targets.js';

const HOSTNAME = readFileSync('/etc/hostname', 'utf8');

describe.each<TargetKind>(['sqlite', 'fleet'])('the sandbox of %s', (kind) => {
  const target = useTarget(kind);

  it("refuses at the run's creation, 422 naming it, a root outside the server's sandbox: absolute, `..`, the data dir, its parent, a link out", async () => {
    const t = target();
    symlinkSync('/etc', join(t.sandbox, 'link-out'));
    const outside = [
      '/etc',
      '../../../../etc',
      t.dataDir,
      join(t.sandbox, '..'),
      '..',
      'link-out',
      'link-out/ssl',
    ];
    for (const root of outside) {
      const flow = await t.call('alice', 'POST', '/v1/flows', { name: 'f' });
      const { flow_id } = flow.body as { flow_id: string };
      const res = await t.call('alice', 'POST', `/v1/flows/${flow_id}/runs`, {
        fs_policy: { roots: ['./fine', root] },
      });
      expectApiError(res, 422, 'INVALID_PARAMS');
      const error = (res.body as { error: { message: string; details: Record<string, unknown> } })
        .error;
      expect(error.details).toMatchObject({ param: 'fs_policy.roots[1]', root });
      expect(error.message).toContain(`fs_policy.roots[1] "${root}"`);
      expect(error.message).toMatch(
        root.startsWith('link-out') ? /through a symbolic link/ : /outside the server's sandbox/,
      );
    }
    // Bounded before any is looked at on disk: at most 32 roots, 128 globs.
    const flow = await t.call('alice', 'POST', '/v1/flows', { name: 'f' });
    const runs = `/v1/flows/${(flow.body as { flow_id: string }).flow_id}/runs`;
    for (const fs_policy of [
      { roots: Array.from({ length: 33 }, (_, i) => `r${i}`) },
      { roots: ['ok'], allow: Array.from({ length: 129 }, (_, i) => `**/${i}.md`) },
    ]) {
      expectApiError(await t.call('alice', 'POST', runs, { fs_policy }), 400, 'INVALID_PARAMS');
    }
    // Nothing of the refused runs exists: alice lists none of them.
    expect((await t.call('alice', 'GET', '/v1/runs')).body).toEqual([]);
  });

  it('keeps what a user did before: a relative root inside the sandbox writes, lists and reads its files', async () => {
    const t = target();
    const run = await t.newRun('alice', { fs_policy: { roots: ['./notes'], quota_bytes: 64 } });
    const write = await t.submit('alice', run.run_id, {
      type: 'fs_op',
      input: { op: 'write', path: 'today.md', content: '# today' },
    });
    expect(await t.ended('alice', write)).toMatchObject({
      status: 'succeeded',
      output: { bytes: 7 },
    });
    const read = await t.submit('alice', run.run_id, {
      type: 'fs_op',
      input: { op: 'read', path: 'today.md' },
    });
    expect(await t.ended('alice', read)).toMatchObject({ output: { content: '# today' } });
    // On disk it is in the operator's folder, where the run's root said.
    expect(readFileSync(join(t.sandbox, 'notes', 'today.md'), 'utf8')).toBe('# today');
  });

  it('refuses at the operation a root made a link out after the run was created: POLICY_DENIED, nothing read', async () => {
    const t = target();
    const run = await t.newRun('alice', { fs_policy: { roots: ['./later'] } });
    // The root did not exist at creation; something puts a link to /etc in its place.
    symlinkSync('/etc', join(t.sandbox, 'later'));
    const step = await t.submit('alice', run.run_id, {
      type: 'fs_op',
      input: { op: 'read', path: 'hostname' },
    });
    const ended = await t.ended('alice', step);
    expect(ended).toMatchObject({ status: 'failed', output: null });
    expect((ended['error'] as { code: string }).code).toBe('POLICY_DENIED');
    const stream = await t.call('alice', 'GET', `/v1/steps/${step}/stream`);
    const frames = parseSse(stream.text).frames;
    expect(frames.at(-1)).toMatchObject({ event: 'error', data: { code: 'POLICY_DENIED' } });
    expect(stream.text).not.toContain(JSON.stringify(HOSTNAME).slice(1, -1));
  });

  it('refuses a link inside a root that leads to the data dir, the store never read', async () => {
    const t = target();
    mkdirSync(join(t.sandbox, 'box'), { recursive: true });
    // On a fleet the store is Redis: the API's data dir may not exist yet.
    mkdirSync(t.dataDir, { recursive: true });
    symlinkSync(t.dataDir, join(t.sandbox, 'box', 'data'));
    const run = await t.newRun('alice', { fs_policy: { roots: ['./box'] } });
    for (const path of ['data/axon.db', 'data']) {
      const step = await t.submit('alice', run.run_id, {
        type: 'fs_op',
        input: { op: path === 'data' ? 'list' : 'read', path },
      });
      const ended = await t.ended('alice', step);
      expect(ended).toMatchObject({ status: 'failed', output: null });
      expect(ended['error']).toMatchObject({ code: 'POLICY_DENIED' });
    }
  });
});

describe('a sandbox that would hold what the operator owns', () => {
  const spawned: FleetProcess[] = [];
  const dirs: string[] = [];
  afterAll(async () => {
    for (const p of spawned) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await Promise.all(spawned.map((p) => p.exited));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  /**
   * `axon <command>` with `<dir>/conf/axon.yaml` (data in `<dir>/data`) whose `fs.roots` is
   * `root(dir)`, and `more(dir)` after it: what it printed before it exited, and its exit code.
   */
  async function start(
    command: 'serve' | 'worker',
    root: (dir: string) => string,
    more: (dir: string) => string = () => '',
  ) {
    const dir = mkdtempSync(join(tmpdir(), 'axon-security-start-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'conf'));
    const file = join(dir, 'conf', 'axon.yaml');
    writeFileSync(
      file,
      `data_dir: ${join(dir, 'data')}\nfs:\n  roots: [${root(dir)}]\n${more(dir)}`,
    );
    const args =
      command === 'serve'
        ? ['serve', '--port', '0', '--config', file]
        : ['worker', '--pool', 'p', '--config', file];
    const message = await spawnAxon(args, {}, /listening on|taking steps/, spawned).then(
      () => `axon ${command} started`,
      (err: unknown) => (err as Error).message,
    );
    return { message, code: (await spawned.at(-1)?.exited)?.code, dir };
  }

  it.each(['serve', 'worker'] as const)(
    'is refused when axon %s starts: a root holding the data dir, or the config file with its keys (exit 2, the line named)',
    async (command) => {
      const data = await start(command, (dir) => dir);
      expect(data.code).toBe(2);
      expect(data.message).toContain(
        `axon.yaml line 3: fs.roots[0] (${data.dir}) holds the data dir (${join(data.dir, 'data')})`,
      );
      const config = await start(command, (dir) => join(dir, 'conf'));
      expect(config.code).toBe(2);
      expect(config.message).toContain(
        `fs.roots[0] (${join(config.dir, 'conf')}) holds ${join(config.dir, 'conf', 'axon.yaml')}`,
      );
    },
  );

  it.each(['serve', 'worker'] as const)(
    "is refused when axon %s starts: a root holding a memory tier's file, warm or cold, as written or relative to the config file (exit 2, the line named)",
    async (command) => {
      for (const [tier, path] of [
        ['warm', (dir: string) => join(dir, 'memory', 'warm.db')],
        ['cold', () => '../memory/cold.db'],
      ] as const) {
        const held = await start(
          command,
          (dir) => join(dir, 'memory'),
          (dir) => `memory:\n  ${tier}: { backend: sqlite, path: ${path(dir)} }\n`,
        );
        expect(held.code, held.message).toBe(2);
        expect(held.message).toContain(
          `axon.yaml line 3: fs.roots[0] (${join(held.dir, 'memory')}) holds ${join(held.dir, 'memory', `${tier}.db`)}`,
        );
      }
    },
  );
});
