/**
 * @module The server's sandbox: the folders runs' file operations may use, owned by the
 * operator (`createRuntime({ fs: { roots } })`, `axon.yaml`'s `fs.roots`), by default
 * `<dataDir>/sandbox/` alone. A run's `fs_policy.roots` only narrow inside it: each is checked
 * at the run's creation (as written and as it is on disk, symbolic links followed) and again
 * by the FS broker at each operation. No sandbox root may hold the data dir or another
 * guarded path (the config file, say): that is refused when the sandbox is made.
 */
import { realpathSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { InvalidParamsError } from '../errors/invalid-params-error.js';

/** Options of {@link createSandbox}. */
export interface SandboxOptions {
  /**
   * The folders runs may use; relative ones resolve against `base`. Default
   * `[<dataDir>/sandbox]`. The first is where a run's relative roots resolve.
   */
  readonly roots?: readonly string[];
  /** The runtime's data folder: never inside a root. Default `./.axon`. */
  readonly dataDir?: string;
  /** More paths no root may hold (the config file, a memory file); default none. */
  readonly guarded?: readonly string[];
  /** What relative `roots` resolve against; default the working directory. */
  readonly base?: string;
}

/** The sandbox of a runtime; see the module. */
export interface Sandbox {
  /** The absolute roots, as configured. */
  readonly roots: readonly string[];
  /**
   * A run's `fs_policy.roots` resolved (relative ones under the first root) and checked:
   * each must lie inside a root of the sandbox as written and on disk. Rejects with
   * `InvalidParamsError` (422: well formed, but not the caller's to ask) naming the first
   * that does not, as `fs_policy.roots[i]`.
   */
  runRoots(roots: readonly string[]): Promise<readonly string[]>;
  /**
   * `root`'s real path (absolute) when it lies inside the sandbox as written and as it is on
   * disk now, else `null`; the broker asks before each operation, so a link swapped in later
   * does not lead out.
   */
  holds(root: string): Promise<string | null>;
}

/** True when `path` is `root` or inside it. */
export function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  // `..notes.md` is a name inside; only `..` itself or `../…` leaves.
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/**
 * The real path of `path` (absolute): symbolic links resolved in the part that exists, the
 * rest (not made yet) kept as written.
 */
export async function realPathOf(path: string): Promise<string> {
  let probe = path;
  const rest: string[] = [];
  for (;;) {
    try {
      return join(await realpath(probe), ...rest);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(probe) === probe) throw err;
      rest.unshift(basename(probe));
      probe = dirname(probe);
    }
  }
}

/** {@link realPathOf}, synchronously: for checks made once, when a runtime is made. */
function realPathOfSync(path: string): string {
  let probe = path;
  const rest: string[] = [];
  for (;;) {
    try {
      return join(realpathSync(probe), ...rest);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(probe) === probe) throw err;
      rest.unshift(basename(probe));
      probe = dirname(probe);
    }
  }
}

/**
 * The sandbox of `options`. Throws `RangeError` naming the root when a root holds the data
 * dir or a guarded path (as written or on disk), or is not a non-empty string.
 *
 * @example
 * const sandbox = createSandbox({ dataDir: '/var/lib/axon', roots: ['/srv/axon-files'] });
 * await sandbox.runRoots(['./team-a']); // ['/srv/axon-files/team-a']
 */
export function createSandbox(options: SandboxOptions = {}): Sandbox {
  const base = options.base ?? process.cwd();
  const dataDir = resolve(base, options.dataDir ?? './.axon');
  const given = options.roots ?? [join(dataDir, 'sandbox')];
  if (!Array.isArray(given) || given.length === 0) {
    throw new RangeError('fs.roots must name at least one folder');
  }
  const roots = given.map((r, i) => {
    if (typeof r !== 'string' || r.length === 0 || r.includes('\0')) {
      throw new RangeError(`fs.roots[${i}] must be a non-empty path`);
    }
    return resolve(base, r);
  });
  const guarded = [dataDir, ...(options.guarded ?? []).map((p) => resolve(base, p))];
  // The roots' real paths, once: they are the operator's, and do not move under a run.
  const realRoots = roots.map((root, i) => {
    const real = realPathOfSync(root);
    for (const g of guarded) {
      if (isInside(root, g) || isInside(real, realPathOfSync(g))) {
        const what = g === dataDir ? `the data dir (${dataDir})` : g;
        throw new RangeError(
          `fs.roots[${i}] (${root}) holds ${what}: a run could read or change it; name a folder that does not hold it`,
        );
      }
    }
    return real;
  });

  async function holds(root: string): Promise<string | null> {
    if (!roots.some((r) => isInside(r, root))) return null;
    const real = await realPathOf(root);
    return realRoots.some((r) => isInside(r, real)) ? real : null;
  }

  return {
    roots,
    holds,
    async runRoots(asked) {
      const first = roots[0] as string;
      const out: string[] = [];
      for (const [i, root] of asked.entries()) {
        const abs = isAbsolute(root) ? resolve(root) : resolve(first, root);
        if ((await holds(abs)) === null) {
          const linked = roots.some((r) => isInside(r, abs));
          throw new InvalidParamsError(
            linked
              ? `fs_policy.roots[${i}] "${root}" leads outside the server's sandbox through a symbolic link`
              : `fs_policy.roots[${i}] "${root}" is outside the server's sandbox: a run's roots can only narrow inside it`,
            { param: `fs_policy.roots[${i}]`, unprocessable: true, details: { root } },
          );
        }
        out.push(abs);
      }
      return out;
    },
  };
}
