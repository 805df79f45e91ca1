/** @module `npm run bench`: every benchmark, one after another, each in its own process. */
import { spawnSync } from 'node:child_process';

const scripts = [
  'bench:inline',
  'bench:actors',
  'bench:worker',
  'bench:stream',
  'bench:engine',
  'bench:store',
  'bench:memory',
];
let failed = 0;
for (const script of scripts) {
  const r = spawnSync('npm', ['run', '--silent', script], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed === 0 ? 0 : 1);
