/**
 * @module The step runner a container runs for container placement, bundled into its own
 * file (`container-bundle.ts`) that the container's init (`container-entry.ts`) starts. It
 * asks the kernel to pick it first when memory runs out (`oom_score_adj` 1000), reads the
 * host's messages as JSON lines and answers in kind: the same session a worker thread runs
 * (`serveSteps`), its host calls as `call` lines. The lines go over the descriptor named by
 * `--link-fd=<n>` when the engine handed one over (podman's `--preserve-fds`: a socket
 * straight to the host, through no relay), else over standard input and output. What the
 * behaviour prints to standard output goes to standard error instead, so it cannot break
 * the protocol.
 */
import { writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { InternalError } from '../../errors/internal-error.js';
import { toErrorPayload } from '../../errors/to-error-payload.js';
import { LineLink } from './line-link.js';
import { serveSteps } from '../worker/worker-entry.js';
import type { HostCalls, HostReply, LinkDown } from '../worker/worker-protocol.js';

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

/** The descriptor `--link-fd=<n>` names, or `null` for standard input and output. */
function linkFd(argv: readonly string[]): number | null {
  const arg = argv.find((a) => a.startsWith('--link-fd='));
  if (arg === undefined) return null;
  const fd = Number(arg.slice('--link-fd='.length));
  if (!Number.isInteger(fd) || fd < 3) throw new RangeError(`${arg}: not a descriptor past 2`);
  return fd;
}

/** Serves steps over the link until the host closes it, then exits. */
function run(): void {
  try {
    // First in line when the container runs out of memory, so the init can report it.
    writeFileSync('/proc/self/oom_score_adj', '1000');
  } catch {
    // Not Linux, or not allowed: the kernel picks as it would.
  }
  const fd = linkFd(process.argv);
  let input: Readable;
  let out: (line: string, done?: () => void) => void;
  if (fd === null) {
    // The protocol keeps standard output's own write.
    const write = process.stdout.write.bind(process.stdout) as (
      chunk: string,
      done?: () => void,
    ) => boolean;
    input = process.stdin;
    out = (line, done) => {
      write(line, done);
    };
  } else {
    const socket = new Socket({ fd, readable: true, writable: true });
    input = socket;
    out = (line, done) => {
      socket.write(line, done);
    };
  }
  // What the behaviour prints goes to standard error, whichever carries the protocol.
  process.stdout.write = process.stderr.write.bind(process.stderr);
  const link = new LineLink(
    input,
    (line) => {
      out(line);
    },
    {
      onStray: (line) =>
        process.stderr.write(`axon container: not a message: ${line.slice(0, 200)}\n`),
    },
  );
  void serveSteps(link, lineHostCalls(link)).then(() => {
    out('', () => process.exit(0));
  });
  link.postMessage({ t: 'ready' });
}

run();
