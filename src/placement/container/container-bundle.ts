/**
 * @module The container's program as two files: its init (`container-entry.ts`, a few
 * hundred bytes, the container's command) and the step runner it starts
 * (`container-runner.ts` and everything it imports), bundled by esbuild, so any image with
 * `node` runs them with nothing installed. A build (`npm run build`) writes them to `dist/`;
 * run from the TypeScript sources (tests, development) they are bundled on first use into
 * `node_modules/.cache/axon/`.
 */
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Plugin } from 'esbuild';
import { PoolUnavailableError } from '../../errors/pool-unavailable-error.js';
import { FROM_SOURCES } from '../worker/worker-pool-options.js';

/** The container's program on this host. */
export interface ContainerProgram {
  /** The init, the container's command: mounted at `CONTAINER_ENTRY_PATH`. */
  readonly entry: string;
  /** The step runner, beside it: mounted at `CONTAINER_RUNNER_PATH`. */
  readonly runner: string;
}

/** The files' names, in `dist/` and in the container alike. */
const NAMES = { entry: 'container-entry.mjs', runner: 'container-runner.mjs' } as const;

/**
 * zod's error messages in every language it has, of which the runner uses English only:
 * half the bundle (300 KB), parsed at every container start. The others are left out.
 */
const englishOnly: Plugin = {
  name: 'zod-english-only',
  setup(build) {
    build.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, (args) => ({
      contents: 'export { default as en } from "./en.js";',
      resolveDir: dirname(args.path),
    }));
  },
};

/** Bundles the init and the runner into `dir` (esbuild, a development dependency). */
export async function bundleContainerProgram(dir: string): Promise<ContainerProgram> {
  const esbuild = await import('esbuild');
  const part = join(dir, `.part-${process.pid}`);
  await esbuild.build({
    entryPoints: {
      'container-entry': fileURLToPath(new URL('./container-entry.ts', import.meta.url)),
      'container-runner': fileURLToPath(new URL('./container-runner.ts', import.meta.url)),
    },
    outdir: part,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Parsed at every container start: smaller is sooner. Names kept (errors carry them).
    minify: true,
    keepNames: true,
    plugins: [englishOnly],
    // The libraries that need `require` (pino, …) get one in an ES module.
    banner: {
      js: "import { createRequire as __axonRequire } from 'node:module'; const require = __axonRequire(import.meta.url);",
    },
    logLevel: 'error',
  });
  // Each file atomic: test files bundling at once never see half of one. The runner first,
  // so an init in place always finds one.
  const program = { entry: join(dir, NAMES.entry), runner: join(dir, NAMES.runner) };
  await rename(join(part, NAMES.runner), program.runner);
  await rename(join(part, NAMES.entry), program.entry);
  await rm(part, { recursive: true, force: true });
  return program;
}

let built: Promise<ContainerProgram> | null = null;

/** The container's program on this host, bundled first from sources. */
export function containerProgram(): Promise<ContainerProgram> {
  built ??= (async () => {
    if (FROM_SOURCES) {
      const dir = fileURLToPath(new URL('../../../node_modules/.cache/axon/', import.meta.url));
      await mkdir(dir, { recursive: true });
      return bundleContainerProgram(dir);
    }
    const dir = fileURLToPath(new URL('../../../', import.meta.url));
    const program = { entry: join(dir, NAMES.entry), runner: join(dir, NAMES.runner) };
    for (const file of [program.entry, program.runner]) {
      try {
        await stat(file);
      } catch {
        throw new PoolUnavailableError(
          `the container program ${file} is missing: run \`npm run build\` (it bundles it)`,
        );
      }
    }
    return program;
  })();
  built.catch(() => {
    built = null;
  });
  return built;
}
