/**
 * @module The program a container runs for container placement, bundled into one file
 * (`container-bundle.ts`) that the host mounts read-only at `CONTAINER_ENTRY_PATH`.
 *
 * It runs as two processes. The first (the container's init) starts the second and waits:
 * when the second dies it reads the container's own out-of-memory count from its cgroup
 * and says how it died in a last `died` line, so the host can tell an OOM kill from any
 * other death (podman's `OOMKilled` is not set under cgroups v1). The second asks the
 * kernel to pick it first when memory runs out (`oom_score_adj` 1000), reads the host's
 * messages as JSON lines on its standard input and answers on its standard output: the
 * same session a worker thread runs (`serveSteps`), its host calls as `call` lines. What the
 * behaviour prints to standard output goes to standard error instead, so it cannot break
 * the protocol.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { InternalError } from '../../errors/internal-error.js';
import { toErrorPayload } from '../../errors/to-error-payload.js';
import { LineLink } from './line-link.js';
import { serveSteps } from '../worker/worker-entry.js';
import type { DiedLine } from './container-wire.js';
import type { HostCalls, HostReply, LinkDown } from '../worker/worker-protocol.js';

/** The argument that makes this program the step runner rather than the init. */
const RUNNER = '--axon-runner';

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

/** The init: runs the runner with this process's standard streams, reports its death. */
function init(): void {
  const before = oomKills();
  const child = spawn(
    process.execPath,
    [...process.execArgv, fileURLToPath(import.meta.url), RUNNER],
    {
      stdio: 'inherit',
    },
  );
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

/** The host's calls as `call` lines, each answered by a `reply` line of the same id. */
function lineHostCalls(link: LineLink): HostCalls {
  let next = 0;
  const pending = new Map<number, (reply: HostReply<unknown>) => void>();
  link.on('message', (message: LinkDown) => {
    if (message.t !== 'reply') return;
    pending.get(message.id)?.(message.reply);
    pending.delete(message.id);
  });
  link.on('close', () => {
    const error = toErrorPayload(new InternalError('the link to the host closed'));
    for (const resolve of pending.values()) resolve({ ok: false, error });
    pending.clear();
  });
  const call =
    (method: keyof HostCalls) =>
    (...args: unknown[]): Promise<HostReply<unknown>> =>
      new Promise((resolve) => {
        const id = ++next;
        pending.set(id, resolve);
        link.postMessage({ t: 'call', id, method, args });
      });
  return {
    delegate: call('delegate'),
    callTool: call('callTool'),
    chat: call('chat'),
    fact: call('fact'),
    fs: call('fs'),
    memory: call('memory'),
  } as HostCalls;
}

/** The runner: serves steps on standard input and output until the host closes it. */
function runner(): void {
  try {
    // First in line when the container runs out of memory, so the init can report it.
    writeFileSync('/proc/self/oom_score_adj', '1000');
  } catch {
    // Not Linux, or not allowed: the kernel picks as it would.
  }
  // The protocol keeps standard output's own write; what the behaviour prints goes to
  // standard error.
  const out = process.stdout.write.bind(process.stdout) as (
    chunk: string,
    done?: () => void,
  ) => boolean;
  const write = (line: string): void => {
    out(line);
  };
  process.stdout.write = process.stderr.write.bind(process.stderr);
  const link = new LineLink(process.stdin, write, {
    onStray: (line) =>
      process.stderr.write(`axon container: not a message: ${line.slice(0, 200)}\n`),
  });
  void serveSteps(link, lineHostCalls(link)).then(() => {
    out('', () => process.exit(0));
  });
  link.postMessage({ t: 'ready' });
}

if (process.argv.includes(RUNNER)) runner();
else init();
