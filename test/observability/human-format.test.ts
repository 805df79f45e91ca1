/**
 * The one format of figures for the CLI and the trace UI (observability/human-format.ts): the
 * forms each shows, and that the CLI's module is the same functions (not a copy).
 */
import { describe, expect, it } from 'vitest';
import * as cli from '../../src/cli/human-format.js';
import {
  elapsedMs,
  formatCost,
  formatCount,
  formatDuration,
  formatFailedSteps,
  formatRunStatus,
  formatTime,
  formatTokens,
} from '../../src/observability/human-format.js';
import { cost, duration, failedCount, failedNote, tokens, when } from '../../src/ui/format.js';

describe('human-format', () => {
  it.each([
    [null, '-'],
    [-5, '-'],
    [Number.NaN, '-'],
    [0, '0ms'],
    [850, '850ms'],
    [999.6, '1.0s'],
    [4_249, '4.2s'],
    [125_000, '2m05s'],
    [171_000, '2m51s'],
    [3_720_000, '1h02m'],
  ])('formatDuration(%s) is %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('groups counts and tokens by thousands', () => {
    expect(formatCount(1_204)).toBe('1,204');
    expect(formatTokens(1_204, 56)).toBe('1,204 in / 56 out');
    expect(formatTokens(0, 0)).toBe('0 in / 0 out');
  });

  it.each([
    [0, '$0'],
    [-1, '$0'],
    [Number.NaN, '$0'],
    [0.0123, '$0.0123'],
    [1.25, '$1.2500'],
    [12.3456789, '$12.3457'],
    // Below a cent, decimals until two significant digits show: never a bound, never $0.
    [0.000033, '$0.000033'],
    [0.0000333333, '$0.000033'],
    [0.00001, '$0.00001'],
    [0.00015, '$0.00015'],
    [0.0001, '$0.0001'],
    [0.0000999, '$0.0001'],
    [0.001234, '$0.0012'],
    [0.000000001, '$0.000000001'],
    [1e-16, '$1.0e-16'],
  ])('formatCost(%s) is %s', (usd, text) => {
    expect(formatCost(usd)).toBe(text);
  });

  it('shows a cost of $0.000033 in full, in the CLI and the trace UI alike (issue 45)', () => {
    expect(cli.formatCost(0.000033)).toBe('$0.000033');
    expect(cost(0.000033)).toBe('$0.000033');
    expect(formatCost(0.000033)).not.toContain('<');
  });

  it.each([
    ['running', 0, 'running'],
    ['running', 2, 'running · 2 failed steps'],
    ['completed', 1, 'completed · 1 failed step'],
    ['failed', 1_204, 'failed · 1,204 failed steps'],
  ])(
    'formatRunStatus(%s, %s) is %s: a run whose steps failed says so (issue 45)',
    (status, n, text) => {
      expect(formatRunStatus(status, n)).toBe(text);
    },
  );

  it("reads the same in the trace UI: its status, then the failed steps' note", () => {
    expect(formatFailedSteps(1)).toBe('1 failed step');
    const steps = [{ status: 'failed' }, { status: 'succeeded' }, { status: 'failed' }] as const;
    expect(failedCount(steps)).toBe(2);
    expect(`running${failedNote(failedCount(steps))}`).toBe(formatRunStatus('running', 2));
    expect(failedNote(0)).toBe('');
  });

  it('shows times in UTC to the second, whatever the zone', () => {
    expect(formatTime('2026-11-27T18:05:19.902Z')).toBe('2026-11-27 18:05:19Z');
    expect(formatTime('2026-11-27T19:05:19+01:00')).toBe('2026-11-27 18:05:19Z');
    expect(formatTime(null)).toBe('-');
    expect(elapsedMs('2026-11-27T18:05:19Z', '2026-11-27T18:07:24Z')).toBe(125_000);
    expect(elapsedMs(null, '2026-11-27T18:07:24Z')).toBeNull();
  });

  it('is what the CLI and the trace UI both show', () => {
    expect(cli.formatDuration).toBe(formatDuration);
    expect(cli.formatTime).toBe(formatTime);
    expect(cli.formatCost).toBe(formatCost);
    expect(cli.formatTokens).toBe(formatTokens);
    expect(cli.formatRunStatus).toBe(formatRunStatus);
    expect(duration(125_000)).toBe(cli.formatDuration(125_000));
    expect(when('2026-11-27T18:05:19Z')).toBe(cli.formatTime('2026-11-27T18:05:19Z'));
    expect(tokens(52_000, 52)).toBe('52,000 in / 52 out');
    expect(cost(0.0123)).toBe(cli.formatCost(0.0123));
  });
});
