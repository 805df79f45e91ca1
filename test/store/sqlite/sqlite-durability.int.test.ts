/**
 * @module The SQLite store's `durability` option: the sync level it sets on the store's
 * connection, what it refuses, and what a commit survives under each setting — a close and
 * reopen, the process being killed (SIGKILL), and whether each commit syncs the WAL, counted
 * with `strace` watching a child process (the test fails, saying why, where it cannot). What no test here can show is a power loss itself: that
 * needs the machine's power cut, or a block device that drops unsynced writes (dm-flakey,
 * root). Counting the syncs is the closest check: `'power'` promises a sync at every commit.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteStore, type SqliteStoreOptions } from '../../../src/store/sqlite/sqlite-store.js';
import { makeRun, makeStep, narration } from '../../support/records.js';

const dir = mkdtempSync(join(tmpdir(), 'axon-durability-'));
let n = 0;
const file = (): string => join(dir, `store-${++n}.db`);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const DURABILITIES = [
  ['process', 1],
  ['power', 2],
] as const;

/**
 * A child process (run from source, through tsx) that opens a store on `argv[1]` with
 * durability `argv[2]` and commits `argv[3]` runs, one commit each, printing each run's id
 * once its commit has resolved (acknowledged). Then, with `argv[4]` = `close`, it closes the
 * store and exits; with `wait`, it prints `COMMITTED` and waits to be killed.
 */
const CHILD = `
import { sqliteStore } from ${JSON.stringify(new URL('../../../src/store/sqlite/sqlite-store.ts', import.meta.url).href)};
import { makeRun } from ${JSON.stringify(new URL('../../support/records.ts', import.meta.url).href)};
const [path, durability, count, then] = process.argv.slice(1);
const store = sqliteStore(path, { durability, checkpointIntervalMs: 0 });
for (let i = 0; i < Number(count); i++) {
  const run = makeRun();
  await store.createRun(run);
  await store.flush();
  process.stdout.write(run.run_id + '\\n');
}
if (then === 'close') {
  await store.close();
} else {
  process.stdout.write('COMMITTED\\n');
  setInterval(() => {}, 1000);
}
`;

/** The child's arguments after `node`: tsx, the script, then `args`. */
const childArgs = (args: readonly string[]): string[] => [
  '--import',
  'tsx',
  '--input-type=module',
  '-e',
  CHILD,
  ...args,
];

/** Runs the child until it has acknowledged `count` commits, then kills it (SIGKILL). */
function commitAndKill(path: string, durability: string, count: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, childArgs([path, durability, String(count), 'wait']), {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('COMMITTED')) child.kill('SIGKILL');
    });
    child.on('exit', (code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`child ended ${code ?? signal}: ${err}`));
      else resolve(out.split('\n').filter((l) => l.startsWith('run_')));
    });
  });
}

/**
 * Why `strace` cannot trace a child here, or `null` when it can: it is not installed, or the
 * kernel refuses it ptrace (a container without `CAP_SYS_PTRACE`, a seccomp profile, Yama).
 */
function straceRefusal(): string | null {
  const probe = spawnSync('strace', ['-f', '-qq', '-o', '/dev/null', 'true'], {
    encoding: 'utf8',
  });
  if (probe.error) {
    return (
      `strace could not run (${probe.error.message}): install it (apt-get install -y strace; ` +
      `.ci/run does)`
    );
  }
  if (probe.status === 0) return null;
  return (
    `strace may not trace a child here (exit ${String(probe.status)}: ${probe.stderr.trim()}): ` +
    `ptrace is refused. Allow it: in a container, start it with --cap-add=SYS_PTRACE (and ` +
    `--security-opt seccomp=unconfined where its seccomp profile blocks ptrace); on a host, ` +
    `sysctl kernel.yama.ptrace_scope=1 (or 0)`
  );
}

/**
 * Runs the child under `strace` to commit `count` runs and close, and counts the syncs
 * (`fsync`, `fdatasync`) of the store's WAL file.
 */
