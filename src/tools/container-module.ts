/**
 * @module The module of a behaviour placed in a container: a JavaScript file on the host,
 * named by file URL (`import.meta.url`) or absolute path. Its folder is mounted read-only in
 * the container, where Node (with no TypeScript loader) imports it.
 */
import { isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';

/** `module` as an absolute path; a `TypeError` (naming `where`) for anything else. */
export function containerModulePath(where: string, module: unknown): string {
  if (typeof module !== 'string' || module.length === 0) {
    throw new TypeError(
      `${where}: a container behaviour needs "module" (a file URL or an absolute path)`,
    );
  }
  const path = module.startsWith('file:') ? fileURLToPath(module) : module;
  if (!isAbsolute(path)) {
    throw new TypeError(
      `${where}: "module" must be a file URL or an absolute path (a container mounts its folder), got ${JSON.stringify(module)}`,
    );
  }
  if (!/\.(?:mjs|cjs|js)$/.test(path)) {
    throw new TypeError(
      `${where}: "module" must be JavaScript (.js, .mjs, .cjs): Node in the container has no TypeScript loader, got ${JSON.stringify(module)}`,
    );
  }
  return path;
}
