/**
 * @module The benchmark harness: interleaved rounds of peers and our code in one process,
 * a printed table, `bench/results/<name>.json`, and the summary of every result rebuilt.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { currentCommit, currentEnvironment } from './environment.js';
import { RESULTS_DIR, writeSummary } from './summary.js';

// Taken as the bench loads, before it measures: the code measured is the code loaded then,
// whatever the tree holds by the time the bench reports (a run can take minutes).
const commitAtStart = currentCommit();

/** What every benchmark writes. */
export interface BenchResult {
  readonly bench: string;
  readonly node: string;
  readonly cpus: number;
  readonly cpuModel: string;
  /**
   * `git rev-parse --short HEAD` when the bench started, with `-dirty` when the tree had
   * uncommitted changes.
   */
  readonly commit: string;
  /** When the result was written, ISO 8601. */
  readonly date: string;
  readonly metrics: Readonly<Record<string, number>>;
  readonly ratios: Readonly<Record<string, number>>;
}

/** A case measured in rounds: `run` does one operation. */
export interface BenchCase {
  readonly name: string;
  readonly run: () => Promise<unknown>;
  /** Called before each round (fresh state, outside the timing). */
  readonly setup?: () => Promise<void> | void;
  /**
   * Called after each round (outside the timing), to release what the round kept, so the
   * next case does not run on a heap that holds this one's state.
   */
  readonly teardown?: () => Promise<void> | void;
}

/** Per case: operations per second in each round, and their median. */
export interface CaseStats {
  readonly name: string;
  readonly rounds: readonly number[];
  readonly median: number;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/**
 * Runs the cases in interleaved rounds (A, B, A, B, …) so that drift of the machine hits
 * every case alike. Each round runs one case for `roundMs` of wall time, after `warmupOps`
 * untimed operations per case.
 */
export async function interleave(
  cases: readonly BenchCase[],
  options: {
    readonly rounds?: number;
    readonly roundMs?: number;
    readonly warmupOps?: number;
  } = {},
): Promise<CaseStats[]> {
  const rounds = options.rounds ?? 6;
  const roundMs = options.roundMs ?? 1_000;
  const warmupOps = options.warmupOps ?? 200;
  const results = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  for (const c of cases) {
    await c.setup?.();
    for (let i = 0; i < warmupOps; i++) await c.run();
    await c.teardown?.();
  }
  for (let r = 0; r < rounds; r++) {
    for (const c of cases) {
      await c.setup?.();
      let ops = 0;
      const start = performance.now();
      let elapsed = 0;
      while (elapsed < roundMs) {
        // Check the clock every 16 operations: cheap, and fine-grained enough.
        for (let i = 0; i < 16; i++) await c.run();
        ops += 16;
        elapsed = performance.now() - start;
      }
      results.get(c.name)?.push((ops * 1000) / elapsed);
      await c.teardown?.();
    }
  }
  return cases.map((c) => {
    const values = results.get(c.name) ?? [];
    return { name: c.name, rounds: values, median: median(values) };
  });
}

/**
 * Prints the result as a table, writes `bench/results/<bench>.json` with the commit, Node,
 * CPU and date, and rebuilds `bench/results/summary.md` from every result there; returns
 * the JSON's path.
 */
export function report(
  result: Omit<BenchResult, 'node' | 'cpus' | 'cpuModel' | 'commit' | 'date'>,
): string {
  const env = currentEnvironment(commitAtStart);
  const full: BenchResult = {
    bench: result.bench,
    node: env.node,
    cpus: env.cpus,
    cpuModel: env.cpuModel,
    commit: env.commit,
    date: env.date,
    metrics: result.metrics,
    ratios: result.ratios,
  };
  const rows = [
    ...Object.entries(full.metrics).map(([k, v]) => ({ kind: 'metric', name: k, value: v })),
    ...Object.entries(full.ratios).map(([k, v]) => ({ kind: 'ratio', name: k, value: v })),
  ];
  const width = Math.max(...rows.map((r) => r.name.length), 10);
  process.stdout.write(
    `\n${full.bench} — node ${full.node}, ${full.cpus} cpus (${full.cpuModel}), commit ${full.commit}\n`,
  );
  for (const r of rows) {
    const shown = Number.isInteger(r.value)
      ? r.value.toLocaleString('en-US')
      : r.value.toFixed(r.value < 10 ? 3 : 1);
    process.stdout.write(`  ${r.kind.padEnd(6)} ${r.name.padEnd(width)} ${shown}\n`);
  }
  mkdirSync(RESULTS_DIR, { recursive: true });
  const path = join(RESULTS_DIR, `${full.bench}.json`);
  writeFileSync(path, `${JSON.stringify(full, null, 2)}\n`);
  process.stdout.write(`  wrote ${path}\n`);
  // Same environment as the result, so this bench's rows read as current.
  process.stdout.write(`  wrote ${writeSummary(RESULTS_DIR, env)}\n`);
  return path;
}
