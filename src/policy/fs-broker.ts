/**
 * @module The FS broker (POLICY-3001, API.md): every file operation of a run goes through it,
 * bound to the run's `fs_policy` — sandbox roots, allow-list globs, a byte quota — inside
 * the server's own sandbox (`sandbox.ts`): a run's root that is not inside it, as written or
 * on disk, is refused before anything is touched. A path is checked twice: as written (it
 * must resolve inside a root), and as it is on disk when it is used (`realpath`, so a
 * symlink pointing out of the roots is refused), and the final component is opened with
 * `O_NOFOLLOW`, so a link swapped in after the check is refused too.
 */
import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, realpath, rm, type FileHandle } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import picomatch from 'picomatch';
import { z } from 'zod';
import { NotFoundError } from '../errors/not-found-error.js';
import { PolicyDeniedError } from '../errors/policy-denied-error.js';
import { createSandbox, isInside as inside, type Sandbox } from './sandbox.js';

/** A run's `fs_policy` (API.md). */
export interface FsPolicy {
  /**
   * Sandbox roots, each inside the server's sandbox; relative ones resolve under its first
   * root (`<dataDir>/sandbox/` by default).
   */
  readonly roots: readonly string[];
  /** Globs (relative to a root) a path must match; all paths when absent. */
  readonly allow?: readonly string[];
  /** Bytes a run may write in all; no limit when absent. */
  readonly quota_bytes?: number;
}

/** API.md's `fs_op` input. */
export const fsOpInputSchema = z
  .object({
    op: z.enum(['read', 'write', 'list', 'stat', 'delete']),
    path: z.string().min(1),
    content: z.string().optional(),
  })
  .strict();
export type FsOpInput = z.input<typeof fsOpInputSchema>;

/** The operations of an `fs_op` step. */

export type FsOp = 'read' | 'write' | 'list' | 'stat' | 'delete';

/** One entry of a `list`. */
export interface FsEntry {
  readonly name: string;
  readonly type: 'file' | 'directory' | 'symlink' | 'other';
  readonly size: number;
}

/** The outputs of API.md, by operation. */
export type FsResult =
  | { readonly content: string }
  | { readonly bytes: number }
  | { readonly entries: readonly FsEntry[] }
  | { readonly type: FsEntry['type']; readonly size: number; readonly mtime: string }
  | { readonly deleted: true };

/** Options of {@link createFsBroker}. */
export interface FsBrokerOptions {
  /**
   * The server's sandbox, which every root must lie inside; default the sandbox of
   * `dataDir` (`<dataDir>/sandbox/` alone).
   */
  readonly sandbox?: Sandbox;
  /** The data dir of the default sandbox; default `./.axon`. */
  readonly dataDir?: string;
  /** Bytes the run has written already (its quota counts them); default 0. */
  readonly written?: number;
}

/** A broker bound to one run's policy; see {@link createFsBroker}. */
export interface FsBroker {
  /** The absolute roots, as resolved. */
  readonly roots: readonly string[];
  /** Bytes written through this broker (and before it, as given). */
  readonly written: number;
  run(op: FsOp, path: string, content?: string): Promise<FsResult>;
}

function typeOf(s: {
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
}): FsEntry['type'] {
  return s.isFile()
    ? 'file'
    : s.isDirectory()
      ? 'directory'
      : s.isSymbolicLink()
        ? 'symlink'
        : 'other';
}

function isMissing(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === 'ENOENT';
}

/**
 * A broker for one run's `fs_policy`. Refusals are `PolicyDeniedError` (`POLICY_DENIED`)
 * with `details.rule` — `fs.sandbox` (the run's root is not inside the server's sandbox),
 * `fs.roots` (outside every root: `..`, an absolute path elsewhere),
 * `fs.symlink` (inside as written, outside on disk), `fs.allow` (no glob matches) — and for
 * a write past the quota `details.reason: 'quota'`. A path that does not exist is
 * `NotFoundError`.
 *
 * @example
 * const fs = createFsBroker({ roots: ['notes'], allow: ['**\/*.md'], quota_bytes: 1 << 20 });
 * await fs.run('write', 'today.md', '# Today');
 */
