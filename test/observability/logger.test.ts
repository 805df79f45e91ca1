import type { DestinationStream } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createLogger,
  DEFAULT_REDACT_KEYS,
  LOG_LEVELS,
  REDACTED,
  redactSecrets,
} from '../../src/observability/logger.js';

/** A pino destination that keeps every line, parsed. */
function collector(): {
  readonly destination: DestinationStream;
  readonly lines: Record<string, unknown>[];
} {
  const lines: Record<string, unknown>[] = [];
  return {
    lines,
    destination: {
      write(line: string) {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      },
    },
  };
}

const keys = new Set(DEFAULT_REDACT_KEYS);

describe('createLogger', () => {
  it('writes lines at or above its level to the destination', () => {
    const { destination, lines } = collector();
    const log = createLogger({ level: 'info', destination });

    log.debug('hidden');
    log.info({ user: 'ann' }, 'shown');

    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ msg: 'shown', user: 'ann', name: 'axon', level: 30 });
  });

  it('redacts api_key, authorization, token and password at the top level and keeps other fields', () => {
    const { destination, lines } = collector();
    const log = createLogger({ level: 'info', destination });

    log.info(
      {
        api_key: 'sk-1',
        authorization: 'Bearer abc',
        token: 't-1',
        password: 'hunter2',
        user: 'ann',
        n: 3,
      },
      'call',
    );

    expect(lines[0]).toMatchObject({
      api_key: REDACTED,
      authorization: REDACTED,
      token: REDACTED,
      password: REDACTED,
      user: 'ann',
      n: 3,
    });
    expect(JSON.stringify(lines)).not.toMatch(/sk-1|Bearer abc|t-1|hunter2/);
  });

  it('redacts secrets at any depth, inside nested objects and arrays', () => {
    const { destination, lines } = collector();
    const log = createLogger({ level: 'info', destination });

    log.info(
      {
        request: {
          url: 'https://api.example.com',
          headers: { Authorization: 'Bearer deep', accept: 'json' },
        },
        accounts: [
          { id: 1, password: 'p1' },
          { id: 2, creds: [{ API_KEY: 'k2', token: { value: 'nested-token' } }] },
        ],
      },
      'nested',
    );

    expect(lines[0]).toMatchObject({
      request: {
        url: 'https://api.example.com',
        headers: { Authorization: REDACTED, accept: 'json' },
      },
      accounts: [
        { id: 1, password: REDACTED },
        { id: 2, creds: [{ API_KEY: REDACTED, token: REDACTED }] },
      ],
    });
    expect(JSON.stringify(lines)).not.toMatch(/Bearer deep|p1|k2|nested-token/);
  });

  it('redacts secrets in child logger bindings, nested ones too', () => {
    const { destination, lines } = collector();
    const log = createLogger({ level: 'info', destination });

    const child = log.child({ token: 'child-token', session: { id: 's1', password: 'child-pw' } });
    child.info({ step: 'a' }, 'from child');
    child.child({ api_key: 'grandchild-key', agent: 'planner' }).info('from grandchild');

    expect(lines[0]).toMatchObject({
      token: REDACTED,
      session: { id: 's1', password: REDACTED },
      step: 'a',
    });
    expect(lines[1]).toMatchObject({ token: REDACTED, api_key: REDACTED, agent: 'planner' });
    expect(JSON.stringify(lines)).not.toMatch(/child-token|child-pw|grandchild-key/);
  });

  it('redacts extra keys given in redactKeys, case-insensitively', () => {
    const { destination, lines } = collector();
    const log = createLogger({ level: 'info', destination, redactKeys: ['SSN'] });

    log.info({ person: { ssn: '123-45-6789', name: 'ann' } }, 'person');

    expect(lines[0]).toMatchObject({ person: { ssn: REDACTED, name: 'ann' } });
  });

  it('logs a cyclic object without throwing', () => {
    const { destination, lines } = collector();
    const log = createLogger({ level: 'info', destination });
    const node: Record<string, unknown> = { id: 'n1', password: 'cyclic-pw' };
    node['self'] = node;

    log.info({ node }, 'cycle');

    expect(lines[0]).toMatchObject({ node: { id: 'n1', password: REDACTED, self: '[Circular]' } });
  });
});

describe('createLogger levels', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  const VALID = 'trace, debug, info, warn, error, fatal, silent';

  it("regression: a bad level threw pino's own error; it is a RangeError naming the option and the levels", () => {
    expect(() => createLogger({ level: 'loud', destination: collector().destination })).toThrow(
      new RangeError(`createLogger: level must be one of ${VALID}; got "loud"`),
    );
    expect(() => createLogger({ level: '', destination: collector().destination })).toThrow(
      RangeError,
    );
  });

  it('names AXON_LOG_LEVEL when the bad level comes from the environment', () => {
    vi.stubEnv('AXON_LOG_LEVEL', 'loud');
    expect(() => createLogger({ destination: collector().destination })).toThrow(
      new RangeError(`AXON_LOG_LEVEL must be one of ${VALID}; got "loud"`),
    );
  });

  it('takes AXON_LOG_LEVEL when no level is given, and warn when it is unset or empty', () => {
    vi.stubEnv('AXON_LOG_LEVEL', 'debug');
    expect(createLogger({ destination: collector().destination }).level).toBe('debug');
    vi.stubEnv('AXON_LOG_LEVEL', '');
    expect(createLogger({ destination: collector().destination }).level).toBe('warn');
    vi.stubEnv('AXON_LOG_LEVEL', undefined);
    expect(createLogger({ destination: collector().destination }).level).toBe('warn');
  });

  it.each(LOG_LEVELS.flatMap((l) => [l, l.toUpperCase()]))('accepts the level %s', (level) => {
    const log = createLogger({ level, destination: collector().destination });
    expect(log.level).toBe(level.toLowerCase());
  });
});

describe('redactSecrets', () => {
  it('returns a redacted copy and leaves the input untouched', () => {
    const input = { auth: { password: 'pw', user: 'ann' }, list: [{ token: 't' }] };

    const out = redactSecrets(input, keys);

    expect(out).toEqual({ auth: { password: REDACTED, user: 'ann' }, list: [{ token: REDACTED }] });
    expect(input).toEqual({ auth: { password: 'pw', user: 'ann' }, list: [{ token: 't' }] });
  });

  it('cuts cycles through objects and arrays', () => {
    const a: Record<string, unknown> = { name: 'a', token: 'secret' };
    const list: unknown[] = [a];
    a['list'] = list;
    list.push(list);

    const out = redactSecrets({ a }, keys);

    expect(out).toEqual({
      a: { name: 'a', token: REDACTED, list: ['[Circular]', '[Circular]'] },
    });
  });

  it('keeps a value that is referenced twice but is not a cycle', () => {
    const shared = { region: 'eu', password: 'pw' };

    const out = redactSecrets({ first: shared, second: shared }, keys);

    expect(out).toEqual({
      first: { region: 'eu', password: REDACTED },
      second: { region: 'eu', password: REDACTED },
    });
  });

  it('passes primitives through', () => {
    expect(redactSecrets('text', keys)).toBe('text');
    expect(redactSecrets(42, keys)).toBe(42);
    expect(redactSecrets(null, keys)).toBeNull();
  });
});
