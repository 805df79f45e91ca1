/** @module The `axon` executable: runs the CLI on the process's arguments. */
import { readFileSync } from 'node:fs';
import { processIo } from './cli-io.js';
import { runCli } from './cli.js';

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
// Ctrl-C cancels the run (every step ends with CANCELLED) instead of killing it mid-write.
process.once('SIGINT', () => {
  controller.abort();
});
const code = await runCli(process.argv.slice(2), processIo, packageVersion(), controller.signal);
process.exitCode = controller.signal.aborted ? 130 : code;
