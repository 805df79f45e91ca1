/**
 * @module The `--json` convention of the commands that read runs (`runs list`, `trace`, and
 * those that follow them): the whole answer as one JSON document on stdout, ending in a
 * newline, raw numbers (milliseconds, tokens, dollars) and ISO times, nothing else on
 * stdout; errors still go to stderr with the same exit codes. (`axon run --json` streams
 * one JSON object per event instead: it prints while the run goes on.)
 */
import type { Command } from 'commander';
import type { CliIo } from './cli-io.js';

/** Adds `--json` to `command`. */
export function addJsonOption(command: Command): Command {
  return command.option('--json', 'Print one JSON document on stdout instead of the table');
}

/** Writes `value` as the command's one JSON document (two-space indented). */
export function writeJson(io: CliIo, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
