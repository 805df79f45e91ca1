import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { currentCommit } from '../../bench/environment.js';

let repo: string;
const git = (...args: string[]): string =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
    cwd: repo,
    encoding: 'utf8',
  }).trim();

beforeEach(() => {
  repo = mkdtempSync(join(tmpdir(), 'axon-bench-commit-'));
  git('init', '--quiet');
  writeFileSync(join(repo, 'a.ts'), 'export const a = 1;\n');
  git('add', 'a.ts');
  git('commit', '--quiet', '-m', 'first');
});
afterEach(() => {
  rmSync(repo, { recursive: true, force: true });
});

describe('the commit a bench records', () => {
  it('is the short HEAD on a clean tree', () => {
    expect(currentCommit(repo)).toBe(git('rev-parse', '--short', 'HEAD'));
  });

  it('ends in -dirty when a tracked file changed or a new file appeared', () => {
    const head = git('rev-parse', '--short', 'HEAD');
    writeFileSync(join(repo, 'a.ts'), 'export const a = 2;\n');
    expect(currentCommit(repo)).toBe(`${head}-dirty`);
    git('checkout', '--quiet', 'a.ts');
    writeFileSync(join(repo, 'b.ts'), 'export const b = 1;\n');
    expect(currentCommit(repo)).toBe(`${head}-dirty`);
  });

  it('is not dirtied by the results the benches write, even from a subfolder', () => {
    mkdirSync(join(repo, 'bench', 'results'), { recursive: true });
    writeFileSync(join(repo, 'bench', 'results', 'inline.json'), '{}\n');
    writeFileSync(join(repo, 'bench', 'results', 'summary.md'), '# Benchmark summary\n');
    expect(currentCommit(repo)).toBe(git('rev-parse', '--short', 'HEAD'));
    expect(currentCommit(join(repo, 'bench'))).toBe(git('rev-parse', '--short', 'HEAD'));
  });

  it('is unknown outside a repository', () => {
    const outside = mkdtempSync(join(tmpdir(), 'axon-bench-nogit-'));
    try {
      expect(currentCommit(outside)).toBe('unknown');
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});
