/**
 * @module The program a container runs for container placement: its init, bundled into a
 * file of its own (`container-bundle.ts`) that the host mounts read-only at
 * `CONTAINER_ENTRY_PATH`, beside the runner (`container-runner.ts`, at
 * `CONTAINER_RUNNER_PATH`).
 *
 * It starts the runner at once, hands it its standard streams and the host's link
 * descriptor (`--link-fd=<n>`, passed on), and waits: when the runner dies it reads the
 * container's own out-of-memory count from its cgroup and says how it died in a last `died`
 * line on standard output, so the host can tell an OOM kill from any other death (podman's
 * `OOMKilled` is not set under cgroups v1). It imports nothing of axon: it is small, so the
 * Node that runs it starts the runner sooner.
 */
import { spawn, type StdioOptions } from 'node:child_process';
import { closeSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { DiedLine } from './container-wire.js';

/** The container's OOM kills so far (cgroups v1 or v2), or `null` if unreadable. */
function oomKills(): number | null {
  for (const file of ['/sys/fs/cgroup/memory/memory.oom_control', '/sys/fs/cgroup/memory.events']) {
    try {
      const match = /(?:^|\n)oom_kill (\d+)/.exec(readFileSync(file, 'utf8'));
      if (match) return Number(match[1]);
    } catch {
      // Not this cgroup version.
    }
  }
  return null;
}

/** Runs the runner with this process's standard streams and link, reports its death. */
function init(): void {
  const before = oomKills();
  const args = process.argv.slice(2);
  const fdArg = args.find((a) => a.startsWith('--link-fd='));
  const fd = fdArg === undefined ? NaN : Number(fdArg.slice('--link-fd='.length));
  const linked = Number.isInteger(fd) && fd > 2;
  // The link keeps its number in the runner (the runner checks it); those between are closed.
  const stdio: StdioOptions = linked
    ? ['inherit', 'inherit', 'inherit', ...Array<'ignore'>(fd - 3).fill('ignore'), fd]
    : 'inherit';
  const runner = fileURLToPath(new URL('./container-runner.mjs', import.meta.url));
  const child = spawn(process.execPath, [...process.execArgv, runner, ...args], { stdio });
  // Only the runner holds the link, so its death is the end of the link for the host.
  if (linked) closeSync(fd);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => child.kill(signal));
  }
  child.on('exit', (code, signal) => {
    const after = oomKills();
    const died: DiedLine = {
      t: 'died',
      code,
      signal,
      oom: before !== null && after !== null && after > before,
    };
    // A leading newline ends a line the runner may have been cut off in.
    process.stdout.write(`\n${JSON.stringify(died)}\n`, () => process.exit(code ?? 1));
  });
}

init();
