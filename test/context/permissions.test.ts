import { describe, expect, it } from 'vitest';
import { type ExecContext } from '../../src/context/exec-context.js';
import { createContext } from '../../src/context/create-context.js';
import {
  canUseAgent,
  canUseTool,
  createPermissions,
  hasRole,
  narrowPermissions,
  OPEN_PERMISSIONS,
  type PermissionsNarrowing,
} from '../../src/context/permissions.js';
import { WideningError } from '../../src/errors/widening-error.js';

/** Runs `fn`, expecting a WideningError, and returns it. */
function wideningFrom(fn: () => unknown): WideningError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(WideningError);
    return err as WideningError;
  }
  throw new Error('expected a WideningError, nothing was thrown');
}

function restricted(): ExecContext {
  return createContext({
    permissions: {
      roles: ['planner', 'reader'],
      allowedTools: ['search', 'add'],
      allowedAgents: ['calendar', 'mail'],
    },
  });
}

describe('createPermissions', () => {
  it('is open by default (every tool, every agent) with no roles', () => {
    const p = createPermissions();
    expect(p).toEqual(OPEN_PERMISSIONS);
    expect(canUseTool(p, 'anything')).toBe(true);
    expect(canUseAgent(p, 'anyone')).toBe(true);
    expect(hasRole(p, 'admin')).toBe(false);
  });

  it('an empty list allows nothing, unlike null', () => {
    const p = createPermissions({ allowedTools: [], allowedAgents: [] });
    expect(canUseTool(p, 'search')).toBe(false);
    expect(canUseAgent(p, 'calendar')).toBe(false);
  });

  it('copies and freezes its input so later edits do not leak in', () => {
    const tools = ['search'];
    const p = createPermissions({ allowedTools: tools });
    tools.push('rm_rf');
    expect(canUseTool(p, 'rm_rf')).toBe(false);
    expect(Object.isFrozen(p)).toBe(true);
    expect(Object.isFrozen(p.allowedTools)).toBe(true);
  });
});

describe('narrowPermissions', () => {
  it('returns the parent unchanged when nothing is asked', () => {
    const parent = createPermissions({ roles: ['r'], allowedTools: ['t'] });
    expect(narrowPermissions(parent, undefined)).toBe(parent);
    expect(narrowPermissions(parent, {})).toEqual(parent);
  });

  it('narrows from "any" to a list', () => {
    const child = narrowPermissions(OPEN_PERMISSIONS, { allowedTools: ['search'] });
    expect(canUseTool(child, 'search')).toBe(true);
    expect(canUseTool(child, 'delete')).toBe(false);
  });
});

describe('ExecContext.child permissions only narrow', () => {
  it.each<[string, PermissionsNarrowing, string]>([
    ['a tool the parent lacks', { allowedTools: ['search', 'shell'] }, 'permissions.allowedTools'],
    ['an agent the parent lacks', { allowedAgents: ['bank'] }, 'permissions.allowedAgents'],
    ['a role the parent lacks', { roles: ['reader', 'admin'] }, 'permissions.roles'],
    [
      'any tool (null) when the parent has a list',
      { allowedTools: null },
      'permissions.allowedTools',
    ],
    [
      'any agent (null) when the parent has a list',
      { allowedAgents: null },
      'permissions.allowedAgents',
    ],
  ])('asking for %s throws WideningError naming the field', (_what, narrowing, field) => {
    const parent = restricted();
    const err = wideningFrom(() => parent.child('worker', { permissions: narrowing }));
    expect(err.field).toBe(field);
    expect(err.code).toBe('FORBIDDEN');
    expect(err.details).toMatchObject({ field });
  });

  it('a child of a child cannot win back what its parent gave up', () => {
    const root = restricted();
    const mid = root.child('mid', { permissions: { allowedTools: ['search'] } });
    const err = wideningFrom(() => mid.child('leaf', { permissions: { allowedTools: ['add'] } }));
    expect(err.field).toBe('permissions.allowedTools');
    expect(
      wideningFrom(() => mid.child('leaf', { permissions: { allowedTools: null } })).field,
    ).toBe('permissions.allowedTools');
  });

  it('an empty list cannot be widened to any entry', () => {
    const root = createContext({ permissions: { allowedAgents: [] } });
    const err = wideningFrom(() => root.child('c', { permissions: { allowedAgents: ['mail'] } }));
    expect(err.field).toBe('permissions.allowedAgents');
  });

  it('narrowing within bounds works and the checks reflect it', () => {
    const parent = restricted();
    const child = parent.child('worker', {
      permissions: { roles: ['reader'], allowedTools: ['search'], allowedAgents: [] },
    });
    expect(child.canUseTool('search')).toBe(true);
    expect(child.canUseTool('add')).toBe(false);
    expect(child.canUseAgent('calendar')).toBe(false);
    expect(child.hasRole('reader')).toBe(true);
    expect(child.hasRole('planner')).toBe(false);
    // The parent keeps what it had.
    expect(parent.canUseTool('add')).toBe(true);
    expect(parent.canUseAgent('calendar')).toBe(true);
    expect(parent.hasRole('planner')).toBe(true);
  });

  it('omitted fields are inherited, named ones replaced', () => {
    const parent = restricted();
    const child = parent.child('worker', { permissions: { allowedTools: ['add'] } });
    expect(child.permissions.roles).toEqual(['planner', 'reader']);
    expect(child.permissions.allowedAgents).toEqual(['calendar', 'mail']);
    expect(child.permissions.allowedTools).toEqual(['add']);
    const plain = parent.child('plain');
    expect(plain.permissions).toEqual(parent.permissions);
  });

  it('an open parent lets a child pick any list, and null stays null', () => {
    const root = createContext();
    const child = root.child('c', { permissions: { allowedTools: ['x'], allowedAgents: null } });
    expect(child.canUseTool('x')).toBe(true);
    expect(child.canUseTool('y')).toBe(false);
    expect(child.canUseAgent('whoever')).toBe(true);
  });

  it('a refused child does not change the parent', () => {
    const parent = restricted();
    expect(() => parent.child('c', { permissions: { allowedTools: ['shell'] } })).toThrow(
      WideningError,
    );
    expect(parent.canUseTool('shell')).toBe(false);
    expect(parent.permissions.allowedTools).toEqual(['search', 'add']);
  });
});
