/**
 * @module `axon new <name>`'s action: checks the name (npm's rules) and the folder (missing or
 * empty), then writes the project of `project-files.ts` into it, pinned to the axon that
 * runs and to the versions of its own `package.json`.
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { CliError } from '../cli-error.js';
import type { CliIo } from '../cli-io.js';
import { EXIT } from '../exit-codes.js';
import { folderOf, packageNameProblem } from './package-name.js';
import { projectFiles, type ProjectPins } from './project-files.js';

/** The fields of axon's own `package.json` the pins come from. */
interface AxonPackage {
  readonly name?: string;
  readonly version?: string;
  readonly engines?: Readonly<Record<string, string>>;
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly devDependencies?: Readonly<Record<string, string>>;
  readonly allowScripts?: Readonly<Record<string, boolean>>;
}

/** axon's `package.json`: the first one named `axon` above this module (in `src/` or `dist/src/`). */
function axonPackage(): AxonPackage {
  for (const rel of ['../../../package.json', '../../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as AxonPackage;
      if (pkg.name === 'axon') return pkg;
    } catch {
      // try the next candidate
    }
  }
  throw new Error("axon new: cannot find axon's own package.json");
}

/**
 * The versions a new project pins: axon at `^<its version>`, and zod, TypeScript, vitest and
 * @types/node as axon's `package.json` has them (vitest exactly, as axon pins it); and the
 * install scripts axon's `allowScripts` lets npm run.
 */
export function projectPins(): ProjectPins {
  const pkg = axonPackage();
  const pin = (deps: Readonly<Record<string, string>> | undefined, name: string): string => {
    const range = deps?.[name];
    if (range === undefined) throw new Error(`axon new: axon's package.json has no ${name}`);
    return range;
  };
  return {
    axon: `^${pkg.version ?? '0.0.0'}`,
    zod: pin(pkg.dependencies, 'zod'),
    typescript: pin(pkg.devDependencies, 'typescript'),
    vitest: pin(pkg.devDependencies, 'vitest'),
    typesNode: pin(pkg.devDependencies, '@types/node'),
    node: pin(pkg.engines, 'node'),
    allowScripts: pkg.allowScripts ?? {},
  };
}

/** Options of {@link newProject}. */
export interface NewProjectOptions {
  /** The package name: also the folder, without its scope. */
  readonly name: string;
  /** Where the folder is made. */
  readonly cwd: string;
  /** Default {@link projectPins}. */
  readonly pins?: ProjectPins;
}

/** Whether `dir` is missing or an empty folder; a `CliError` when it is anything else. */
function checkFolder(dir: string, shown: string): void {
  let isDir: boolean;
  try {
    isDir = statSync(dir).isDirectory();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (!isDir)
    throw new CliError('USAGE', `${shown} exists and is not a folder: nothing was written`);
  if (readdirSync(dir).length > 0) {
    throw new CliError('USAGE', `${shown} exists and is not empty: nothing was written`);
  }
}

/**
 * Writes a new project into `<cwd>/<name without scope>`, prints what it wrote and the next
 * commands, and returns 0. Throws — having written nothing — `CliError` `USAGE` (exit 2) for
 * a name npm would not take, and for a folder that exists and is not empty.
 *
 * @example
 * process.exitCode = newProject({ name: 'my-service', cwd: process.cwd() }, processIo);
 */
export function newProject(options: NewProjectOptions, io: CliIo): number {
  const problem = packageNameProblem(options.name);
  if (problem !== null) {
    throw new CliError('USAGE', `"${options.name}" cannot be a package's name: it ${problem}`);
  }
  const dir = resolve(options.cwd, folderOf(options.name));
  const shown = relative(options.cwd, dir) || '.';
  checkFolder(dir, shown);
  const files = projectFiles(options.name, options.pins ?? projectPins());
  for (const [path, text] of Object.entries(files)) {
    const file = join(dir, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text, { flag: 'wx' });
  }
  const listed = Object.keys(files).map((p) => `  ${p}\n`);
  io.stdout.write(
    `created ${shown}/\n${listed.join('')}next:\n  cd ${shown}\n` +
      '  npm install && npm start   # serves on http://127.0.0.1:7070\n  npm test\n',
  );
  return EXIT.OK;
}
