/**
 * The server's sandbox (POLICY-3001, docs/security.md "The host's files"): the folders the
 * operator gives runs, which a run's `fs_policy.roots` only narrow inside — as written and
 * on disk — and which never hold the data dir or a guarded file. On real folders and links.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidParamsError } from '../../src/errors/invalid-params-error.js';
import { PolicyDeniedError } from '../../src/errors/policy-denied-error.js';
import { createFsBroker } from '../../src/policy/fs-broker.js';
import { createSandbox } from '../../src/policy/sandbox.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { createLogger } from '../../src/observability/logger.js';
import { sqliteWarmTier } from '../../src/memory/sqlite-warm-tier.js';

const base = mkdtempSync(join(tmpdir(), 'axon-sandbox-'));
afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});
let n = 0;
/** A fresh folder with a data dir, a files folder (the sandbox) and a secret outside both. */
function folder() {
  const dir = join(base, `d${++n}`);
  const files = join(dir, 'files');
  mkdirSync(files, { recursive: true });
  mkdirSync(join(dir, 'outside'));
  writeFileSync(join(dir, 'outside', 'secret.txt'), 'top secret');
  return { dir, files, dataDir: join(dir, 'data'), outside: join(dir, 'outside') };
}

async function refusedRoot(p: Promise<unknown>): Promise<InvalidParamsError> {
  const err = await p.catch((e: unknown) => e);
  expect(err).toBeInstanceOf(InvalidParamsError);
  expect((err as InvalidParamsError).unprocessable).toBe(true);
  return err as InvalidParamsError;
}

describe('createSandbox', () => {
  it('defaults to <dataDir>/sandbox alone, where relative run roots resolve', async () => {
    const { dataDir } = folder();
    const sandbox = createSandbox({ dataDir });
    expect(sandbox.roots).toEqual([join(dataDir, 'sandbox')]);
    expect(await sandbox.runRoots(['./a', 'b/c'])).toEqual([
      join(dataDir, 'sandbox', 'a'),
      join(dataDir, 'sandbox', 'b', 'c'),
    ]);
  });

  it('takes the roots the operator gives, relative ones against base; run roots narrow inside any of them', async () => {
    const { dir, files, dataDir } = folder();
    mkdirSync(join(dir, 'more'));
    const sandbox = createSandbox({ dataDir, roots: ['files', join(dir, 'more')], base: dir });
    expect(sandbox.roots).toEqual([files, join(dir, 'more')]);
    expect(await sandbox.runRoots(['x', join(dir, 'more', 'y'), files])).toEqual([
      join(files, 'x'),
      join(dir, 'more', 'y'),
      files,
    ]);
  });

  it('refuses a run root outside: absolute, `..`, the data dir, a link out — naming it as fs_policy.roots[i]', async () => {
    const { files, dataDir, outside } = folder();
    symlinkSync(outside, join(files, 'out'));
    const sandbox = createSandbox({ dataDir, roots: [files] });
    for (const root of [outside, '..', '../outside', dataDir, 'out', 'out/deeper']) {
      const err = await refusedRoot(sandbox.runRoots(['ok', root]));
      expect(err.param).toBe('fs_policy.roots[1]');
      expect(err.details).toMatchObject({ root });
    }
    expect((await refusedRoot(sandbox.runRoots(['out']))).message).toMatch(/symbolic link/);
  });

  it('refuses, when made, a root that holds the data dir or a guarded file, as written or through a link', () => {
    const { dir, files, dataDir } = folder();
    expect(() => createSandbox({ dataDir, roots: [dir] })).toThrow(
      new RangeError(
        `fs.roots[0] (${dir}) holds the data dir (${dataDir}): a run could read or change it; name a folder that does not hold it`,
      ),
    );
    expect(() => createSandbox({ dataDir: join(files, 'data'), roots: [files] })).toThrow(
      /holds the data dir/,
    );
    writeFileSync(join(dir, 'axon.yaml'), 'auth: {}');
    expect(() =>
      createSandbox({ dataDir, roots: [files, dir], guarded: [join(dir, 'axon.yaml')] }),
    ).toThrow(/fs\.roots\[1\] .* holds the data dir/);
    // A link to the data dir's parent, given as the root.
    symlinkSync(dir, join(base, `link-${n}`));
    expect(() => createSandbox({ dataDir, roots: [join(base, `link-${n}`)] })).toThrow(
      /holds the data dir/,
    );
    mkdirSync(join(dir, 'conf'));
    writeFileSync(join(dir, 'conf', 'axon.yaml'), 'auth: {}');
    expect(() =>
      createSandbox({
        dataDir,
        roots: [join(dir, 'conf')],
        guarded: [join(dir, 'conf', 'axon.yaml')],
      }),
    ).toThrow(/holds .*conf\/axon\.yaml/);
    expect(() => createSandbox({ dataDir, roots: [] })).toThrow(RangeError);
  });
});

