/**
 * The trace UI's bundle (src/server/ui/ui-bundle.ts): `npm run build`'s step writes the page,
 * the script and stylesheet named by their content's hash, their maps and the icon; a server
 * reads them back; a folder without them is a 503 that says to run `npm run build`.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { errorReply } from '../../src/server/http-errors.js';
import { PAGE_FILE, readUiBundle, writeUiBundle } from '../../src/server/ui/ui-bundle.js';
import { UiNotBuiltError } from '../../src/server/ui/ui-not-built-error.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function scratch(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'axon-ui-'));
  dirs.push(dir);
  return dir;
}

describe('the UI bundle', () => {
  it('writes the page, hashed script and stylesheet with their maps, and the icon; reads them back', async () => {
    const dir = join(await scratch(), 'ui');
    await writeUiBundle(dir);
    const names = (await readdir(dir)).sort();
    expect(names).toHaveLength(6);
    expect(names).toContain(PAGE_FILE);
    expect(names).toContain('icon.svg');
    const js = names.find((n) => /^app-[A-Z0-9]{8}\.js$/.test(n));
    const css = names.find((n) => /^app-[A-Z0-9]{8}\.css$/.test(n));
    expect(js).toBeDefined();
    expect(css).toBeDefined();
    expect(names).toContain(`${js}.map`);

    const assets = await readUiBundle(dir);
    const page = assets.get(PAGE_FILE);
    expect(page?.immutable).toBe(false);
    const html = page?.body.toString() ?? '';
    expect(html).toContain(`<script type="module" src="ui/${js}"></script>`);
    expect(html).toContain(`<link rel="stylesheet" href="ui/${css}" />`);
    expect(html).not.toContain('{{');
    expect(assets.get(js ?? '')?.immutable).toBe(true);
    expect(assets.get(js ?? '')?.type).toBe('text/javascript; charset=utf-8');
    expect(assets.get(css ?? '')?.immutable).toBe(true);
    expect(assets.get('icon.svg')?.immutable).toBe(false);
    // The same sources, the same names: a rebuild does not bust a cache for nothing.
    const again = join(await scratch(), 'ui');
    await writeUiBundle(again);
    expect((await readdir(again)).sort()).toEqual(names);
  });

  it('a folder without the built UI is a 503 that says to run `npm run build`', async () => {
    const missing = join(await scratch(), 'nothing-here');
    const err: unknown = await readUiBundle(missing).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UiNotBuiltError);
    const reply = errorReply(err, 'c-1');
    expect(reply.status).toBe(503);
    expect(reply.body.error.code).toBe('NOT_IMPLEMENTED');
    expect(reply.body.error.message).toContain('npm run build');
    expect(reply.body.error.details).toEqual({ reason: 'ui_not_built', dir: missing });
    // An empty folder (a build that stopped before the UI) too.
    const empty = await scratch();
    await expect(readUiBundle(empty)).rejects.toBeInstanceOf(UiNotBuiltError);
  });
});
