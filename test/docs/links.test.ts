import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');

/** Every markdown file of the repository's docs: README.md and docs/**. */
function markdown(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return markdown(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

describe('docs: every relative link resolves inside the repository', () => {
  const files = [join(root, 'README.md'), ...markdown(join(root, 'docs'))];

  it.each(files.map((f) => [relative(root, f), f]))('%s', (_name, file) => {
    const text = readFileSync(file, 'utf8');
    const broken: string[] = [];
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = (m[1] ?? '').split('#')[0] ?? '';
      if (target === '' || /^[a-z]+:/i.test(target)) continue;
      const path = resolve(dirname(file), target);
      if (!existsSync(path) || !path.startsWith(root)) broken.push(m[1] ?? '');
    }
    expect(broken).toEqual([]);
  });
});
