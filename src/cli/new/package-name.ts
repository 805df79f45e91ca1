/**
 * @module The names `axon new` and `axon generate` take: a project's, by npm's rules for a
 * new package's name, and an agent's, tool's or workflow's, which also names its files and
 * its export.
 */
import { builtinModules } from 'node:module';

/** npm's longest package name. */
const MAX_PACKAGE_NAME = 214;

/** The names npm refuses besides the rules below. */
const RESERVED = new Set(['node_modules', 'favicon.ico']);

/**
 * Why `name` cannot be a new npm package's name, or `null` when it can: 1 to 214 characters,
 * lower case, URL-safe (a scope `@scope/` allowed), not starting with `.` or `_`, none of
 * `~'!()*`, not a Node.js built-in module, not `node_modules` or `favicon.ico`. `axon` itself
 * is refused too: the project depends on it.
 */
export function packageNameProblem(name: string): string | null {
  if (name.length === 0) return 'is empty';
  if (name.length > MAX_PACKAGE_NAME) return `is longer than ${MAX_PACKAGE_NAME} characters`;
  if (name.trim() !== name) return 'has spaces around it';
  if (name !== name.toLowerCase()) return 'has capital letters (npm names are lower case)';
  if (/[~'!()*]/.test(name)) return "has one of ~'!()* (npm refuses them in new names)";
  const scoped = /^@([^/]+)\/([^/]+)$/.exec(name);
  const parts = scoped ? [scoped[1] ?? '', scoped[2] ?? ''] : [name];
  if (!scoped && name.includes('/')) return 'has a "/" without a scope (@scope/name)';
  const base = parts.at(-1) ?? '';
  if (base.startsWith('.') || base.startsWith('_')) return 'starts with "." or "_"';
  if (parts.some((p) => encodeURIComponent(p) !== p)) {
    return 'has characters that are not URL-safe (letters, digits, "-", "." and "_" are)';
  }
  if (RESERVED.has(name)) return 'is a name npm reserves';
  if (builtinModules.includes(name)) return 'is the name of a Node.js built-in module';
  if (name === 'axon') return 'is the name of the package the project depends on';
  return null;
}

/** The folder `axon new <name>` makes: the name, without its scope. */
export function folderOf(packageName: string): string {
  return packageName.replace(/^@[^/]+\//, '');
}

/** An agent's, tool's or workflow's name as `axon generate` takes it. */
export const ITEM_NAME = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;

/** The longest such name (a workflow's name is at most 64 characters). */
const MAX_ITEM_NAME = 64;

/**
 * Why `name` cannot name a generated agent, tool or workflow, or `null`: lower-case words of
 * letters and digits joined by single dashes (`order-status`), a letter first, at most 64
 * characters — one name for its file, its export (`orderStatus`) and its registered name.
 */
export function itemNameProblem(name: string): string | null {
  if (name.length > MAX_ITEM_NAME) return `is longer than ${MAX_ITEM_NAME} characters`;
  if (!ITEM_NAME.test(name)) {
    return 'must be lower-case words of letters and digits joined by "-", a letter first (order-status)';
  }
  return null;
}

/** `order-status` → `orderStatus`: the export holding the definition. */
export function exportNameOf(name: string): string {
  return name.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** `order-status` → `order_status`: a tool's registered name, as models read them. */
export function toolNameOf(name: string): string {
  return name.replaceAll('-', '_');
}
