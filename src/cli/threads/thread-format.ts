/**
 * @module How `axon workflow` and `axon thread` show workflows and threads to a person: the
 * tables, a thread's turns, everything of a thread (`thread inspect`), and the progress line
 * of a thread being followed. `--json` prints the API's bodies instead.
 */
import { elapsedMs, formatCost, formatCount, formatDuration, formatTime } from '../human-format.js';
import { formatTable, type TableCell } from '../table.js';
import { statusPaint, type Paint, type TerminalStyle } from '../terminal-style.js';
import type { ThreadInfo, ThreadProgress, WorkflowSummary } from '../sources/thread-source.js';

/** The paint of a thread status: green completed, red failed or crashed, yellow killed, cyan live. */
export function threadPaint(style: TerminalStyle, status: string): Paint {
  if (status === 'crashed') return style.red;
  if (status === 'killed') return style.yellow;
  return statusPaint(style, status);
}

/** The workflows as a table: name, roles, max rounds, concurrency, running, queued. */
export function workflowsTable(
  workflows: readonly WorkflowSummary[],
  style: TerminalStyle,
): string {
  return formatTable(
    [
      { header: 'WORKFLOW' },
      { header: 'ROLES' },
      { header: 'MAX ROUNDS', align: 'right' },
      { header: 'CONCURRENCY' },
      { header: 'RUNNING', align: 'right' },
      { header: 'QUEUED', align: 'right' },
    ],
    workflows.map((w) => [
      w.name,
      w.roles.map((r) => r.name).join(','),
      String(w.max_rounds),
      concurrencyText(w),
      String(w.running),
      String(w.queued),
    ]),
    { header: style.bold },
  );
}

/** `2 (queue 10)`, `1 (drop)`. */
export function concurrencyText(w: WorkflowSummary): string {
  const c = w.concurrency;
  return `${c.max} (${c.overflow === 'queue' ? `queue ${c.max_queue}` : c.overflow})`;
}

/** The threads as a table, newest first. */
export function threadsTable(threads: readonly ThreadInfo[], style: TerminalStyle): string {
  return formatTable(
    [
      { header: 'THREAD' },
      { header: 'WORKFLOW' },
      { header: 'STATUS' },
      { header: 'TURNS', align: 'right' },
      { header: 'CREATED' },
      { header: 'DURATION', align: 'right' },
      { header: 'TOKENS', align: 'right' },
      { header: 'COST', align: 'right' },
    ],
    threads.map((t) => [
      t.thread_id,
      t.workflow,
      { text: t.status, paint: threadPaint(style, t.status) },
      String(t.turns.length),
      formatTime(t.created_at),
      formatDuration(elapsedMs(t.created_at, t.ended_at)),
      formatCount(t.tokens_in + t.tokens_out),
      formatCost(t.cost_usd),
    ]),
    { header: style.bold },
  );
}

/** `text` on one line, at most `max` characters (an ellipsis where it was cut). */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/** `thread <id>: <workflow>, <status> (<reason>), created <time>, took <d>`. */
export function threadLine(t: ThreadInfo, style: TerminalStyle): string {
  const reason = t.end_reason === null ? '' : ` (${t.end_reason})`;
  const took =
    t.ended_at === null ? '' : `, took ${formatDuration(elapsedMs(t.created_at, t.ended_at))}`;
  const status = threadPaint(style, t.status)(t.status);
  return `thread ${style.bold(t.thread_id)}: ${t.workflow}, ${status}${reason}, created ${formatTime(t.created_at)}${took}\n`;
}

