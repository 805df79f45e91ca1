/** @module pino logging with secrets redacted at any depth. */
import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

/** Keys whose values never reach a log line (compared case-insensitively). */
export const DEFAULT_REDACT_KEYS: readonly string[] = [
  'api_key',
  'apikey',
  'x-api-key',
  'authorization',
  'proxy-authorization',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'password',
  'passwd',
  'secret',
  'client_secret',
  'cookie',
  'set-cookie',
];

/** What a redacted value is replaced with. */
export const REDACTED = '[REDACTED]';

/**
 * A copy of `value` in which every property named in `keys` (lower-case) is replaced by
 * {@link REDACTED}, at any depth. A cycle (an object inside itself) is cut; an object that
 * is merely referenced twice is kept both times.
 */
export function redactSecrets(
  value: unknown,
  keys: ReadonlySet<string>,
  ancestors = new WeakSet<object>(),
): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (ancestors.has(value)) return '[Circular]';
  if (value instanceof Error)
    return { type: value.name, message: value.message, stack: value.stack };
  ancestors.add(value);
  try {
    if (Array.isArray(value)) return value.map((v) => redactSecrets(v, keys, ancestors));
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = keys.has(k.toLowerCase()) ? REDACTED : redactSecrets(v, keys, ancestors);
    }
    return out;
  } finally {
    ancestors.delete(value);
  }
}

/**
 * pino applies `formatters.bindings` to the root logger only, so `child()` redacts the
 * bindings it is given. pino makes a child with `Object.create(parent)`, so overriding the
 * method once on the root covers children at every depth; `this` is the logger it is
 * called on.
 */
function redactChildren(logger: Logger, keys: ReadonlySet<string>): Logger {
  type ChildFn = (
    this: Logger,
    bindings: pino.Bindings,
    options?: pino.ChildLoggerOptions,
  ) => Logger;
  const original = Reflect.get(logger, 'child') as unknown as ChildFn;
  function child(this: Logger, bindings: pino.Bindings, options?: pino.ChildLoggerOptions): Logger {
    return Reflect.apply(original, this, [redactSecrets(bindings, keys), options]) as Logger;
  }
  Reflect.set(logger, 'child', child);
  return logger;
}

/** The levels {@link createLogger} accepts (in any case), from the most to the least verbose. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

const isLogLevel = (level: string): level is LogLevel =>
  (LOG_LEVELS as readonly string[]).includes(level);

/** `value` as a level, or a `RangeError` naming `name` (where it came from) and the levels. */
function checkLevel(name: string, value: string): LogLevel {
  // pino takes its own level names in any case but one ('SILENT'): take them all alike.
  const lower = value.toLowerCase();
  if (isLogLevel(lower)) return lower;
  throw new RangeError(
    `${name} must be one of ${LOG_LEVELS.join(', ')}; got ${JSON.stringify(value)}`,
  );
}

/** The level to log at: `level` if given, else `AXON_LOG_LEVEL` if set, else `warn`. */
function resolveLevel(level: string | undefined): LogLevel {
  if (level !== undefined) return checkLevel('createLogger: level', level);
  const fromEnv = process.env['AXON_LOG_LEVEL'];
  // An empty variable counts as unset (`AXON_LOG_LEVEL= axon run …`).
  return fromEnv ? checkLevel('AXON_LOG_LEVEL', fromEnv) : 'warn';
}

/** Options of {@link createLogger}. */
export interface CreateLoggerOptions {
  /**
   * Minimum level, one of {@link LOG_LEVELS}; default `AXON_LOG_LEVEL` or `warn`. Any other
   * value, here or in `AXON_LOG_LEVEL`, is a `RangeError` naming the valid levels.
   */
  readonly level?: string;
  /** Keys to redact in addition to {@link DEFAULT_REDACT_KEYS}. */
  readonly redactKeys?: readonly string[];
  /** Where lines go; default standard error, so logs never mix with streamed output. */
  readonly destination?: pino.DestinationStream;
}

/**
 * A pino logger whose structured fields (and child bindings) have secrets redacted at any
 * depth. Message strings are not inspected: keep secrets out of them. A level that is not
 * one of {@link LOG_LEVELS} throws a `RangeError`.
 *
 * @example
 * const log = createLogger({ level: 'info' });
 * log.info({ request: { headers: { authorization: 'Bearer x' } } }, 'calling'); // authorization: "[REDACTED]"
 */
export function createLogger(options: CreateLoggerOptions = {}): Logger {
  const keys = new Set(
    [...DEFAULT_REDACT_KEYS, ...(options.redactKeys ?? [])].map((k) => k.toLowerCase()),
  );
  const pinoOptions: LoggerOptions = {
    name: 'axon',
    level: resolveLevel(options.level),
    formatters: {
      log: (obj) => redactSecrets(obj, keys) as Record<string, unknown>,
      bindings: (b) => redactSecrets(b, keys) as Record<string, unknown>,
    },
  };
  const destination = options.destination ?? pino.destination({ dest: 2, sync: true });
  return redactChildren(pino(pinoOptions, destination), keys);
}

/** A logger that writes nothing: the default of contexts made without one. */
export const SILENT_LOGGER: Logger = pino({ level: 'silent' });
