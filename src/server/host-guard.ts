/**
 * @module Which `Host` a server answers: the guard against DNS rebinding. A page in a
 * browser can make a name it controls resolve to 127.0.0.1 and then call a server on the
 * user's machine as if it were its own origin; the `Host` header still carries its name.
 * So a server without keys answers only requests whose `Host` is a loopback name or address
 * (`localhost`, `127.0.0.1`, `[::1]`, with any port: the name is what rebinding changes, and
 * a local proxy or relay may stand on another port); a server with keys answers every
 * `Host` unless `allowedHosts` lists the ones it may. Refusals are 403 `FORBIDDEN`.
 */
import { HttpError } from './http-errors.js';

/** The names and addresses that always mean this machine. */
const LOOPBACK_NAMES: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);
/** An allowed host as written: a name (any port) or `name:port`. */
const ALLOWED = /^(?:\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::\d{1,5})?$/;

/** A `Host` header split into its name (lower case) and port (`null` when absent). */
function parseHost(host: string): { readonly name: string; readonly port: number | null } | null {
  const m = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(host.trim().toLowerCase());
  if (!m) return null;
  return { name: m[1] as string, port: m[2] === undefined ? null : Number(m[2]) };
}

/**
 * Checks the `allowedHosts` option: each a host name or address, with a port or not.
 * Throws `TypeError` naming a bad one.
 */
export function checkAllowedHosts(hosts: readonly string[]): readonly string[] {
  if (!Array.isArray(hosts)) throw new TypeError('createServer: allowedHosts must be an array');
  return hosts.map((h) => {
    if (typeof h !== 'string' || !ALLOWED.test(h.toLowerCase())) {
      throw new TypeError(
        `createServer: allowedHosts: ${JSON.stringify(h)} is not a host name or address (with an optional :port)`,
      );
    }
    return h.toLowerCase();
  });
}

/**
 * The guard of one server: the function returned throws 403 `FORBIDDEN` for a `Host` it
 * does not answer.
 *
 * - `keyed: false`: loopback names (any port), and `allowed` ones;
 * - `keyed: true`: any `Host` when `allowed` is empty, else only `allowed` ones.
 */
export function hostGuard(
  keyed: boolean,
  allowed: readonly string[],
): (host: string | undefined) => void {
  // An entry without a port allows its name on any port; one with a port, that pair only.
  const names = new Set<string>();
  const exact = new Set<string>();
  for (const entry of allowed) {
    const parsed = parseHost(entry);
    if (parsed?.port === null) names.add(parsed.name);
    else if (parsed) exact.add(`${parsed.name}:${parsed.port}`);
  }
  if (keyed && allowed.length === 0) return () => undefined;
  return (host) => {
    const parsed = host === undefined ? null : parseHost(host);
    if (parsed) {
      const { name, port: given } = parsed;
      const full = given === null ? name : `${name}:${given}`;
      if (exact.has(full) || names.has(name)) return;
      if (!keyed && LOOPBACK_NAMES.has(name)) return;
    }
    const shown = (host ?? '').slice(0, 128);
    throw new HttpError(
      403,
      'FORBIDDEN',
      keyed
        ? `this server does not answer the Host "${shown}" (allowed_hosts lists the ones it does)`
        : `this server has no API keys, so it answers only loopback Host names (localhost, 127.0.0.1, [::1]), not "${shown}": a guard against DNS rebinding; configure keys, or list the name in allowed_hosts`,
      { host: shown, reason: 'host_not_allowed' },
    );
  };
}
