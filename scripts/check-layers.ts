/**
 * @module Checks the layering of docs/architecture.md: each folder of src/ imports only from
 * its own layer or layers below it, never from src/index.ts; the trace UI's browser code
 * (src/ui) only from itself and the shared formatting. Exits 1 listing every violation.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** Layers from the bottom up; folders on one row are one layer. */
const LAYERS: readonly (readonly string[])[] = [
  ['context', 'observability', 'errors'],
  ['store', 'streams'],
  ['engines', 'tools', 'adapters', 'memory', 'policy'],
  ['supervisors'],
  ['actors'],
  ['placement'],
  ['runs'],
  ['steps'],
  ['durable'],
  ['runtime'],
  ['orchestrator', 'workflows'],
  ['cli', 'server', 'fleet', 'ui'],
];

/**
 * The trace UI's browser code (src/ui, bundled for the page) may import only itself and the
 * DOM-free, Node-free formatting it shares with the CLI; nothing else imports it.
 */
const BROWSER = 'ui';
const BROWSER_MAY_IMPORT: ReadonlySet<string> = new Set(['observability/human-format.ts']);

const root = resolve(import.meta.dirname, '..');
const src = join(root, 'src');
const rank = new Map<string, number>();
LAYERS.forEach((row, i) => {
  for (const folder of row) rank.set(folder, i);
});

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]/g;
const problems: string[] = [];
for (const file of files(src)) {
  const rel = relative(src, file);
  const folder = rel.includes('/') ? (rel.split('/')[0] ?? '') : '';
  const own = rank.get(folder);
  if (folder && own === undefined)
    problems.push(`${rel}: folder "${folder}" is not a layer of docs/architecture.md`);
  const text = readFileSync(file, 'utf8');
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[1] ?? '';
    const target = relative(src, resolve(dirname(file), spec));
    if (target.startsWith('..')) {
      // Only the CLI may reach outside src/, for the examples it runs.
      if (folder !== 'cli' || !target.startsWith('../examples/'))
        problems.push(`${rel}: imports ${spec} outside src/`);
      continue;
    }
    if (target === 'index.js' || target === 'index.ts') {
      problems.push(`${rel}: imports src/index.ts (import the concrete file)`);
      continue;
    }
    const targetFolder = target.split('/')[0] ?? '';
    if (folder === BROWSER && targetFolder !== BROWSER) {
      if (!BROWSER_MAY_IMPORT.has(target.replace(/\.js$/, '.ts')))
        problems.push(
          `${rel}: the browser code imports ${spec} (only src/ui and ${[...BROWSER_MAY_IMPORT].join(', ')})`,
        );
      continue;
    }
    if (targetFolder === BROWSER && folder !== BROWSER) {
      problems.push(`${rel}: imports the browser code ${spec} (src/ui is bundled for the page)`);
      continue;
    }
    const theirs = rank.get(targetFolder);
    if (own !== undefined && theirs !== undefined && theirs > own) {
      problems.push(
        `${rel}: ${folder}/ (layer ${own}) imports ${targetFolder}/ (layer ${theirs}) above it`,
      );
    }
  }
}
if (problems.length > 0) {
  process.stderr.write(`layering violations:\n${problems.map((p) => `  ${p}`).join('\n')}\n`);
  process.exit(1);
}
process.stdout.write(`layers ok (${files(src).length} files)\n`);
