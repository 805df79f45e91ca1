/**
 * @module The `--json` convention of the commands that read runs (`runs list`, `trace`, and
 * those that follow them): the whole answer as one JSON document on stdout, ending in a
 * newline, raw numbers (milliseconds, tokens, dollars) and ISO times, nothing else on
 * stdout; errors still go to stderr with the same exit codes. (`axon run --json` streams
 * one JSON object per event instead: it prints while the run goes on.) A command prints its
 * answer with {@link printAnswer} or {@link printList}: the `--json`-or-text choice in one place.
 */
import type { Command } from 'commander';
import type { CliIo } from './cli-io.js';
import type { CommandContext } from './command-context.js';
import { createTerminalStyle, type TerminalStyle } from './terminal-style.js';

/** Adds `--json` to `command`. */
export function addJsonOption(command: Command): Command {
  return command.option('--json', 'Print one JSON document on stdout instead of the table');
}

/** Writes `value` as the command's one JSON document (two-space indented). */
export function writeJson(io: CliIo, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/**
 * Prints a command's answer: with `--json` (`json` true) `value` as its one JSON document,
 * else the text `human` makes of it for stdout, in stdout's {@link TerminalStyle}.
 *
 * @example
 * printAnswer(ctx, flags.json, thread, (style) => threadText(thread, style));
 */
export function printAnswer(
  ctx: CommandContext,
  json: boolean | undefined,
  value: unknown,
  human: (style: TerminalStyle) => string,
): void {
  if (json === true) writeJson(ctx.io, value);
  else ctx.io.stdout.write(human(createTerminalStyle(ctx.io.stdout, ctx.env)));
}

/**
 * {@link printAnswer} for a list: its JSON array, else `empty` (one line: `no runs in …`)
 * when it holds nothing, else the table `table` makes of it.
 */
export function printList<T>(
  ctx: CommandContext,
  json: boolean | undefined,
  items: readonly T[],
  empty: string,
  table: (items: readonly T[], style: TerminalStyle) => string,
): void {
  printAnswer(ctx, json, items, (style) =>
    items.length === 0 ? `${empty}\n` : table(items, style),
  );
}
