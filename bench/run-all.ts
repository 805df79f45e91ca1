/**
 * @module `npm run bench`: every benchmark (`benches.ts`), one after another, each in its own
 * process, then `bench/results/summary.md` rebuilt from every result, the "Current figures"
 * table of docs/benchmarks.md written from the results of this run alone
 * (`current-figures.ts`), and its table of benches and targets (`target-table.ts`).
 *
 * `npm run bench -- inline store` runs only those benches (the table then shows only them);
 * `--doc <path>` writes the table into another file than docs/benchmarks.md.
 */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { BENCHES } from './benches.js';
import { writeCurrentFigures, type BenchRun } from './current-figures.js';
import { currentCommit, currentEnvironment } from './environment.js';
import { readResults, RESULTS_DIR, writeSummary } from './summary.js';
import { writeTargetTable } from './target-table.js';

const scripts = BENCHES.map((b) => `bench:${b.name}`);

/** Why a bench failed, from the end of its stderr: its last line that is not a stack frame. */
export function failureOf(
  stderr: string,
  code: number | null,
  signal: NodeJS.Signals | null,
): string {
  const lines = stderr
    // eslint-disable-next-line no-control-regex -- colours of the bench's output
    .replace(/\u001b\[[0-9;]*m/g, '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('at ') && !l.startsWith('^'));
  const exit = signal === null ? `exit code ${code ?? '?'}` : `killed by ${signal}`;
  const last = lines.at(-1);
  if (last === undefined) return exit;
  return `${last.length > 160 ? `${last.slice(0, 157)}...` : last} (${exit})`;
}

/** Runs `npm run <script>`, its output shown as it comes; resolves `null`, or why it failed. */
function run(script: string): Promise<string | null> {
  return new Promise((done) => {
    const child = spawn('npm', ['run', '--silent', script], {
      stdio: ['inherit', 'inherit', 'pipe'],
    });
    let tail = '';
    child.stderr.on('data', (chunk: Buffer) => {
      process.stderr.write(chunk);
      tail = (tail + chunk.toString('utf8')).slice(-8_000);
    });
    child.on('error', (err) => {
      done(err.message);
    });
    child.on('close', (code, signal) => {
      done(code === 0 ? null : failureOf(tail, code, signal));
    });
  });
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: { doc: { type: 'string' } },
    allowPositionals: true,
  });
  const unknown = positionals.filter((name) => !scripts.includes(`bench:${name}`));
  if (unknown.length > 0) {
    process.stderr.write(
      `bench: no bench ${unknown.join(', ')} (benches: ${scripts.map((s) => s.slice(6)).join(', ')})\n`,
    );
    return 2;
  }
  const chosen =
    positionals.length === 0 ? scripts : scripts.filter((s) => positionals.includes(s.slice(6)));
  const docPath = resolve(values.doc ?? join(import.meta.dirname, '..', 'docs', 'benchmarks.md'));
  // The commit and the moment the benches ran at, not what the tree holds when they are done;
  // a result written since is this run's.
  const env = currentEnvironment(currentCommit());
  const runs: BenchRun[] = [];
  for (const script of chosen) {
    runs.push({ bench: script.slice('bench:'.length), error: await run(script) });
  }
  // Each bench rebuilds the summary as it reports; this is the last word, and covers a run
  // whose last bench failed.
  process.stdout.write(`\nwrote ${writeSummary(RESULTS_DIR, env)}\n`);
  writeCurrentFigures(docPath, runs, readResults(RESULTS_DIR).results, env);
  writeTargetTable(docPath);
  process.stdout.write(`wrote the current figures and the targets into ${docPath}\n`);
  const failed = runs.filter((r) => r.error !== null);
  for (const r of failed) process.stderr.write(`failed: bench:${r.bench}: ${r.error ?? ''}\n`);
  return failed.length === 0 ? 0 : 1;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === import.meta.filename) {
  process.exitCode = await main();
}
