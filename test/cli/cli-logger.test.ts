import { describe, expect, it } from 'vitest';
import { createCliLogger, readableLine } from '../../src/cli/cli-logger.js';

/** A terminal's stderr that keeps what is written. */
function terminal(): { stream: { isTTY: true; write(t: string): boolean }; text(): string } {
  const out: string[] = [];
  return {
    stream: {
      isTTY: true,
      write: (t: string) => {
        out.push(t);
        return true;
      },
    },
    text: () => out.join(''),
  };
}

describe('the logs of an axon process on a terminal', () => {
  it('are readable lines: time, level, message, fields; the secrets redacted as in JSON', () => {
    const tty = terminal();
    const log = createCliLogger(tty.stream, {});
    log.info({ step_id: 'stp_1' }, 'not shown at the default level (warn)');
    log.warn({ step_id: 'stp_1', authorization: 'Bearer s3cret' }, 'fleet worker: cancel');
    const lines = tty.text().split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3} WARN {2}fleet worker: cancel step_id=stp_1 authorization=\[REDACTED\]$/,
    );
    expect(tty.text()).not.toContain('s3cret');
    expect(tty.text()).not.toContain('{"level"');
  });

  it('follow AXON_LOG_LEVEL, and refuse a level that is not one', () => {
    const tty = terminal();
    createCliLogger(tty.stream, { AXON_LOG_LEVEL: 'INFO' }).info('shown');
    expect(tty.text()).toMatch(/ INFO {2}shown\n$/);
    expect(() => createCliLogger(tty.stream, { AXON_LOG_LEVEL: 'loud' })).toThrow(
      'AXON_LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent; got "loud"',
    );
  });

  it('show an error by its type and message, its stack indented below', () => {
    const err = new Error('connection refused');
    const line = readableLine(
      JSON.stringify({
        level: 50,
        time: 0,
        msg: 'the queue failed',
        err: { type: 'Error', message: err.message, stack: err.stack },
      }),
    );
    const [first, second] = line.split('\n');
    expect(first).toBe('00:00:00.000 ERROR the queue failed err="Error: connection refused"');
    expect(second).toMatch(/^ {4}at /);
  });
});
