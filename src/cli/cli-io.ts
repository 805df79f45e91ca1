/** @module The streams a CLI command writes to, injectable for tests. */

/** Where a command writes. */
export interface CliIo {
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
}

/** The process's own standard output and error. */
export const processIo: CliIo = { stdout: process.stdout, stderr: process.stderr };
