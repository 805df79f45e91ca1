/**
 * The pieces every table of the CLI is made of: the aligned table, the figures' formats and
 * the colour switch (a terminal, and NO_COLOR unset or empty).
 */
import { describe, expect, it } from 'vitest';
import type { CliStream } from '../../src/cli/cli-io.js';
import { formatCost, formatDuration, formatTime } from '../../src/cli/human-format.js';
import { formatTable } from '../../src/cli/table.js';
import { colourEnabled, createTerminalStyle, stripStyle } from '../../src/cli/terminal-style.js';

describe('formatTable', () => {
  it('aligns columns two spaces apart, numbers to the right, with no trailing spaces', () => {
    const text = formatTable(
      [{ header: 'NAME' }, { header: 'TOKENS', align: 'right' }, { header: 'NOTE' }],
      [
        ['planner', '1,204', 'ok'],
        ['search_flights', '7', ''],
        ['calendar → x', '12'],
      ],
    );
    expect(text).toBe(
      [
        'NAME            TOKENS  NOTE',
        'planner          1,204  ok',
        'search_flights       7',
        'calendar → x        12',
        '',
      ].join('\n'),
    );
  });

  it('measures painted cells by their text: colour does not shift the columns', () => {
    const style = createTerminalStyle({ write: () => true, isTTY: true }, {});
    const columns = [{ header: 'STATUS' }, { header: 'COST', align: 'right' as const }];
    const painted = formatTable(
      columns,
      [
        [
          { text: 'failed', paint: style.red },
          { text: '$0.0200', paint: style.bold },
        ],
        [{ text: 'succeeded', paint: style.green }, '$0'],
      ],
      { header: style.bold },
    );
    expect(painted).toContain('\u001b[31mfailed\u001b[39m');
    expect(stripStyle(painted)).toBe(
      formatTable(columns, [
        ['failed', '$0.0200'],
        ['succeeded', '$0'],
      ]),
    );
  });

  it('keeps a row on one line: newlines in a cell become spaces', () => {
    expect(formatTable([{ header: 'ERROR' }], [['line one\nline two']])).toBe(
      'ERROR\nline one line two\n',
    );
  });
});

describe('figures', () => {
  it.each([
    [null, '-'],
    [0, '0ms'],
    [412.4, '412ms'],
    [3_249, '3.2s'],
    [125_000, '2m05s'],
    [3_840_000, '1h04m'],
  ])('formatDuration(%s) is %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it.each([
    [0, '$0'],
    [0.00001, '$0.00001'],
    [0.000033, '$0.000033'],
    [0.02, '$0.0200'],
    [12.3456789, '$12.3457'],
  ])('formatCost(%s) is %s', (usd, text) => {
    expect(formatCost(usd)).toBe(text);
  });

  it('formatTime shows UTC to the second', () => {
    expect(formatTime('2026-11-26T03:44:26.902Z')).toBe('2026-11-26 03:44:26Z');
    expect(formatTime(null)).toBe('-');
  });
});

describe('colourEnabled', () => {
  const tty: CliStream = { write: () => true, isTTY: true };
  const pipe: CliStream = { write: () => true };
  it.each<[CliStream, Record<string, string>, boolean]>([
    [tty, {}, true],
    [tty, { NO_COLOR: '1' }, false],
    [tty, { NO_COLOR: '' }, true],
    [tty, { TERM: 'dumb' }, false],
    [pipe, {}, false],
    [{ write: () => true, isTTY: false }, {}, false],
  ])('stream %j with env %j: %s', (stream, env, on) => {
    expect(colourEnabled(stream, env)).toBe(on);
    expect(createTerminalStyle(stream, env).red('x') !== 'x').toBe(on);
  });
});
