/**
 * @module Why a connection to a store or a Redis failed, in the few words a one-line error
 * ends with: `connection refused`, `database "nope" does not exist` — never a stack.
 */

/** Node's connection errors, by code, as a person reads them. */
const SYSTEM_CAUSES: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ETIMEDOUT: 'connection timed out',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'the host name could not be looked up',
  EHOSTUNREACH: 'no route to the host',
  ENETUNREACH: 'no route to the network',
  EACCES: 'permission denied',
};

/** The `code` of `err`, or of the first error of an `AggregateError` that has one. */
function codeOf(err: unknown): string | undefined {
  if (err instanceof AggregateError) {
    for (const e of err.errors) {
      const code = codeOf(e);
      if (code !== undefined) return code;
    }
  }
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * Why a connection failed, in one line: a system error by its meaning (`ECONNREFUSED` →
 * `connection refused`), else the first line of the server's or the client's message
 * (`role "nobody" does not exist`, `WRONGPASS invalid username-password pair ...`).
 *
 * @example
 * connectionCause(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }));
 * // 'connection refused'
 */
export function connectionCause(err: unknown): string {
  const code = codeOf(err);
  const known = code === undefined ? undefined : SYSTEM_CAUSES[code];
  if (known !== undefined) return known;
  const message = err instanceof Error ? err.message : String(err);
  const line = message.split('\n')[0]?.trim() ?? '';
  return line === '' ? (code ?? 'unknown error') : line;
}
