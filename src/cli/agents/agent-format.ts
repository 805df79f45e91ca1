/**
 * @module How `axon agents` and `axon schedules` show durable agents to a person: the table of
 * actors, one actor (its view, its state as JSON, its wakes and its last messages), a
 * message's receipt and its end, the table of schedules and one schedule's line. `--json`
 * prints the API's bodies instead.
 */
import { elapsedMs, formatDuration, formatTime } from '../human-format.js';
import type {
  AgentDetail,
  AgentInfo,
  MessageEnd,
  MessageInfo,
  ReceiptInfo,
  ScheduleInfo,
  WakeInfo,
} from '../sources/agent-source.js';
import { formatTable, type TableCell } from '../table.js';
import { statusPaint, type Paint, type TerminalStyle } from '../terminal-style.js';
import { oneLine } from '../threads/thread-format.js';

/** How wide a JSON cell of a table is at most (a message, an output). */
const JSON_CELL = 40;

/** The paint of an actor's status: cyan busy, yellow waiting, green awake, dim asleep. */
export function agentPaint(style: TerminalStyle, status: string): Paint {
  switch (status) {
    case 'busy':
      return style.cyan;
    case 'waiting':
      return style.yellow;
    case 'awake':
      return style.green;
    default:
      return style.dim;
  }
}

/** The paint of a schedule's status: green active, yellow paused. */
function schedulePaint(style: TerminalStyle, status: string): Paint {
  return status === 'active' ? style.green : style.yellow;
}

/** `value` as one line of JSON, cut to `max` characters. */
export function jsonCell(value: unknown, max = JSON_CELL): string {
  return oneLine(JSON.stringify(value ?? null), max);
}

/** `notebook/customer-42`. */
export function actorName(a: { readonly name: string; readonly key: string }): string {
  return `${a.name}/${a.key}`;
}

/** The actors as a table, newest first. */
export function agentsTable(agents: readonly AgentInfo[], style: TerminalStyle): string {
  return formatTable(
    [
      { header: 'AGENT' },
      { header: 'KEY' },
      { header: 'USER' },
      { header: 'STATUS' },
      { header: 'VERSION', align: 'right' },
      { header: 'MAILBOX', align: 'right' },
      { header: 'NEXT TIMER' },
      { header: 'CREATED' },
      { header: 'UPDATED' },
    ],
    agents.map((a) => [
      a.name,
      a.key,
      a.user_id ?? '-',
      { text: a.status, paint: agentPaint(style, a.status) },
      String(a.version),
      String(a.mailbox_depth),
      formatTime(a.next_timer_at),
      formatTime(a.created_at),
      formatTime(a.updated_at),
    ]),
    { header: style.bold },
  );
}

/** What a wake waits for: `-` (a sleep), `approval {"ticket":"t-1"}`, `check, every 1h00m`. */
function wakeFor(w: WakeInfo): string {
  if (w.kind === 'event') {
    const match = w.match === null ? '' : ` ${jsonCell(w.match, 30)}`;
    return `${w.event ?? '?'}${match}`;
  }
  if (w.kind === 'reminder') {
    return `${w.name ?? '?'}${w.every_ms === null ? '' : `, every ${formatDuration(w.every_ms)}`}`;
  }
  return '-';
}

/** The wakes as a table: kind, status, when, what for, the message that waits. */
export function wakesTable(wakes: readonly WakeInfo[], style: TerminalStyle): string {
  return formatTable(
    [
      { header: 'WAKE' },
      { header: 'STATUS' },
      { header: 'DUE' },
      { header: 'FOR' },
      { header: 'MESSAGE' },
    ],
    wakes.map((w) => [
      w.kind,
      { text: w.status, paint: w.status === 'pending' ? style.yellow : style.cyan },
      formatTime(w.due_at),
      wakeFor(w),
      w.step_id ?? jsonCell(w.message),
    ]),
    { header: style.bold },
  );
}

/** A message's result: its output, its error, or `-` while it is open. */
function resultCell(m: MessageInfo, style: TerminalStyle): TableCell {
  if (m.error)
    return { text: oneLine(`${m.error.code}: ${m.error.message}`, 50), paint: style.red };
  return m.ended_at === null ? '-' : jsonCell(m.output);
}