describe('the FS broker inside the sandbox', () => {
  it('refuses an operation whose run root is outside the sandbox (fs.sandbox), touching nothing', async () => {
    const { files, dataDir, outside } = folder();
    const sandbox = createSandbox({ dataDir, roots: [files] });
    const broker = createFsBroker({ roots: [outside] }, { sandbox });
    const err = await broker.run('read', 'secret.txt').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PolicyDeniedError);
    expect((err as PolicyDeniedError).rule).toBe('fs.sandbox');
    // Nothing made outside either.
    const made = createFsBroker({ roots: [join(outside, 'new')] }, { sandbox });
    await expect(made.run('write', 'x.txt', 'x')).rejects.toMatchObject({ rule: 'fs.sandbox' });
    expect(() => readFileSync(join(outside, 'new', 'x.txt'))).toThrow(/ENOENT/);
  });

  it('refuses a root that became a link out after the broker was made', async () => {
    const { files, dataDir, outside } = folder();
    const broker = createFsBroker(
      { roots: ['later'] },
      { sandbox: createSandbox({ dataDir, roots: [files] }) },
    );
    symlinkSync(outside, join(files, 'later'));
    await expect(broker.run('read', 'secret.txt')).rejects.toMatchObject({ rule: 'fs.sandbox' });
  });
});

describe("createRuntime's fs option", () => {
  const quiet = { logger: createLogger({ level: 'silent' }) };

  it('gives fs_op steps the roots it names, and refuses run roots outside them', async () => {
    const { dir, files, dataDir } = folder();
    const runtime = createRuntime({ ...quiet, dataDir, fs: { roots: [files] } });
    try {
      const { flow } = await runtime.createFlow({ name: 'f' });
      const run = await runtime.createRun(flow.flow_id, { fs_policy: { roots: ['notes'] } });
      const step = await runtime.submitStep(run.run_id, {
        type: 'fs_op',
        input: { op: 'write', path: 'a.md', content: 'hi' },
      });
      expect(await step.done).toBe('succeeded');
      expect(readFileSync(join(files, 'notes', 'a.md'), 'utf8')).toBe('hi');
      await refusedRoot(runtime.createRun(flow.flow_id, { fs_policy: { roots: [dir] } }));
    } finally {
      await runtime.close();
    }
  });

  it('refuses a root holding the data dir, and options it does not have, naming them', () => {
    const { dir, dataDir } = folder();
    expect(() => createRuntime({ ...quiet, dataDir, fs: { roots: [dir] } })).toThrow(
      /^createRuntime: fs\.roots\[0\] .* holds the data dir/,
    );
    expect(() =>
      createRuntime({ ...quiet, dataDir, fs: { roots: [], extra: 1 } as never }),
    ).toThrow(new TypeError('createRuntime: fs takes roots and guarded, not extra'));
    expect(() => createRuntime({ ...quiet, dataDir, fs: 'x' as never })).toThrow(TypeError);
  });

  it("refuses a root holding a file fs.guarded names (its memory tier's file, say), through a link too", async () => {
    const { dir, files, dataDir } = folder();
    // A real warm tier's file in the files folder, named by the embedding code as guarded.
    const memoryFile = join(files, 'memory.db');
    await sqliteWarmTier(memoryFile).close();
    const guarded = { guarded: [memoryFile] };
    expect(() => createRuntime({ ...quiet, dataDir, fs: { roots: [files], ...guarded } })).toThrow(
      new RangeError(
        `createRuntime: fs.roots[0] (${files}) holds ${memoryFile}: a run could read or change it; name a folder that does not hold it`,
      ),
    );
    symlinkSync(files, join(dir, 'files-link'));
    expect(() =>
      createRuntime({ ...quiet, dataDir, fs: { roots: [join(dir, 'files-link')], ...guarded } }),
    ).toThrow(/^createRuntime: fs\.roots\[0\] .* holds .*memory\.db/);
  });
});
