/**
 * How `axon agents` and `axon schedules` print: the tables' columns and cells (times UTC to
 * the second, JSON cut to a line), an actor's state as indented JSON with its wakes and last
 * messages, a receipt, a message's end, a schedule's line —
 * and no colour unless asked for.
 */
import { describe, expect, it } from 'vitest';
import {
  agentsTable,
  agentText,
  endText,
  jsonCell,
  receiptText,
  scheduleLine,
  schedulesTable,
} from '../../../src/cli/agents/agent-format.js';
import type {
  AgentDetail,
  AgentInfo,
  MessageInfo,
  ScheduleInfo,
  WakeInfo,
} from '../../../src/cli/sources/agent-source.js';
import { NO_STYLE, createTerminalStyle, stripStyle } from '../../../src/cli/terminal-style.js';
import { tableRows } from '../run-fixtures.js';

const T0 = '2026-12-07T00:41:18.186Z';
const T1 = '2026-12-07T00:41:18.233Z';

const agent: AgentInfo = {
  name: 'follow-up',
  key: 'ticket-7',
  user_id: 'anonymous',
  version: 1,
  status: 'waiting',
  state: { log: ['a'] },
  mailbox_depth: 1,
  next_timer_at: '2026-12-10T00:41:25.000Z',
  run_id: 'run_1',
  created_at: T0,
  updated_at: T1,
};

const wakes: WakeInfo[] = [
  {
    wake_id: 'step_1.0',
    kind: 'event',
    status: 'pending',
    due_at: null,
    event: 'approval',
    name: null,
    match: { ticket: 't-1' },
    every_ms: null,
    step_id: 'step_1',
    message: null,
  },
  {
    wake_id: 'actor_1.check',
    kind: 'reminder',
    status: 'pending',
    due_at: '2026-12-08T09:00:00.000Z',
    event: null,
    name: 'check',
    match: null,
    every_ms: 3_600_000,
    step_id: null,
    message: { text: 'check in' },
  },
];

const messages: MessageInfo[] = [
  {
    message_id: 'step_0',
    status: 'failed',
    created_at: T0,
    started_at: T0,
    ended_at: T1,
    input: { text: 'x' },
    output: null,
    error: { code: 'TIMEOUT', message: 'the message took longer than 30000 ms' },
  },
  {
    message_id: 'step_1',
    status: 'waiting',
    created_at: T1,
    started_at: T1,
    ended_at: null,
    input: { text: 'approved', await: 'approval' },
    output: null,
    error: null,
  },
];

const schedule: ScheduleInfo = {
  schedule_id: 'sched_nightly',
  agent: 'notebook',
  key: 'team-a',
  message: { text: 'nightly' },
  cron: '0 2 * * *',
  timezone: 'Europe/Berlin',
  overlap: 'skip',
  catchup: false,
  status: 'active',
  next_at: '2026-12-08T01:00:00.000Z',
  created_at: T0,
  updated_at: T1,
};

