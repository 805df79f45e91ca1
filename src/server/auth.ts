/**
 * @module Who calls `axon serve` (API.md, "Auth"): `Authorization: Bearer <key>`, each key
 * mapped to an identity (`user_id`) and permissions. With no keys configured every caller is
 * `anonymous` with every permission (and the server binds to 127.0.0.1 only, answering
 * loopback `Host` names only). Keys are compared in constant time, by their sha256.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { HttpError } from './http-errors.js';

/**
 * What a key may do: `read` (GET), `write` (create, submit, cancel), `admin` (every user's
 * runs, and `/metrics`), `metrics` (`/metrics` alone: a scraper's key).
 */
export type Permission = 'read' | 'write' | 'admin' | 'metrics';

/** Every permission a key can be given. */
export const PERMISSIONS = ['read', 'write', 'admin', 'metrics'] as const;

/** A configured API key. */
export const apiKeySchema = z.strictObject({
  /** The secret, at least 16 characters. */
  key: z.string().min(16),
  user_id: z.string().min(1).max(256),
  /** Default `read` and `write`: the caller's own runs. */
  permissions: z.array(z.enum(PERMISSIONS)).min(1).default(['read', 'write']),
});
export type ApiKey = z.input<typeof apiKeySchema>;

/** A caller, once its key is checked. */
export interface Caller {
  readonly userId: string;
  readonly permissions: ReadonlySet<Permission>;
}

/** The caller of a server without keys. */
export const ANONYMOUS: Caller = {
  userId: 'anonymous',
  permissions: new Set<Permission>(PERMISSIONS),
};

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

/** The callers of a server by key; see the module. */
export class KeyRing {
  readonly #keys: { readonly digest: Buffer; readonly caller: Caller }[];

  constructor(keys: readonly ApiKey[]) {
    this.#keys = keys.map((k) => {
      const key = apiKeySchema.parse(k);
      return {
        digest: digest(key.key),
        caller: { userId: key.user_id, permissions: new Set(key.permissions) },
      };
    });
  }

  /** True when keys are configured (requests must carry one). */
  get enabled(): boolean {
    return this.#keys.length > 0;
  }

  /**
   * The caller of a request with `authorization` (the header), or `UNAUTHORIZED` (401) when
   * keys are configured and it carries no valid one.
   */
  caller(authorization: string | undefined): Caller {
    if (!this.enabled) return ANONYMOUS;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!m) throw new HttpError(401, 'UNAUTHORIZED', 'a Bearer key is required');
    const given = digest(m[1] as string);
    // Every key is compared, so the time taken says nothing of which one came close.
    let found: Caller | null = null;
    for (const k of this.#keys) if (timingSafeEqual(k.digest, given)) found ??= k.caller;
    if (!found) throw new HttpError(401, 'UNAUTHORIZED', 'the key is not valid');
    return found;
  }
}

/** Throws `FORBIDDEN` (403) unless `caller` has `permission`. */
export function requirePermission(caller: Caller, permission: Permission): void {
  if (!caller.permissions.has(permission)) {
    throw new HttpError(403, 'FORBIDDEN', `this key may not ${permission}`, { permission });
  }
}

/** Whether `caller` may see a run owned by `owner` (API.md: only its own, 404 otherwise). */
export function mayUse(caller: Caller, owner: string | null): boolean {
  return caller.permissions.has('admin') || owner === caller.userId;
}

/**
 * Keys from the environment: `AXON_API_KEYS` as `key:user_id[:perm+perm]` items separated by
 * commas (`perm` one of `read`, `write`, `admin`, `metrics`). Throws `RangeError` naming the
 * bad item.
 */
export function keysFromEnv(value: string | undefined): ApiKey[] {
  if (value === undefined || value.trim() === '') return [];
  return value.split(',').map((item, i) => {
    const [key, userId, perms] = item.trim().split(':');
    const parsed = apiKeySchema.safeParse({
      key,
      user_id: userId,
      ...(perms ? { permissions: perms.split('+') } : {}),
    });
    if (!parsed.success) {
      throw new RangeError(
        `AXON_API_KEYS item ${i + 1}: expected key:user_id[:read+write+admin+metrics] with a key of at least 16 characters`,
      );
    }
    return parsed.data;
  });
}
