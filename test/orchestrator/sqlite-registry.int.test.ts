import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../src/context/clock.js';
import { createSqliteRegistry } from '../../src/orchestrator/sqlite-registry.js';
import { describeRegistry } from './registry.conformance.js';

const dirs: string[] = [];

/** A path in a new temporary folder, removed after the test. */
function tempFile(name = 'registry.db'): string {
  const dir = mkdtempSync(join(tmpdir(), 'axon-registry-'));
  dirs.push(dir);
  return join(dir, name);
}

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describeRegistry('sqlite (a file, WAL)', ({ clock }) =>
  createSqliteRegistry(tempFile(), { clock }),
);

describeRegistry("sqlite (':memory:')", ({ clock }) => createSqliteRegistry(':memory:', { clock }));

const at = '2025-01-01T00:00:00.000Z';

describe('SqliteRegistry', () => {
  it('keeps entries, their changes and their statistics across a reopen of the file', async () => {
    const path = tempFile();
    const clock = new SimulatedClock(Date.parse(at));
    const first = createSqliteRegistry(path, { clock });
    await first.register({
      name: 'search',
      kind: 'tool',
      description: 'Finds things',
      schema: { type: 'object', properties: { q: { type: 'string' } } },
      metadata: { owner: 'team-a', tags: ['web'] },
    });
    await first.register({ name: 'billing', kind: 'agent', description: 'Invoices' });
    clock.advance(1000);
    await first.update('billing', 'agent', { enabled: false, health: 'degraded' });
    await first.recordCall('search', 'tool', { ok: true, durationMs: 100, at });
    await first.recordCall('search', 'tool', { ok: false, durationMs: 200, at });
    const before = await first.list();
    await first.close();

    const second = createSqliteRegistry(path);
    expect(await second.list()).toEqual(before);
    expect(await second.resolve('billing')).toMatchObject({
      enabled: false,
      health: 'degraded',
      registeredAt: at,
      updatedAt: '2025-01-01T00:00:01.000Z',
    });
    expect((await second.resolve('search'))?.stats).toMatchObject({ calls: 2, failures: 1 });
    await second.close();
  });

  it('opens its file in WAL mode and closes it on close()', async () => {
    const registry = createSqliteRegistry(tempFile());
    expect(registry.db.pragma('journal_mode', { simple: true })).toBe('wal');
    await registry.close();
    expect(registry.db.open).toBe(false);
    // Closed, it refuses to work rather than answering from nothing.
    await expect(registry.list()).rejects.toThrow(/not open/);
  });

  it('creates the folder of a new file', async () => {
    const registry = createSqliteRegistry(join(tempFile('unused'), 'nested', 'registry.db'));
    await registry.register({ name: 'billing', kind: 'agent', description: 'Invoices' });
    expect(await registry.list()).toHaveLength(1);
    await registry.close();
  });

  it('given an open database, adds its table there and leaves the database open', async () => {
    const db = new Database(':memory:');
    try {
      const registry = createSqliteRegistry(db);
      await registry.register({ name: 'billing', kind: 'agent', description: 'Invoices' });
      await registry.close();

      expect(db.open).toBe(true);
      const row = db.prepare('SELECT kind, name FROM registry_entries').get();
      expect(row).toEqual({ kind: 'agent', name: 'billing' });
      // Another registry on the same database sees the entry.
      expect(await createSqliteRegistry(db).resolve('billing')).toMatchObject({ kind: 'agent' });
    } finally {
      db.close();
    }
  });

  it('refuses a path that is neither a file path nor a database', () => {
    expect(() => createSqliteRegistry('')).toThrow(TypeError);
    expect(() => createSqliteRegistry({} as unknown as string)).toThrow(/path must be/);
  });

  it('two registries on one file see each other: a name taken by one is taken for the other', async () => {
    const path = tempFile();
    const mine = createSqliteRegistry(path);
    const theirs = createSqliteRegistry(path);
    const stored = await mine.register({ name: 'billing', kind: 'agent', description: 'Mine' });

    await expect(
      theirs.register({ name: 'billing', kind: 'agent', description: 'Theirs' }),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await theirs.ensure({ name: 'billing', kind: 'agent', description: 'Theirs' })).toEqual(
      stored,
    );
    await theirs.update('billing', 'agent', { health: 'unavailable' });
    expect(await mine.discover('agent')).toEqual([]);
    await theirs.close();
    await mine.close();
  });

  it('two registries on one file counting 50 calls each at once lose none', async () => {
    const path = tempFile();
    const mine = createSqliteRegistry(path);
    const theirs = createSqliteRegistry(path);
    await mine.register({ name: 'search', kind: 'tool', description: 'Finds things' });

    await Promise.all(
      Array.from({ length: 50 }, (_, i) => [
        mine.recordCall('search', 'tool', { ok: true, durationMs: 10, at }),
        theirs.recordCall('search', 'tool', { ok: i % 2 === 0, durationMs: 10, at }),
      ]).flat(),
    );

    for (const registry of [mine, theirs]) {
      expect((await registry.resolve('search', 'tool'))?.stats).toEqual({
        calls: 100,
        successes: 75,
        failures: 25,
        lastInvokedAt: at,
        avgDurationMs: 10,
      });
    }
    await theirs.close();
    await mine.close();
  });

  it('two processes on one file counting calls at once lose none', async () => {
    const path = tempFile();
    const registry = createSqliteRegistry(path);
    await registry.register({ name: 'search', kind: 'tool', description: 'Finds things' });
    const perProcess = 300;

    const children = [0, 1].map(() => countingProcess(path, perProcess));
    await Promise.all(children.map((c) => c.ready));
    for (const c of children) c.go();
    await Promise.all(children.map((c) => c.done));

    expect((await registry.resolve('search', 'tool'))?.stats.calls).toBe(2 * perProcess);
    await registry.close();
  });
});

const root = fileURLToPath(new URL('../..', import.meta.url));
const registryModule = fileURLToPath(
  new URL('../../src/orchestrator/sqlite-registry.ts', import.meta.url),
);

// A process with a registry of its own on `path`: says `ready`, waits for a line on stdin
// (so both processes start counting together), then counts `n` calls of `tool:search`.
const COUNTING_SCRIPT = `
  const [module, path, n] = process.argv.slice(1);
  const { createSqliteRegistry } = await import(module);
  const registry = createSqliteRegistry(path);
  console.log('ready');
  await new Promise((resolve) => process.stdin.once('data', resolve));
  process.stdin.destroy();
  for (let i = 0; i < Number(n); i++) {
    await registry.recordCall('search', 'tool', { ok: true, durationMs: 1, at: new Date().toISOString() });
  }
  await registry.close();
`;

interface CountingProcess {
  readonly ready: Promise<void>;
  readonly done: Promise<void>;
  go(): void;
}

function countingProcess(path: string, n: number): CountingProcess {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      COUNTING_SCRIPT,
      registryModule,
      path,
      String(n),
    ],
    { cwd: root, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve();
    });
    child.once('exit', () => {
      reject(new Error(`counting process exited before it was ready: ${err}`));
    });
  });
  const done = new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => {
      if (code === 0) resolve();
      else reject(new Error(`counting process exited ${code}: ${err}`));
    });
  });
  return { ready, done, go: () => child.stdin.write('go\n') };
}
