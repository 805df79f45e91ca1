/**
 * @module The logger of an `axon` process (`serve`, `worker`, `run`): pino, at
 * `AXON_LOG_LEVEL` (default `warn`, as `axon --help` says), on standard error — one JSON
 * object a line where stderr is not a terminal (a pipe, a file, a log collector), and the
 * same records as readable lines where it is (`12:04:05.123 WARN  fleet worker: … key=value`).
 * A process's own report (`axon serve: listening on …`) is plain text on stdout; stderr
 * carries the logs alone, in that one format.
 */
import { createLogger, type Logger } from '../observability/logger.js';
import { LOG_LEVEL_NAMES } from './cli-defaults.js';
import type { CliEnv } from './command-context.js';
import type { CliStream } from './cli-io.js';

/** pino's level numbers, as the readable form names them. */
const LEVEL_NAMES: Readonly<Record<number, string>> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};

/** What every pino record holds besides its own fields. */
const BASE_FIELDS: ReadonlySet<string> = new Set([
  'level',
  'time',
  'pid',
  'hostname',
  'name',
  'msg',
]);

/** A field's value in the readable form: strings bare when they have no space, else JSON. */
function shown(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  if (typeof value === 'object' && value !== null && 'message' in value && 'type' in value) {
    // An error as pino serialises it: its type and message; the stack on the lines below.
    return JSON.stringify(`${String(value.type)}: ${String(value.message)}`);
  }
  // undefined, a function: what JSON has no text for.
  return value === undefined || typeof value === 'function' ? String(value) : JSON.stringify(value);
}

/**
 * One pino JSON line as a person reads it: `HH:MM:SS.mmm LEVEL message key=value …`, then an
 * error's stack indented below. A line that is not JSON is kept as it is.
 */
export function readableLine(json: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const time = typeof record['time'] === 'number' ? new Date(record['time']) : new Date();
  const clock = time.toISOString().slice(11, 23);
  const level = (LEVEL_NAMES[record['level'] as number] ?? String(record['level'])).padEnd(5);
  const fields = Object.entries(record)
    .filter(([k]) => !BASE_FIELDS.has(k))
    .map(([k, v]) => `${k}=${shown(v)}`);
  const msg = typeof record['msg'] === 'string' ? record['msg'] : '';
  const stack = (record['err'] as { stack?: unknown } | undefined)?.stack;
  const below =
    typeof stack === 'string'
      ? `\n${stack
          .split('\n')
          .slice(1)
          .map((l) => `    ${l.trim()}`)
          .join('\n')}`
      : '';
  return `${[clock, level, msg, ...fields].filter((p) => p !== '').join(' ')}${below}\n`;
}

/** `AXON_LOG_LEVEL` of `env`, checked: `RangeError` naming the levels for another value. */
function levelOf(env: CliEnv): string {
  const value = env['AXON_LOG_LEVEL'];
  // An empty variable counts as unset (`AXON_LOG_LEVEL= axon worker …`).
  if (value === undefined || value === '') return 'warn';
  if (!LOG_LEVEL_NAMES.includes(value.toLowerCase())) {
    throw new RangeError(
      `AXON_LOG_LEVEL must be one of ${LOG_LEVEL_NAMES.join(', ')}; got ${JSON.stringify(value)}`,
    );
  }
  return value.toLowerCase();
}

/**
 * The logger of a CLI process: level from `env` (`AXON_LOG_LEVEL`, default `warn`; a
 * `RangeError` for another value), readable lines on `stderr` when it is a terminal, JSON
 * lines on standard error otherwise.
 */
export function createCliLogger(stderr: CliStream, env: CliEnv): Logger {
  const level = levelOf(env);
  if (stderr.isTTY !== true) return createLogger({ level });
  return createLogger({
    level,
    destination: {
      write: (line: string) => {
        stderr.write(readableLine(line));
      },
    },
  });
}
