import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  existsSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import { PolicyDeniedError } from '../../src/errors/policy-denied-error.js';
import { createFsBroker, type FsResult } from '../../src/policy/fs-broker.js';

const dir = mkdtempSync(join(tmpdir(), 'axon-fs-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});
let n = 0;
/** A fresh data dir, a secret file outside its sandbox, and a broker on root `box`. */
function setup(policy: { allow?: string[]; quota_bytes?: number } = {}) {
  const dataDir = join(dir, `data-${++n}`);
  const outside = join(dir, `outside-${n}`);
  mkdirSync(outside, { recursive: true });
  writeFileSync(join(outside, 'secret.txt'), 'top secret');
  const broker = createFsBroker({ roots: ['box'], ...policy }, { dataDir });
  const root = join(dataDir, 'sandbox', 'box');
  return { broker, root, outside };
}

async function refused(p: Promise<unknown>): Promise<PolicyDeniedError> {
  const err = await p.catch((e: unknown) => e);
  expect(err).toBeInstanceOf(PolicyDeniedError);
  return err as PolicyDeniedError;
}

describe('the FS broker (POLICY-3001)', () => {
  it('writes, reads, lists, stats and deletes inside its root; relative roots live under <data-dir>/sandbox', async () => {
    const { broker, root } = setup();
    expect(await broker.run('write', 'notes/today.md', '# Today\n')).toEqual({ bytes: 8 });
    expect(readFileSync(join(root, 'notes', 'today.md'), 'utf8')).toBe('# Today\n');
    expect(await broker.run('read', 'notes/today.md')).toEqual({ content: '# Today\n' });
    expect(await broker.run('list', 'notes')).toEqual({
      entries: [{ name: 'today.md', type: 'file', size: 8 }],
    });
    expect(await broker.run('stat', 'notes/today.md')).toMatchObject({
      type: 'file',
      size: 8,
      mtime: expect.any(String) as string,
    });
    // An absolute path inside the root is fine too.
    expect(await broker.run('read', join(root, 'notes', 'today.md'))).toEqual({
      content: '# Today\n',
    });
    expect(await broker.run('delete', 'notes/today.md')).toEqual({ deleted: true });
    expect(existsSync(join(root, 'notes', 'today.md'))).toBe(false);
    await expect(broker.run('read', 'notes/today.md')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('refuses `..` escapes and absolute paths outside the roots, touching nothing', async () => {
    const { broker, outside } = setup();
    expect((await refused(broker.run('read', '../../outside/secret.txt'))).rule).toBe('fs.roots');
    expect((await refused(broker.run('read', join(outside, 'secret.txt')))).rule).toBe('fs.roots');
    expect((await refused(broker.run('write', 'a/../../../evil.txt', 'x'))).rule).toBe('fs.roots');
    expect((await refused(broker.run('delete', join(outside, 'secret.txt')))).rule).toBe(
      'fs.roots',
    );
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('top secret');
  });

  it('refuses symbolic links that lead out, checked on disk when used', async () => {
    const { broker, root, outside } = setup();
    await broker.run('write', 'keep.txt', 'inside');
    // A link to a file outside, and a link to a directory outside, both inside the root.
    symlinkSync(join(outside, 'secret.txt'), join(root, 'link.txt'));
    symlinkSync(outside, join(root, 'door'));
    const viaFile = await refused(broker.run('read', 'link.txt'));
    expect(viaFile.rule).toBe('fs.symlink');
    expect((await refused(broker.run('read', 'door/secret.txt'))).rule).toBe('fs.symlink');
    expect((await refused(broker.run('write', 'door/planted.txt', 'x'))).rule).toBe('fs.symlink');
    expect((await refused(broker.run('write', 'link.txt', 'overwrite'))).rule).toBe('fs.symlink');
    expect(existsSync(join(outside, 'planted.txt'))).toBe(false);
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('top secret');
    // A link that stays inside is followed like any path (listing shows it as a link).
    symlinkSync(join(root, 'keep.txt'), join(root, 'alias.txt'));
    await expect(broker.run('stat', 'alias.txt')).resolves.toMatchObject({ type: 'symlink' });
    // The final component is opened without following links, even one that stays inside.
    expect((await refused(broker.run('read', 'alias.txt'))).rule).toBe('fs.symlink');
  });

  it('allows only paths that match an allow glob', async () => {
    const { broker } = setup({ allow: ['**/*.md'] });
    await broker.run('write', 'docs/a.md', 'ok');
    const err = await refused(broker.run('write', 'docs/a.sh', 'rm -rf /'));
    expect(err.rule).toBe('fs.allow');
    expect((await refused(broker.run('read', 'docs/a.sh'))).rule).toBe('fs.allow');
  });

  it('with an allow-list, lists any directory inside the root, showing only the files it allows', async () => {
    const { broker, root } = setup({ allow: ['**/*.md'] });
    await broker.run('write', 'docs/a.md', 'ok');
    mkdirSync(join(root, 'docs', 'sub'), { recursive: true });
    writeFileSync(join(root, 'docs', 'run.sh'), 'echo');
    const names = (r: FsResult): string[] => ('entries' in r ? r.entries.map((e) => e.name) : []);

    expect(names(await broker.run('list', 'docs'))).toEqual(['a.md', 'sub']);
    expect(names(await broker.run('list', '.'))).toEqual(['docs']);
  });

  it("refuses a write past the run's quota with details.reason 'quota', counting what was written before", async () => {
    const dataDir = join(dir, `quota-${++n}`);
    const broker = createFsBroker({ roots: ['q'], quota_bytes: 10 }, { dataDir, written: 4 });
    expect(await broker.run('write', 'a.txt', 'abcdef')).toEqual({ bytes: 6 });
    const err = await refused(broker.run('write', 'b.txt', 'x'));
    expect(err.details).toMatchObject({
      reason: 'quota',
      quota_bytes: 10,
      written_bytes: 10,
      bytes: 1,
    });
    expect(existsSync(join(dataDir, 'sandbox', 'q', 'b.txt'))).toBe(false);
    expect(broker.written).toBe(10);
  });

  it('concurrent writes cannot pass the quota together', async () => {
    const { broker } = setup({ quota_bytes: 10 });
    const results = await Promise.allSettled(
      ['a.md', 'b.md', 'c.md'].map((p) => broker.run('write', p, 'sixsix')),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(broker.written).toBe(6);
  });

  it('checks the allow-list on disk: a linked directory inside the root opens no file a glob does not allow', async () => {
    const { broker, root } = setup({ allow: ['*.md', '*.md/**'] });
    mkdirSync(join(root, 'secret'), { recursive: true });
    writeFileSync(join(root, 'secret', 'key.sh'), 'export KEY=1');
    symlinkSync(join(root, 'secret'), join(root, 'pub.md'));

    expect((await refused(broker.run('read', 'secret/key.sh'))).rule).toBe('fs.allow');
    const viaLink = await refused(broker.run('read', 'pub.md/key.sh'));
    expect(viaLink.rule).toBe('fs.allow');
    expect(viaLink.message).toContain('on disk the path is secret/key.sh');
  });

  it('a name that starts with two dots is inside the root', async () => {
    const { broker } = setup();
    expect(await broker.run('write', '..notes.md', 'x')).toEqual({ bytes: 1 });
    expect(await broker.run('read', '..notes.md')).toEqual({ content: 'x' });
  });

  it('refuses an empty path and a write without content; a root cannot be deleted', async () => {
    const { broker, root } = setup();
    expect((await refused(broker.run('read', ''))).rule).toBe('fs.path');
    expect((await refused(broker.run('write', 'x.txt'))).rule).toBe('fs.content');
    expect((await refused(broker.run('delete', root))).rule).toBe('fs.roots');
    expect(() => createFsBroker({ roots: [] })).toThrow(TypeError);
  });
});
