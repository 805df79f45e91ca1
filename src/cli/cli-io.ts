/** @module The streams a CLI command writes to, injectable for tests, and the signal that stops a long-running one. */

/** Where a command writes. */
export interface CliIo {
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
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
