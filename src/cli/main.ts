/** @module The `axon` executable: runs the CLI on the process's arguments. */
import { readFileSync } from 'node:fs';
import { processIo } from './cli-io.js';
import { runCli } from './run-cli.js';

function packageVersion(): string {
  // dist/src/cli/main.js and src/cli/main.ts both sit three levels below the package root.
  for (const rel of ['../../../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'axon' && pkg.version) return pkg.version;
    } catch {
      // try the next candidate
    }
  }
  return 'unknown';
}

// A closed pipe (`axon run … | head`) ends the command quietly rather than with a crash.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});

const controller = new AbortController();
let stops = 0;
/**
 * The first Ctrl-C (or SIGTERM) asks the command to stop: `run` cancels its run (every step
 * ends with CANCELLED) instead of dying mid-write, `serve` drains. A second one, while that
 * is under way, exits at once with 130, as a shell expects of Ctrl-C.
 */
function stop(signal: NodeJS.Signals): void {
  stops += 1;
  if (stops > 1) process.exit(130);
  controller.abort(signal);
}
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
const code = await runCli(process.argv.slice(2), processIo, packageVersion(), controller.signal);
// A command a signal stopped exits 130, unless it stopped cleanly (`serve` drained: 0).
process.exitCode = controller.signal.aborted && code !== 0 ? 130 : code;
