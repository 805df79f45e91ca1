/**
 * @module `npm run bench`: every benchmark, one after another, each in its own process, then
 * `bench/results/summary.md` rebuilt from every result.
 */
import { spawnSync } from 'node:child_process';
import { currentCommit, currentEnvironment } from './environment.js';
import { writeSummary } from './summary.js';

const scripts = [
  'bench:inline',
  'bench:actors',
  'bench:worker',
  'bench:stream',
  'bench:engine',
  'bench:store',
  'bench:memory',
  'bench:sse',
  'bench:http',
  'bench:fleet',
  'bench:orchestrator',
  'bench:workflow',
  'bench:container',
];
// The commit the benches ran at, not what the tree holds when they are done.
const commit = currentCommit();
const failures: string[] = [];
for (const script of scripts) {
  const r = spawnSync('npm', ['run', '--silent', script], { stdio: 'inherit' });
  if (r.status !== 0) failures.push(script);
}
// Each bench rebuilds the summary as it reports; this is the last word, and covers a run
// whose last bench failed. A failed bench leaves its previous result, whose row names the
// commit and date of that earlier run.
process.stdout.write(`\nwrote ${writeSummary(undefined, currentEnvironment(commit))}\n`);
if (failures.length > 0) process.stderr.write(`failed: ${failures.join(', ')}\n`);
process.exit(failures.length === 0 ? 0 : 1);