describe('agent formats', () => {
  it('the actors table: agent, key, user, status, version, mailbox, next timer, created, updated', () => {
    expect(tableRows(agentsTable([agent, { ...agent, next_timer_at: null }], NO_STYLE))).toEqual([
      ['AGENT', 'KEY', 'USER', 'STATUS', 'VERSION', 'MAILBOX', 'NEXT TIMER', 'CREATED', 'UPDATED'],
      [
        'follow-up',
        'ticket-7',
        'anonymous',
        'waiting',
        '1',
        '1',
        '2026-12-10 00:41:25Z',
        '2026-12-07 00:41:18Z',
        '2026-12-07 00:41:18Z',
      ],
      [
        'follow-up',
        'ticket-7',
        'anonymous',
        'waiting',
        '1',
        '1',
        '-',
        '2026-12-07 00:41:18Z',
        '2026-12-07 00:41:18Z',
      ],
    ]);
  });

  it('an actor: its view, its state as indented JSON, its wakes, its messages and how many it had', () => {
    const d: AgentDetail = { agent, wakes, messages, message_count: 12 };
    const text = agentText(d, NO_STYLE);
    expect(text).toContain(
      'agent follow-up/ticket-7: waiting\n  user        anonymous\n  version     1\n  mailbox     1 queued\n  next timer  2026-12-10 00:41:25Z\n  run         run_1\n',
    );
    expect(text).toContain('state\n  {\n    "log": [\n      "a"\n    ]\n  }\n');
    const rows = tableRows(text.slice(text.indexOf('WAKE')));
    expect(rows.slice(0, 3)).toEqual([
      ['WAKE', 'STATUS', 'DUE', 'FOR', 'MESSAGE'],
      ['event', 'pending', '-', 'approval {"ticket":"t-1"}', 'step_1'],
      ['reminder', 'pending', '2026-12-08 09:00:00Z', 'check, every 1h00m', '{"text":"check in"}'],
    ]);
    expect(rows.slice(3, 6)).toEqual([
      ['MESSAGE', 'STATUS', 'CREATED', 'DURATION', 'INPUT', 'RESULT'],
      [
        'step_0',
        'failed',
        '2026-12-07 00:41:18Z',
        '47ms',
        '{"text":"x"}',
        'TIMEOUT: the message took longer than 30000 ms',
      ],
      [
        'step_1',
        'waiting',
        '2026-12-07 00:41:18Z',
        '-',
        '{"text":"approved","await":"approval"}',
        '-',
      ],
    ]);
    expect(text.endsWith('(its last 2 of 12 messages: axon trace run_1 shows every step)\n')).toBe(
      true,
    );
  });

  it('an actor without wakes says "no wakes"', () => {
    const text = agentText({ agent, wakes: [], messages, message_count: 2 }, NO_STYLE);
    expect(text).toContain('\nno wakes\n');
    expect(text).not.toContain('its last');
  });

  it('a receipt names the message, the actor, its status and how to follow it; a token seen says nothing was sent', () => {
    const r = {
      message_id: 'step_9',
      step_id: 'step_9',
      run_id: 'run_1',
      status: 'queued',
      created: true,
    };
    const to = { name: 'notebook', key: 'c-1' };
    expect(receiptText(to, r, '--data-dir .axon', NO_STYLE)).toBe(
      'message step_9 to notebook/c-1: queued\nfollow it: axon agents show notebook c-1 --data-dir .axon\n',
    );
    expect(
      receiptText(to, { ...r, created: false, status: 'succeeded' }, '--url http://h', NO_STYLE),
    ).toBe(
      'message step_9 to notebook/c-1: sent before under this client token (succeeded); nothing sent again\nfollow it: axon agents show notebook c-1 --url http://h\n',
    );
    expect(
      endText(to, r, { status: 'succeeded', output: { count: 3 }, error: null }, NO_STYLE),
    ).toBe('message step_9 to notebook/c-1: succeeded\noutput: {"count":3}\n');
    expect(
      endText(
        to,
        r,
        { status: 'cancelled', output: null, error: { code: 'CANCELLED', message: 'by cancel()' } },
        NO_STYLE,
      ),
    ).toBe('message step_9 to notebook/c-1: cancelled\nerror: CANCELLED: by cancel()\n');
  });

  it('schedules: a table (a paused one has no next time) and one line each', () => {
    const paused = { ...schedule, schedule_id: 'sched_b', status: 'paused' };
    expect(tableRows(schedulesTable([schedule, paused], NO_STYLE))).toEqual([
      ['SCHEDULE', 'AGENT', 'KEY', 'CRON', 'TIMEZONE', 'OVERLAP', 'STATUS', 'NEXT', 'MESSAGE'],
      [
        'sched_nightly',
        'notebook',
        'team-a',
        '0 2 * * *',
        'Europe/Berlin',
        'skip',
        'active',
        '2026-12-08 01:00:00Z',
        '{"text":"nightly"}',
      ],
      [
        'sched_b',
        'notebook',
        'team-a',
        '0 2 * * *',
        'Europe/Berlin',
        'skip',
        'paused',
        '-',
        '{"text":"nightly"}',
      ],
    ]);
    expect(scheduleLine(schedule, NO_STYLE)).toBe(
      'schedule sched_nightly: active, next 2026-12-08 01:00:00Z (notebook/team-a, "0 2 * * *" Europe/Berlin)\n',
    );
    expect(scheduleLine(paused, NO_STYLE)).toBe(
      'schedule sched_b: paused (notebook/team-a, "0 2 * * *" Europe/Berlin)\n',
    );
  });

  it('JSON cells are one line, cut with an ellipsis; colour only on a terminal, the same text without it', () => {
    expect(jsonCell({ text: 'a\nb' })).toBe('{"text":"a\\nb"}');
    const long = jsonCell({ text: 'x'.repeat(100) });
    expect(long).toHaveLength(40);
    expect(long.endsWith('…')).toBe(true);
    const tty = createTerminalStyle({ write: () => true, isTTY: true }, {});
    const coloured = agentsTable([agent], tty);
    expect(coloured).toContain('\u001b[33mwaiting\u001b[39m');
    expect(stripStyle(coloured)).toBe(agentsTable([agent], NO_STYLE));
  });
});
