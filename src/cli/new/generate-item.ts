/**
 * @module `axon generate agent|tool|workflow <name>`'s action: finds the axon project around
 * the working directory (the nearest `package.json`, depending on axon, with an `axon.yaml`
 * beside it), checks the kind and the name (free in the project, not one axon serve already
 * registers), writes the item's module and test (`item-files.ts`) and names the module in
 * `axon.yaml`'s `code:` — the file's comments and order kept.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { isMap, isSeq, parseDocument, type Document } from 'yaml';
import { CliError } from '../cli-error.js';
import type { CliIo } from '../cli-io.js';
import { EXIT } from '../exit-codes.js';
import { itemFiles, ITEM_FOLDERS, ITEM_KINDS, type ItemKind } from './item-files.js';
import { exportNameOf, itemNameProblem } from './package-name.js';

/** The identifiers a generated module or test uses: an export of that name would clash. */
const TAKEN = new Set([
  ...'break case catch class const continue debugger default delete do else enum export extends false finally for function if import in instanceof new null return super switch this throw true try typeof var void while with yield let static implements interface package private protected public await arguments eval'.split(
    ' ',
  ),
  ...'z defineAgent defineTool defineWorkflow createRuntime createScriptedEngine createWorkflowEngine describe it expect afterAll engine runtime workflows'.split(
    ' ',
  ),
]);

/** Options of {@link generateItem}. */
export interface GenerateItemOptions {
  /** As given: checked against {@link ITEM_KINDS}. */
  readonly kind: string;
  readonly name: string;
  /** Where the project is looked for, upwards. */
  readonly cwd: string;
  /**
   * The names axon serve registers besides the project's, by kind (the examples'), each with
   * where it comes from; a generated item may not take one.
   */
  readonly served: Readonly<Record<ItemKind, ReadonlyMap<string, string>>>;
}

/** The nearest folder at or above `cwd` with a `package.json`, or `null`. */
function packageRoot(cwd: string): string | null {
  for (let dir = cwd; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) return null;
  }
}

/** The axon project around `cwd`: its folder, or a `CliError` saying why there is none. */
function projectRoot(cwd: string): string {
  const root = packageRoot(cwd);
  const none = (why: string): CliError =>
    new CliError(
      'USAGE',
      `not in an axon project: ${why} (axon new <name> makes one): nothing was written`,
    );
  if (root === null) throw none('no package.json here or above');
  let pkg: { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };
  try {
    pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as typeof pkg;
  } catch (err) {
    throw none(`${join(root, 'package.json')} cannot be read: ${(err as Error).message}`);
  }
  if (pkg.dependencies?.['axon'] === undefined && pkg.devDependencies?.['axon'] === undefined) {
    throw none(`${join(root, 'package.json')} does not depend on axon`);
  }
  if (!existsSync(join(root, 'axon.yaml'))) throw none(`${root} has no axon.yaml`);
  return root;
}

/** `axon.yaml` parsed to edit, or a `CliError` for a file that is not YAML. */
function readConfig(file: string): Document {
  const doc = parseDocument(readFileSync(file, 'utf8'));
  if (doc.errors.length > 0) {
    const why = doc.errors[0]?.message.split('\n')[0] ?? 'not YAML';
    throw new CliError('USAGE', `${file}: ${why}: nothing was written`);
  }
  return doc;
}

/**
 * Adds `entry` to `code.<folder>` of `doc` (made when missing). A `CliError` when the file's
 * `code:` or its list is something else, or already names `module`.
 */
function addEntry(
  doc: Document,
  folder: string,
  entry: { readonly module: string; readonly export: string },
  shown: string,
): void {
  if (doc.contents !== null && !isMap(doc.contents)) {
    throw new CliError('USAGE', `${shown} is not a map of keys: nothing was written`);
  }
  const code: unknown = doc.get('code', true);
  if (code !== undefined && code !== null && !isMap(code)) {
    throw new CliError('USAGE', `${shown}: code: is not a map: nothing was written`);
  }
  const list: unknown = doc.getIn(['code', folder], true);
  if (list !== undefined && list !== null && !isSeq(list)) {
    throw new CliError('USAGE', `${shown}: code.${folder} is not a list: nothing was written`);
  }
  const entries = isSeq(list) ? list.toJSON() : [];
  const named = entries.some(
    (e) =>
      typeof e === 'object' && e !== null && (e as { module?: unknown }).module === entry.module,
  );
  if (named) {
    throw new CliError(
      'USAGE',
      `${shown} already names ${entry.module} under code.${folder}: nothing was written`,
    );
  }
  const node = doc.createNode({ module: entry.module, export: entry.export }, { flow: true });
  if (isSeq(list)) list.add(node);
  else doc.setIn(['code', folder], doc.createNode([node]));
}

/**
 * Adds an agent, a tool or a workflow to the axon project around `cwd`: writes its module
 * (`src/<kind>s/<name>.ts`) and its test (`test/<kind>s/<name>.test.ts`), names the module's
 * build in `axon.yaml`'s `code:`, prints what it did and returns 0. Throws — having written
 * nothing — `CliError` `USAGE` (exit 2) for a kind it does not make, a name it cannot use
 * (see `itemNameProblem`; one axon serve registers already), a folder that is not in an axon
 * project, and a name the project has already (its module or test exists, or `code:` names
 * it).
 *
 * @example
 * generateItem({ kind: 'tool', name: 'order-status', cwd: process.cwd(), served }, processIo);
 */
export function generateItem(options: GenerateItemOptions, io: CliIo): number {
  const { name } = options;
  if (!(ITEM_KINDS as readonly string[]).includes(options.kind)) {
    throw new CliError(
      'USAGE',
      `unknown kind "${options.kind}": it makes an agent, a tool or a workflow (${ITEM_KINDS.join(', ')})`,
    );
  }
  const kind = options.kind as ItemKind;
  const aKind = kind === 'agent' ? 'an agent' : `a ${kind}`;
  const problem =
    itemNameProblem(name) ??
    (TAKEN.has(exportNameOf(name))
      ? `would be exported as ${exportNameOf(name)}, a name the generated code uses`
      : null);
  if (problem !== null)
    throw new CliError('USAGE', `"${name}" cannot name ${aKind}: it ${problem}`);
  const item = itemFiles(kind, name);
  const servedFrom = options.served[kind].get(item.registeredName);
  if (servedFrom !== undefined) {
    throw new CliError(
      'USAGE',
      `axon serve registers ${aKind} "${item.registeredName}" already (${servedFrom}): choose another name`,
    );
  }
  const root = projectRoot(options.cwd);
  const shownRoot = (path: string): string => relative(options.cwd, join(root, path)) || path;
  for (const path of Object.keys(item.files)) {
    if (existsSync(join(root, path))) {
      throw new CliError('USAGE', `${shownRoot(path)} exists: nothing was written`);
    }
  }
  const configFile = join(root, 'axon.yaml');
  const doc = readConfig(configFile);
  const folder = ITEM_FOLDERS[kind];
  const entry = { module: `./${item.builtPath}`, export: item.exportName };
  addEntry(doc, folder, entry, shownRoot('axon.yaml'));

  for (const [path, text] of Object.entries(item.files)) {
    const file = join(root, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text, { flag: 'wx' });
    io.stdout.write(`created ${shownRoot(path)}\n`);
  }
  writeFileSync(configFile, doc.toString());
  io.stdout.write(
    `updated ${shownRoot('axon.yaml')}: code.${folder} names ${entry.module} (export ${entry.export})\n` +
      `the ${kind} "${item.registeredName}" is served from the next npm start\n`,
  );
  return EXIT.OK;
}
