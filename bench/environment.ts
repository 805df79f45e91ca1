/**
 * @module Where a benchmark ran: the commit (with `-dirty` for uncommitted changes), Node,
 * the CPU and the time. Written into each result and at the top of the summary.
 */
import { execFileSync } from 'node:child_process';
import { availableParallelism, cpus } from 'node:os';
import { resolve } from 'node:path';

/** The machine, the code and the moment of a run. */
export interface RunEnvironment {
  /** `git rev-parse --short HEAD`, `-dirty` appended when the tree has changes; `unknown` without git. */
  readonly commit: string;
  readonly node: string;
  readonly cpuModel: string;
  readonly cpus: number;
  /** ISO 8601. */
  readonly date: string;
}

const root = resolve(import.meta.dirname, '..');

function git(cwd: string, args: readonly string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  }).trim();
}

/**
 * The commit checked out at `dir` (this repository by default). Untracked files count as
 * changes (a new source file changes what is measured), except under `bench/results/`,
 * which the benchmarks themselves write.
 */
export function currentCommit(dir: string = root): string {
  try {
    const head = git(dir, ['rev-parse', '--short', 'HEAD']);
    // From the top of the work tree, so the exclusion means the repository's bench/results.
    const changes = git(dir, [
      'status',
      '--porcelain',
      '--',
      ':(top)',
      ':(top,exclude)bench/results',
    ]);
    return changes === '' ? head : `${head}-dirty`;
  } catch {
    return 'unknown';
  }
}

/** This process's environment: the checkout's commit unless given, and the time. */
export function currentEnvironment(
  commit: string = currentCommit(),
  now: Date = new Date(),
): RunEnvironment {
  return {
    commit,
    node: process.version,
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown cpu',
    cpus: availableParallelism(),
    date: now.toISOString(),
  };
}
