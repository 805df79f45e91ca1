/** @module Test helper: `axon serve` (its command, in this process) on a free port. */
import type { CliIo } from '../../src/cli/cli-io.js';
import { serveCommand } from '../../src/cli/serve/serve-command.js';

/** Starts serveCommand on port 0 in `dir`; resolves once it listens, with its URL and a stop. */
export async function serveOnFreePort(
  flags: Record<string, string>,
  dir: string,
): Promise<{
  url: string;
  stdout: () => string;
  stop: () => Promise<number>;
}> {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = {
    stdout: { write: (t: string) => out.push(t) },
    stderr: { write: (t: string) => err.push(t) },
  };
  const controller = new AbortController();
  const exited = serveCommand(
    {
      flags: { port: '0', ...flags },
      env: {},
      cwd: dir,
      version: '0.0.0-test',
      signal: controller.signal,
    },
    io,
  );
  for (let i = 0; i < 500; i++) {
    const m = /listening on (http:\/\/\S+)/.exec(out.join(''));
    if (m?.[1]) {
      return {
        url: m[1],
        stdout: () => out.join(''),
        stop: () => {
          controller.abort('test');
          return exited;
        },
      };
    }
    if (err.length > 0) throw new Error(err.join(''));
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`serve did not listen: ${out.join('')}`);
}