function walSyncs(path: string, durability: string, count: number): number {
  const trace = `${path}.strace`;
  const traced = spawnSync(
    'strace',
    [
      '-f',
      '-qq',
      '-y', // file descriptors shown with their paths
      '-e',
      'trace=fsync,fdatasync',
      '-o',
      trace,
      process.execPath,
      ...childArgs([path, durability, String(count), 'close']),
    ],
    { encoding: 'utf8' },
  );
  if (traced.status !== 0) throw new Error(`traced child failed: ${traced.stderr}`);
  // The child printed one id per acknowledged commit: all of them were made.
  expect(traced.stdout.split('\n').filter((l) => l.startsWith('run_'))).toHaveLength(count);
  return readFileSync(trace, 'utf8')
    .split('\n')
    .filter((line) => /\b(fsync|fdatasync)\(\d+<[^>]*-wal>\)/.test(line)).length;
}

describe('SqliteRunStore durability', () => {
  it.each(DURABILITIES)(
    "durability '%s' sets synchronous = %i on the store's connection",
    async (durability, level) => {
      const store = sqliteStore(file(), { durability });
      expect(store.durability).toBe(durability);
      expect(store.db.pragma('synchronous', { simple: true })).toBe(level);
      await store.close();
    },
  );

  it("defaults to 'process' (synchronous = NORMAL)", async () => {
    const store = sqliteStore(file());
    expect(store.durability).toBe('process');
    expect(store.db.pragma('synchronous', { simple: true })).toBe(1);
    await store.close();
  });

  it('belongs to the connection, not the file: a store reopened without it has the default', async () => {
    const path = file();
    const power = sqliteStore(path, { durability: 'power' });
    await power.close();
    const reopened = sqliteStore(path);
    expect(reopened.durability).toBe('process');
    expect(reopened.db.pragma('synchronous', { simple: true })).toBe(1);
    await reopened.close();
  });

  it.each([
    ['FULL', RangeError],
    ['Power', RangeError],
    ['', RangeError],
    ['toString', RangeError],
    [2, TypeError],
    [true, TypeError],
    [null, TypeError],
  ])(
    'refuses durability %j with a %O naming the option, before touching the file',
    (value, type) => {
      const path = join(dir, `refused-${++n}`, 'axon.db');
      const options = { durability: value } as unknown as SqliteStoreOptions;
      expect(() => sqliteStore(path, options)).toThrow(type);
      expect(() => sqliteStore(path, options)).toThrow(/durability must be 'process' or 'power'/);
      expect(existsSync(path)).toBe(false);
    },
  );

  it.each(DURABILITIES)(
    "under '%s', what was committed is read back by a new store after the first is closed",
    async (durability) => {
      const path = file();
      const first = sqliteStore(path, { durability });
      const run = makeRun();
      const step = makeStep(run.run_id);
      await first.createRun(run);
      await first.createStep(step);
      await first.appendEvents([narration(step.step_id, 1, 'one'), narration(step.step_id, 2)]);
      await first.flush();
      await first.updateRun(run.run_id, { status: 'completed' });
      await first.close();

      const second = sqliteStore(path, { durability });
      expect(await second.getRun(run.run_id)).toEqual({ ...run, status: 'completed' });
      expect(await second.getStep(step.step_id)).toEqual(step);
      expect((await second.readEvents(step.step_id)).map((e) => e.seq)).toEqual([1, 2]);
      await second.close();
    },
  );

  it.each(DURABILITIES)(
    "under '%s', every acknowledged commit survives the process being killed (SIGKILL)",
    async (durability) => {
      const path = file();
      const acknowledged = await commitAndKill(path, durability, 20);
      expect(acknowledged).toHaveLength(20);
      // The killed process never closed the store: its commits are in the WAL it left.
      expect(existsSync(`${path}-wal`)).toBe(true);
      const store = sqliteStore(path);
      expect((await store.listRuns()).map((r) => r.run_id).sort()).toEqual(acknowledged.sort());
      await store.close();
    },
  );

  // Needs `strace` (Linux) able to trace a child: Node cannot see the syncs itself. Where it
  // cannot, the test fails and says why — never skipped, or the proof would silently go.
  it("'power' syncs the WAL at every commit, 'process' does not (counted with strace)", () => {
    const refusal = straceRefusal();
    if (refusal !== null) expect.fail(refusal);
    const commits = 30;
    const power = walSyncs(file(), 'power', commits);
    const processOnly = walSyncs(file(), 'process', commits);
    // 'power': at least one sync of the WAL per commit (more for the migrations and the
    // checkpoint at close). 'process': only the checkpoint at close syncs it.
    expect(power).toBeGreaterThanOrEqual(commits);
    expect(processOnly).toBeLessThan(commits / 3);
  });
});
