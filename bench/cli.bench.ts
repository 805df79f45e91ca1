/**
 * @module bench:cli — how long the `axon` executable takes to start and answer, as a user
 * runs it: the built CLI (`bin/axon.js` runs `dist/`, so the bench runs `npm run build`
 * first), one whole process per sample, wall time from spawn to exit.
 *
 * - `metrics.help_ms`: `node bin/axon.js --help`, the median of the samples (issue 33's
 *   target: ≤ 300).
 * - `metrics.runs_list_ms`: `node bin/axon.js runs list --url <server>` against a real
 *   `axon serve` the bench starts on a free port with a temporary data dir that holds a run
 *   (`axon run help-desk --data-dir`), the median (issue 33's target: ≤ 300).
 *
 * The two commands are sampled in turn (A, B, A, B, …) after a warm-up of each, so that the
 * machine's drift hits both alike. `AXON_BENCH_SAMPLES` (default 15) sets the samples of each;
 * `AXON_BENCH_NO_BUILD=1` measures `dist/` as it is.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { report } from './harness.js';

const root = join(import.meta.dirname, '..');
const bin = join(root, 'bin', 'axon.js');
const samples = Number(process.env['AXON_BENCH_SAMPLES'] ?? '15');
const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', AXON_LOG_LEVEL: 'warn' };
// A loader of the parent (`tsx`) would be timed too: the CLI runs on plain node.
delete env['NODE_OPTIONS'];

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** Runs `node bin/axon.js …args` to its end; resolves its wall time in ms. Fails on exit ≠ 0. */
function timed(args: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(process.execPath, [bin, ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stdout.resume();
    child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = performance.now() - start;
      if (code === 0) resolve(ms);
      else reject(new Error(`axon ${args.join(' ')} exited ${code ?? '?'}: ${err.trim()}`));
    });
  });
}

/** Starts `axon serve` on a free port over `dataDir`; resolves it and its URL, from its banner. */
function serve(dataDir: string): Promise<{ readonly child: ChildProcess; readonly url: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--data-dir', dataDir], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`axon serve printed no URL within 30 s:\n${out}`));
    }, 30_000);
    const read = (c: Buffer): void => {
      out += c.toString('utf8');
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      if (url === undefined) return;
      clearTimeout(timer);
      resolve({ child, url });
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`axon serve exited ${code ?? '?'}:\n${out}`));
    });
  });
}

if (process.env['AXON_BENCH_NO_BUILD'] !== '1') {
  process.stdout.write('bench:cli: npm run build\n');
  const built = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
  if (built.status !== 0) {
    throw new Error('bench:cli: `npm run build` failed: it measures the built CLI (dist/)');
  }
}

const dataDir = mkdtempSync(join(tmpdir(), 'axon-bench-cli-'));
let server: ChildProcess | undefined;
try {
  // A run in the data dir, so that runs list prints a table, not "no runs".
  await timed(['run', 'help-desk', '--data-dir', dataDir, '--no-trace', '--token-ms', '0']);
  const started = await serve(dataDir);
  server = started.child;
  const help = ['--help'];
  const list = ['runs', 'list', '--url', started.url];
  await timed(help);
  await timed(list);
  const helpMs: number[] = [];
  const listMs: number[] = [];
  for (let i = 0; i < samples; i++) {
    helpMs.push(await timed(help));
    listMs.push(await timed(list));
  }
  report({
    bench: 'cli',
    metrics: {
      help_ms: Math.round(median(helpMs) * 10) / 10,
      runs_list_ms: Math.round(median(listMs) * 10) / 10,
      samples,
    },
    ratios: {},
  });
} finally {
  server?.kill('SIGTERM');
  rmSync(dataDir, { recursive: true, force: true });
}