/** The messages as a table, in the order accepted. */
export function messagesTable(messages: readonly MessageInfo[], style: TerminalStyle): string {
  return formatTable(
    [
      { header: 'MESSAGE' },
      { header: 'STATUS' },
      { header: 'CREATED' },
      { header: 'DURATION', align: 'right' },
      { header: 'INPUT' },
      { header: 'RESULT' },
    ],
    messages.map((m) => [
      m.message_id,
      { text: m.status, paint: statusPaint(style, m.status) },
      formatTime(m.created_at),
      formatDuration(elapsedMs(m.created_at, m.ended_at)),
      jsonCell(m.input),
      resultCell(m, style),
    ]),
    { header: style.bold },
  );
}

const indent = (text: string): string =>
  text
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');

/** One actor: its view, its state as indented JSON, its wakes and its last messages. */
export function agentText(d: AgentDetail, style: TerminalStyle): string {
  const a = d.agent;
  const lines = [
    `agent ${style.bold(actorName(a))}: ${agentPaint(style, a.status)(a.status)}`,
    `  user        ${a.user_id ?? '-'}`,
    `  version     ${a.version}`,
    `  mailbox     ${a.mailbox_depth} queued`,
    `  next timer  ${formatTime(a.next_timer_at)}`,
    `  run         ${a.run_id}`,
    `  created     ${formatTime(a.created_at)}`,
    `  updated     ${formatTime(a.updated_at)}`,
    '',
    style.bold('state'),
    indent(JSON.stringify(a.state ?? null, null, 2)),
    '',
  ];
  if (d.wakes.length === 0) {
    lines.push('no wakes\n');
  } else {
    lines.push(wakesTable(d.wakes, style));
  }
  if (d.messages.length === 0) {
    lines.push('no messages');
  } else {
    lines.push(messagesTable(d.messages, style).trimEnd());
    if (d.message_count > d.messages.length) {
      lines.push(
        `(its last ${d.messages.length} of ${d.message_count} messages: axon trace ${a.run_id} shows every step)`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

/** A message's receipt, and how to follow it: `message <id> to notebook/k: queued`. */
export function receiptText(
  to: { readonly name: string; readonly key: string },
  r: ReceiptInfo,
  flags: string,
  style: TerminalStyle,
): string {
  const status = statusPaint(style, r.status)(r.status);
  const head = r.created
    ? `message ${style.bold(r.message_id)} to ${actorName(to)}: ${status}`
    : `message ${style.bold(r.message_id)} to ${actorName(to)}: sent before under this client token (${status}); nothing sent again`;
  return `${head}\nfollow it: axon agents show ${to.name} ${to.key} ${flags}\n`;
}

/** A message's end: its status, then its output or its error. */
export function endText(
  to: { readonly name: string; readonly key: string },
  r: ReceiptInfo,
  end: MessageEnd,
  style: TerminalStyle,
): string {
  const head = `message ${style.bold(r.message_id)} to ${actorName(to)}: ${statusPaint(style, end.status)(end.status)}\n`;
  if (end.error) return `${head}${style.red(`error: ${end.error.code}: ${end.error.message}`)}\n`;
  return `${head}output: ${JSON.stringify(end.output ?? null)}\n`;
}

/** The schedules as a table. */
export function schedulesTable(schedules: readonly ScheduleInfo[], style: TerminalStyle): string {
  return formatTable(
    [
      { header: 'SCHEDULE' },
      { header: 'AGENT' },
      { header: 'KEY' },
      { header: 'CRON' },
      { header: 'TIMEZONE' },
      { header: 'OVERLAP' },
      { header: 'STATUS' },
      { header: 'NEXT' },
      { header: 'MESSAGE' },
    ],
    schedules.map((s) => [
      s.schedule_id,
      s.agent,
      s.key,
      s.cron,
      s.timezone,
      s.overlap,
      { text: s.status, paint: schedulePaint(style, s.status) },
      s.status === 'paused' ? '-' : formatTime(s.next_at),
      jsonCell(s.message),
    ]),
    { header: style.bold },
  );
}

/** `schedule <id>: active, next <time> (notebook/team-a, "0 2 * * *" UTC)`. */
export function scheduleLine(s: ScheduleInfo, style: TerminalStyle): string {
  const status = schedulePaint(style, s.status)(s.status);
  const next = s.status === 'active' ? `, next ${formatTime(s.next_at)}` : '';
  return `schedule ${style.bold(s.schedule_id)}: ${status}${next} (${s.agent}/${s.key}, "${s.cron}" ${s.timezone})\n`;
}
