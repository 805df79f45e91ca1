/** @module The streams a CLI command writes to, injectable for tests, and the signal that stops a long-running one. */

/** One of a command's output streams: what it writes to, and whether a person watches it. */
export interface CliStream {
  write(text: string): unknown;
  /** True when the stream is a terminal; colour and the help's width follow it. */
  readonly isTTY?: boolean | undefined;
  /** The terminal's width, when it is one. */
  readonly columns?: number | undefined;
}

/** Where a command writes, and the environment it reads (`NO_COLOR`, `AXON_API_KEY`, …). */
export interface CliIo {
  readonly stdout: CliStream;
  readonly stderr: CliStream;
  /** Default `process.env`; a test gives its own rather than changing the process's. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** The process's own standard output and error. */
export const processIo: CliIo = { stdout: process.stdout, stderr: process.stderr };

/** Resolves when `signal` aborts. */
export function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    signal.addEventListener(
      'abort',
      () => {
        resolve();
      },
      { once: true },
    );
  });
}
