/**
 * @module The container's program as one file: `container-entry.ts` and everything it
 * imports, bundled by esbuild, so any image with `node` runs it with nothing installed. A
 * build (`npm run build`) writes it to `dist/container-entry.mjs`; run from the TypeScript
 * sources (tests, development) it is bundled on first use into `node_modules/.cache/axon/`.
 */
import { mkdir, rename, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { PoolUnavailableError } from '../../errors/pool-unavailable-error.js';
import { FROM_SOURCES } from '../worker/worker-pool-options.js';

/** Bundles `container-entry.ts` into `outfile` (esbuild, a development dependency). */
export async function bundleContainerEntry(outfile: string): Promise<void> {
  const esbuild = await import('esbuild');
  const entry = fileURLToPath(new URL('./container-entry.ts', import.meta.url));
  const part = `${outfile}.${process.pid}.part`;
  await esbuild.build({
    entryPoints: [entry],
    outfile: part,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Parsed at every container start: smaller is sooner. Names kept (errors carry them).
    minify: true,
    keepNames: true,
    // The libraries that need `require` (pino, …) get one in an ES module.
    banner: {
      js: "import { createRequire as __axonRequire } from 'node:module'; const require = __axonRequire(import.meta.url);",
    },
    logLevel: 'error',
  });
  // Atomic: test files bundling at once never see half a file.
  await rename(part, outfile);
}

let built: Promise<string> | null = null;

/** The path of the container's program on this host, bundling it first from sources. */
export function containerEntryFile(): Promise<string> {
  built ??= (async () => {
    if (FROM_SOURCES) {
      const dir = fileURLToPath(new URL('../../../node_modules/.cache/axon/', import.meta.url));
      await mkdir(dir, { recursive: true });
      const file = `${dir}container-entry.mjs`;
      await bundleContainerEntry(file);
      return file;
    }
    const file = fileURLToPath(new URL('../../../container-entry.mjs', import.meta.url));
    try {
      await stat(file);
    } catch {
      throw new PoolUnavailableError(
        `the container program ${file} is missing: run \`npm run build\` (it bundles it)`,
      );
    }
    return file;
  })();
  built.catch(() => {
    built = null;
  });
  return built;
}
