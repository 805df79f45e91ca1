/**
 * @module Colour for what a person reads, never for what a program reads: on only when the
 * stream is a terminal, `NO_COLOR` is unset or empty (https://no-color.org) and `TERM` is not
 * `dumb`. Off, every style returns its text unchanged, so output piped to a file or `grep`
 * has no escape codes.
 */
import type { CliStream } from './cli-io.js';

/** Turns text into styled text (or returns it unchanged). */
export type Paint = (text: string) => string;

/** The styles a command uses. */
export interface TerminalStyle {
  /** Whether styles add escape codes. */
  readonly enabled: boolean;
  readonly bold: Paint;
  readonly dim: Paint;
  readonly red: Paint;
  readonly green: Paint;
  readonly yellow: Paint;
  readonly cyan: Paint;
}

const sgr =
  (open: number, close: number): Paint =>
  (text) =>
    text === '' ? text : `\u001b[${open}m${text}\u001b[${close}m`;

const plain: Paint = (text) => text;

/** Styles that change nothing. */
export const NO_STYLE: TerminalStyle = Object.freeze({
  enabled: false,
  bold: plain,
  dim: plain,
  red: plain,
  green: plain,
  yellow: plain,
  cyan: plain,
});

const COLOUR: TerminalStyle = Object.freeze({
  enabled: true,
  bold: sgr(1, 22),
  dim: sgr(2, 22),
  red: sgr(31, 39),
  green: sgr(32, 39),
  yellow: sgr(33, 39),
  cyan: sgr(36, 39),
});

/** Whether output to `stream` may be coloured, given the environment `env`. */
export function colourEnabled(
  stream: CliStream,
  env: Readonly<Record<string, string | undefined>>,
): boolean {
  const noColor = env['NO_COLOR'];
  return (
    stream.isTTY === true && (noColor === undefined || noColor === '') && env['TERM'] !== 'dumb'
  );
}

/** The styles for `stream`: colour when {@link colourEnabled}, else {@link NO_STYLE}. */
export function createTerminalStyle(
  stream: CliStream,
  env: Readonly<Record<string, string | undefined>>,
): TerminalStyle {
  return colourEnabled(stream, env) ? COLOUR : NO_STYLE;
}

/** The style of a run or step status: green done, red failed, yellow cancelled, cyan live. */
export function statusPaint(style: TerminalStyle, status: string): Paint {
  switch (status) {
    case 'completed':
    case 'succeeded':
      return style.green;
    case 'failed':
      return style.red;
    case 'cancelled':
    case 'cancelling':
      return style.yellow;
    default:
      return style.cyan;
  }
}

/** `text` without the escape codes this module adds. */
export function stripStyle(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b\[\d+m/g, '');
}
