/**
 * @module The trace UI's static assets: `src/ui/app.ts` and everything it imports (its
 * stylesheet included) bundled by esbuild into `app-<hash>.js` and `app-<hash>.css` — names
 * that carry their content's hash, so they are cached for good — with their source maps, the
 * icon, and the page (`index.html`, `src/ui/page.html` naming them). `npm run build` writes
 * them to `dist/ui/` ({@link writeUiBundle}); run from the TypeScript sources (tests,
 * development) they are bundled in memory on first use. `trace-ui.ts` serves them.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { UiNotBuiltError } from './ui-not-built-error.js';

/** The page's file among the assets. */
export const PAGE_FILE = 'index.html';

/** One asset, ready to serve. */
export interface UiAsset {
  readonly type: string;
  readonly body: Buffer;
  /** A strong ETag of its body (`"<sha256 prefix>"`). */
  readonly etag: string;
  /** Whether its name carries its content's hash (cached for good). */
  readonly immutable: boolean;
}

/** The assets by file name; the page is {@link PAGE_FILE}. */
export type UiAssets = ReadonlyMap<string, UiAsset>;

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
};
const HASHED = /^app-[A-Z0-9]{8,}\.(?:js|css)(?:\.map)?$/;

// Run from sources this file is src/server/ui/ui-bundle.ts; built, dist/src/server/ui/ui-bundle.js.
const FROM_SOURCES = import.meta.url.endsWith('.ts');
const SOURCES = new URL('../../ui/', import.meta.url);

function asset(name: string, body: Buffer): UiAsset {
  return {
    type: TYPES[extname(name)] ?? 'application/octet-stream',
    body,
    etag: `"${createHash('sha256').update(body).digest('hex').slice(0, 32)}"`,
    immutable: HASHED.test(name),
  };
}

/** Bundles `src/ui` (esbuild, a development dependency): each file's name and contents. */
export async function bundleUi(): Promise<Map<string, Buffer>> {
  const esbuild = await import('esbuild');
  const dir = fileURLToPath(SOURCES);
  const result = await esbuild.build({
    entryPoints: [join(dir, 'app.ts')],
    outdir: join(dir, 'out'), // names only: nothing is written
    write: false,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome110', 'firefox115', 'safari16'],
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    minify: true,
    sourcemap: 'linked',
    legalComments: 'none',
    logLevel: 'silent',
  });
  const files = new Map<string, Buffer>();
  for (const out of result.outputFiles) files.set(basename(out.path), Buffer.from(out.contents));
  const named = (ext: string): string => {
    const name = [...files.keys()].find((n) => n.startsWith('app-') && n.endsWith(ext));
    if (name === undefined) throw new Error(`the UI bundle has no app-*${ext}`);
    return name;
  };
  const page = (await readFile(join(dir, 'page.html'), 'utf8'))
    .replaceAll('{{app.js}}', named('.js'))
    .replaceAll('{{app.css}}', named('.css'));
  files.set(PAGE_FILE, Buffer.from(page));
  files.set('icon.svg', await readFile(join(dir, 'icon.svg')));
  return files;
}

/** Bundles the UI into `dir` (emptied first), the page written last. `npm run build` calls it. */
export async function writeUiBundle(dir: string): Promise<void> {
  const files = await bundleUi();
  const part = `${dir}.${process.pid}.part`;
  await rm(part, { recursive: true, force: true });
  await mkdir(part, { recursive: true });
  for (const [name, body] of files) await writeFile(join(part, name), body);
  // Atomic: a server reading the folder never sees half a bundle.
  await rm(dir, { recursive: true, force: true });
  await rename(part, dir);
}

/** Where a build puts the UI: `dist/ui/` (this file is `dist/src/server/ui/ui-bundle.js`). */
export const BUILT_UI_DIR = fileURLToPath(new URL('../../../ui/', import.meta.url));

/** Reads a built UI from `dir`; rejects with {@link UiNotBuiltError} when it is not there. */
export async function readUiBundle(dir: string): Promise<UiAssets> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    throw new UiNotBuiltError(dir, { cause: err });
  }
  if (!names.includes(PAGE_FILE)) throw new UiNotBuiltError(dir);
  const assets = new Map<string, UiAsset>();
  for (const name of names) assets.set(name, asset(name, await readFile(join(dir, name))));
  return assets;
}

/** Assets of bundled files, by name. */
export function assetsOf(files: ReadonlyMap<string, Buffer>): UiAssets {
  return new Map([...files].map(([name, body]) => [name, asset(name, body)]));
}

let loaded: Promise<UiAssets> | null = null;

/**
 * The UI's assets for this process: from sources, bundled now (once); built, read from
 * `dist/ui/`. Rejects with {@link UiNotBuiltError} when a build left them out (asked again,
 * it looks again).
 */
export function uiAssets(): Promise<UiAssets> {
  loaded ??= FROM_SOURCES ? bundleUi().then(assetsOf) : readUiBundle(BUILT_UI_DIR);
  loaded.catch(() => {
    loaded = null;
  });
  return loaded;
}