/** The thread's line, its input, its error, its turns (each one's text cut to a line) and totals. */
export function threadText(t: ThreadInfo, style: TerminalStyle): string {
  const head =
    threadLine(t, style) +
    `input: ${oneLine(t.input, 100)}\n` +
    (t.error ? `${style.red(`error: ${t.error.code}: ${t.error.message}`)}\n` : '');
  if (t.turns.length === 0) return `${head}no turns\n`;
  const rows: TableCell[][] = t.turns.map((turn) => [
    String(turn.n),
    turn.role,
    { text: turn.status, paint: statusPaint(style, turn.status) },
    formatDuration(elapsedMs(turn.started_at, turn.ended_at)),
    formatCount(turn.tokens_in + turn.tokens_out),
    formatCost(turn.cost_usd),
    turn.raw !== null
      ? oneLine(turn.raw, 60)
      : turn.error
        ? { text: `${turn.error.code}: ${oneLine(turn.error.message, 50)}`, paint: style.red }
        : '',
  ]);
  rows.push([
    { text: 'total', paint: style.bold },
    '',
    { text: t.status, paint: threadPaint(style, t.status) },
    formatDuration(elapsedMs(t.started_at ?? t.created_at, t.ended_at)),
    formatCount(t.tokens_in + t.tokens_out),
    formatCost(t.cost_usd),
  ]);
  return `${head}\n${formatTable(
    [
      { header: 'TURN' },
      { header: 'ROLE' },
      { header: 'STATUS' },
      { header: 'DURATION', align: 'right' },
      { header: 'TOKENS', align: 'right' },
      { header: 'COST', align: 'right' },
      { header: 'TEXT' },
    ],
    rows,
    { header: style.bold },
  )}`;
}

const indent = (text: string, by = '    '): string =>
  text
    .split('\n')
    .map((l) => (l === '' ? '' : by + l))
    .join('\n');

/** Everything of a thread, as readable text: its facts, then each turn's full raw and typed output. */
export function threadInspectText(t: ThreadInfo, style: TerminalStyle): string {
  const lines = [
    threadLine(t, style).trimEnd(),
    `  workflow    ${t.workflow}`,
    `  status      ${threadPaint(style, t.status)(t.status)}${t.end_reason === null ? '' : ` (${t.end_reason})`}`,
    `  mode        ${t.mode}${t.replay_of === null ? '' : ` of ${t.replay_of}`}`,
    `  created     ${formatTime(t.created_at)}`,
    `  started     ${formatTime(t.started_at)}`,
    `  ended       ${formatTime(t.ended_at)}`,
    `  turns       ${t.turns.length} (${t.rounds} succeeded)`,
    `  tokens      ${formatCount(t.tokens_in)} in, ${formatCount(t.tokens_out)} out`,
    `  cost        ${formatCost(t.cost_usd)}`,
  ];
  if (t.error) lines.push(`  error       ${style.red(`${t.error.code}: ${t.error.message}`)}`);
  lines.push('', style.bold('input'), indent(t.input));
  for (const turn of t.turns) {
    lines.push(
      '',
      style.bold(`turn ${turn.n}: ${turn.role}`) +
        `, ${statusPaint(style, turn.status)(turn.status)}, ${formatDuration(elapsedMs(turn.started_at, turn.ended_at))}, ` +
        `${formatCount(turn.tokens_in)} in / ${formatCount(turn.tokens_out)} out, ${formatCost(turn.cost_usd)}`,
      `  step        ${turn.step_id}`,
      `  started     ${formatTime(turn.started_at)}`,
      `  ended       ${formatTime(turn.ended_at)}`,
    );
    if (turn.error)
      lines.push(`  error       ${style.red(`${turn.error.code}: ${turn.error.message}`)}`);
    lines.push('  raw:', turn.raw === null ? '    (none)' : indent(turn.raw));
    const typed = turn.output === null || turn.output === turn.raw ? null : turn.output;
    if (typed !== null) lines.push('  output:', indent(JSON.stringify(typed, null, 2)));
  }
  return `${lines.join('\n')}\n`;
}

/** Counts a followed thread's progress: the turn, its role, the tokens it has streamed. */
export class ProgressLine {
  #turn = 0;
  #role = '';
  #tokens = 0;

  /** Takes an event; returns the line to show (without a newline). */
  update(p: ThreadProgress): string {
    if (p.turn !== this.#turn) {
      this.#turn = p.turn;
      this.#tokens = 0;
    }
    this.#role = p.role;
    if (p.type === 'token') this.#tokens += 1;
    return `turn ${this.#turn} ${this.#role} … ${formatCount(this.#tokens)} token${this.#tokens === 1 ? '' : 's'}`;
  }
}
