/**
 * A container serves the steps of one launch key (issue 45 built the key without JSON):
 * launches that differ in anything a container holds — behaviour, module, export, mounts and
 * their mode — never share a key, however their parts are cut.
 */
import { describe, expect, it } from 'vitest';
import {
  launchKey,
  type ContainerLaunch,
} from '../../../src/placement/container/container-launch.js';

const base: ContainerLaunch = {
  kind: 'agent',
  name: 'a',
  module: '/srv/m.mjs',
  export: 'run',
  mounts: [],
};

describe('launchKey', () => {
  it('is the same for the same launch, built again', () => {
    expect(launchKey({ ...base, mounts: [] })).toBe(launchKey(base));
  });

  it('differs when any part differs, or where one part ends and the next begins', () => {
    const keys = [
      base,
      { ...base, kind: 'tool' as const },
      { ...base, name: 'b' },
      { ...base, module: '/srv/n.mjs' },
      { ...base, export: 'other' },
      // Joined as they are, these two would read the same: a/srv/m.mjs.
      { ...base, name: 'a/srv', module: '/m.mjs' },
      { ...base, mounts: [{ path: '/data', writable: false }] },
      { ...base, mounts: [{ path: '/data', writable: true }] },
      {
        ...base,
        mounts: [
          { path: '/data', writable: true },
          { path: '/more', writable: true },
        ],
      },
    ].map(launchKey);
    expect(new Set(keys).size).toBe(keys.length);
  });
});
