/** @module What a context may use: roles, tools and agents, and how they narrow. */
import { WideningError } from '../errors/widening-error.js';

/**
 * The permissions a context carries. `null` for a list means "any"; an empty list means
 * "none".
 */
export interface Permissions {
  readonly roles: readonly string[];
  readonly allowedTools: readonly string[] | null;
  readonly allowedAgents: readonly string[] | null;
}

/** A request to narrow permissions for a child context; omitted fields are inherited. */
export interface PermissionsNarrowing {
  readonly roles?: readonly string[];
  readonly allowedTools?: readonly string[] | null;
  readonly allowedAgents?: readonly string[] | null;
}

/** Everything allowed, no roles: the permissions of a context created without any. */
export const OPEN_PERMISSIONS: Permissions = Object.freeze({
  roles: Object.freeze([]),
  allowedTools: null,
  allowedAgents: null,
});

/** Builds frozen permissions, filling omitted fields from {@link OPEN_PERMISSIONS}. */
export function createPermissions(p: PermissionsNarrowing = {}): Permissions {
  return Object.freeze({
    roles: Object.freeze([...(p.roles ?? [])]),
    allowedTools:
      p.allowedTools === undefined || p.allowedTools === null
        ? null
        : Object.freeze([...p.allowedTools]),
    allowedAgents:
      p.allowedAgents === undefined || p.allowedAgents === null
        ? null
        : Object.freeze([...p.allowedAgents]),
  });
}

/** True when `p` lets its holder call the tool `name`. */
export function canUseTool(p: Permissions, name: string): boolean {
  return p.allowedTools === null || p.allowedTools.includes(name);
}

/** True when `p` lets its holder invoke or delegate to the agent `name`. */
export function canUseAgent(p: Permissions, name: string): boolean {
  return p.allowedAgents === null || p.allowedAgents.includes(name);
}

/** True when `p` has the role. */
export function hasRole(p: Permissions, role: string): boolean {
  return p.roles.includes(role);
}

function narrowList(
  field: string,
  parent: readonly string[] | null,
  requested: readonly string[] | null | undefined,
): readonly string[] | null {
  if (requested === undefined) return parent;
  if (requested === null) {
    if (parent !== null) throw new WideningError(field, 'any', parent);
    return null;
  }
  if (parent !== null) {
    const extra = requested.filter((name) => !parent.includes(name));
    if (extra.length > 0) throw new WideningError(field, extra, parent);
  }
  return Object.freeze([...requested]);
}

/**
 * Permissions for a child: each requested list must be a subset of the parent's.
 * Throws {@link WideningError} naming the field when a request would widen.
 */
export function narrowPermissions(
  parent: Permissions,
  req: PermissionsNarrowing | undefined,
): Permissions {
  if (!req) return parent;
  const roles = narrowList('permissions.roles', parent.roles, req.roles) ?? [];
  return Object.freeze({
    roles,
    allowedTools: narrowList('permissions.allowedTools', parent.allowedTools, req.allowedTools),
    allowedAgents: narrowList('permissions.allowedAgents', parent.allowedAgents, req.allowedAgents),
  });
}