export function createFsBroker(policy: FsPolicy, options: FsBrokerOptions = {}): FsBroker {
  if (policy.roots.length === 0) throw new TypeError('fs_policy.roots must name at least one root');
  const sandbox = options.sandbox ?? createSandbox({ dataDir: options.dataDir ?? './.axon' });
  const base = sandbox.roots[0] as string;
  const roots = policy.roots.map((r) => (isAbsolute(r) ? resolve(r) : resolve(base, r)));
  const allowed =
    policy.allow && policy.allow.length > 0 ? picomatch([...policy.allow], { dot: true }) : null;
  let written = options.written ?? 0;

  const refuse = (
    path: string,
    rule: string,
    reason: string,
    details: Record<string, unknown> = {},
  ): PolicyDeniedError => new PolicyDeniedError('fs_op', path, rule, reason, { details });

  /** The checked absolute path of `path`, with its root. */
  async function locate(path: string, op: FsOp): Promise<{ abs: string; root: string }> {
    if (path.length === 0 || path.includes('\0')) {
      throw refuse(path, 'fs.path', 'the path must be a non-empty string without NUL');
    }
    const first = roots[0] as string;
    const abs = isAbsolute(path) ? resolve(path) : resolve(first, path);
    const root = roots.find((r) => inside(r, abs));
    if (!root) throw refuse(path, 'fs.roots', 'the path resolves outside every sandbox root');
    // A directory is listed wherever it is inside a root; its entries are filtered instead.
    const globbed = allowed && op !== 'list' ? allowed : null;
    if (globbed && abs !== root && !globbed(relative(root, abs).split(sep).join('/'))) {
      throw refuse(path, 'fs.allow', 'the path matches no allowed glob');
    }
    // The run's root must be the server's to give, as written and on disk, before it is
    // made: a root outside (an old run's, a link swapped in) touches nothing.
    const outside = (): PolicyDeniedError =>
      refuse(path, 'fs.sandbox', "the run's root is outside the server's sandbox");
    const held = await sandbox.holds(root);
    if (held === null) throw outside();
    await mkdir(root, { recursive: true });
    const realRoot = await realpath(root);
    // Again if it is not where it was found: a link put in its place must not lead out.
    if (realRoot !== held && (await sandbox.holds(root)) === null) throw outside();
    // As it is on disk: the deepest part that exists, links resolved, must still be inside.
    let probe = op === 'write' ? dirname(abs) : abs;
    for (;;) {
      try {
        const real = await realpath(probe);
        if (!inside(realRoot, real)) {
          throw refuse(
            path,
            'fs.symlink',
            'the path leads outside the sandbox through a symbolic link',
          );
        }
        // The allow-list holds for the file as it is on disk too, not only as written (a
        // linked directory inside the root must not open files no glob allows).
        const onDisk = join(real, relative(probe, abs));
        if (globbed && onDisk !== realRoot) {
          const rel = relative(realRoot, onDisk).split(sep).join('/');
          if (!globbed(rel)) {
            throw refuse(
              path,
              'fs.allow',
              `on disk the path is ${rel}, which no allowed glob matches`,
            );
          }
        }
        break;
      } catch (err) {
        if (!isMissing(err)) throw err;
        if (probe === root || dirname(probe) === probe) break;
        probe = dirname(probe);
      }
    }
    return { abs, root };
  }

  /** Opens the file itself without following a link there (one swapped in after the check). */
  async function openFile(abs: string, path: string, flags: number): Promise<FileHandle> {
    try {
      return await open(abs, flags | constants.O_NOFOLLOW, 0o644);
    } catch (err) {
      const code = (err as { code?: string } | null)?.code;
      if (code === 'ELOOP') throw refuse(path, 'fs.symlink', 'the file is a symbolic link');
      if (code === 'ENOENT') throw new NotFoundError('file', path);
      throw err;
    }
  }

  return {
    roots,
    get written() {
      return written;
    },
    async run(op, path, content) {
      const { abs, root } = await locate(path, op);
      switch (op) {
        case 'read': {
          const file = await openFile(abs, path, constants.O_RDONLY);
          try {
            return { content: await file.readFile('utf8') };
          } finally {
            await file.close();
          }
        }
        case 'write': {
          if (typeof content !== 'string') {
            throw refuse(path, 'fs.content', 'a write needs content (a string)');
          }
          const bytes = Buffer.byteLength(content, 'utf8');
          const quota = policy.quota_bytes;
          if (quota !== undefined && written + bytes > quota) {
            throw refuse(
              path,
              'fs.quota',
              `the write of ${bytes} bytes would pass the run's quota of ${quota} bytes (${written} written)`,
              {
                reason: 'quota',
                quota_bytes: quota,
                written_bytes: written,
                bytes,
              },
            );
          }
          // Counted before the first await, so concurrent writes cannot pass the quota together.
          written += bytes;
          try {
            await mkdir(dirname(abs), { recursive: true });
            const file = await openFile(
              abs,
              path,
              constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC,
            );
            try {
              await file.writeFile(content, 'utf8');
            } finally {
              await file.close();
            }
          } catch (err) {
            written -= bytes;
            throw err;
          }
          return { bytes };
        }
        case 'list': {
          let names: string[];
          try {
            names = await readdir(abs);
          } catch (err) {
            if (isMissing(err)) throw new NotFoundError('directory', path);
            throw err;
          }
          const entries: FsEntry[] = [];
          for (const name of names.sort()) {
            const s = await lstat(join(abs, name));
            // With an allow-list: its files, and the directories that may hold them.
            const rel = relative(root, join(abs, name)).split(sep).join('/');
            if (allowed && !s.isDirectory() && !allowed(rel)) continue;
            entries.push({ name, type: typeOf(s), size: s.size });
          }
          return { entries };
        }
        case 'stat': {
          try {
            const s = await lstat(abs);
            return { type: typeOf(s), size: s.size, mtime: s.mtime.toISOString() };
          } catch (err) {
            if (isMissing(err)) throw new NotFoundError('file', path);
            throw err;
          }
        }
        case 'delete': {
          if (roots.includes(abs))
            throw refuse(path, 'fs.roots', 'a sandbox root cannot be deleted');
          try {
            const s = await lstat(abs);
            if (s.isDirectory()) await rm(abs, { recursive: true });
            else await rm(abs);
          } catch (err) {
            if (isMissing(err)) throw new NotFoundError('file', path);
            throw err;
          }
          return { deleted: true };
        }
      }
    },
  };
}
