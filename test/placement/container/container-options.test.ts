/**
 * Container placement's options (issue 31): isolating defaults, each limit a flag the engine
 * gets, and every bad value refused with a RangeError naming it. The flags' effect is proven
 * from inside real containers in container-placement.int.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../../src/actors/define-agent.js';
import {
  CONTAINER_DEFAULTS,
  containerRunFlags,
  resolveContainerOptions,
} from '../../../src/placement/container/container-options.js';
import { defineTool } from '../../../src/tools/define-tool.js';

const binds = [{ host: '/opt/entry.mjs', at: '/opt/axon/container-entry.mjs' }];

describe('container options', () => {
  it('isolate by default: no network, read-only root, small limits, nobody, no privileges', () => {
    const flags = containerRunFlags(
      'podman',
      resolveContainerOptions(),
      'box-1',
      { a: 'b' },
      binds,
      [],
    );
    expect(flags).toEqual(
      expect.arrayContaining([
        '--pull=never',
        '--network=none',
        '--read-only',
        '--tmpfs=/tmp:rw,size=16m,mode=1777,U',
        '--memory=256m',
        '--memory-swap=256m',
        '--cpus=1',
        '--pids-limit=64',
        '--ulimit=nofile=1024:1024',
        '--user=65534:65534',
        '--security-opt=no-new-privileges',
        '--cap-drop=all',
        '--name=box-1',
        '--label=a=b',
        '--volume=/opt/entry.mjs:/opt/axon/container-entry.mjs:ro',
      ]),
    );
    // docker has no `U` tmpfs option: the image's own /tmp must be 1777 there.
    expect(containerRunFlags('docker', resolveContainerOptions(), 'b', {}, [], [])).toContain(
      '--tmpfs=/tmp:rw,size=16m,mode=1777',
    );
  });

  it('each limit is loosened only by naming it', () => {
    const o = resolveContainerOptions({
      memoryMb: 512,
      cpus: 0.5,
      pids: 128,
      tmpfsMb: 64,
      nofile: 4096,
      user: '1000:1000',
      network: 'slirp4netns',
    });
    const flags = containerRunFlags(
      'podman',
      o,
      'b',
      {},
      [],
      [
        { path: '/srv/a', writable: false },
        { path: '/srv/b', writable: true },
      ],
    );
    expect(flags).toEqual(
      expect.arrayContaining([
        '--memory=512m',
        '--memory-swap=512m',
        '--cpus=0.5',
        '--pids-limit=128',
        '--tmpfs=/tmp:rw,size=64m,mode=1777,U',
        '--ulimit=nofile=4096:4096',
        '--user=1000:1000',
        '--network=slirp4netns',
        '--volume=/srv/a:/srv/a:ro',
        '--volume=/srv/b:/srv/b:rw',
      ]),
    );
    expect(o).toMatchObject({ warm: CONTAINER_DEFAULTS.warm, reuse: true, maxContainers: 4 });
  });

  it.each([
    [{ memoryMb: 8 }, /container.memoryMb must be a whole number >= 16/],
    [{ pids: 1.5 }, /container.pids must be a whole number/],
    [{ cpus: 0 }, /container.cpus must be a number > 0/],
    [{ user: '0' }, /must not be root/],
    [{ user: '0:0' }, /must not be root/],
    [{ user: 'nobody' }, /container.user must be "uid" or "uid:gid"/],
    [{ engine: 'lxc' }, /container.engine must be one of podman, docker/],
    [{ image: '--privileged' }, /container.image must match/],
    [{ network: 'host --privileged' }, /container.network must match/],
    [{ runtime: 'runc;rm' }, /container.runtime must match/],
    [
      { warm: 5, maxContainers: 2 },
      /container.warm \(5\) must not exceed container.maxContainers \(2\)/,
    ],
    [{ reuse: 'yes' }, /container.reuse must be true or false/],
    [{ memory: 10 }, /container.memory is not an option/],
  ])('refuses %j', (given, message) => {
    expect(() => resolveContainerOptions(given as never)).toThrow(message);
  });

  it('refuses a mount the engine could not carry', () => {
    expect(() =>
      containerRunFlags(
        'podman',
        resolveContainerOptions(),
        'b',
        {},
        [],
        [{ path: '/srv/a:/etc', writable: true }],
      ),
    ).toThrow(/cannot mount/);
  });
});

describe('declaring container behaviours', () => {
  const module = new URL('../../fixtures/container-agents.mjs', import.meta.url).href;

  it('an agent and a tool name a JavaScript module by URL or absolute path', () => {
    const agent = defineAgent({ name: 'a', placement: 'container', module, export: 'echo' });
    expect(agent).toMatchObject({ placement: 'container', export: 'echo' });
    expect(agent.module).toMatch(/^\/.*container-agents\.mjs$/);
    const tool = defineTool({
      name: 't',
      description: 'd',
      input: z.object({}),
      placement: 'container',
      module: agent.module,
      export: 'shout',
    });
    expect(tool.container).toEqual({ module: agent.module, export: 'shout' });
  });

  it.each([
    [{ module: './agents.mjs' }, /must be a file URL or an absolute path/],
    [{ module: '/srv/agents.ts' }, /must be JavaScript/],
    [{ module: '' }, /needs "module"/],
    [{ export: '' }, /needs "export"/],
  ])('refuses %j', (change, message) => {
    const spec = { name: 'a', placement: 'container' as const, module, export: 'echo', ...change };
    expect(() => defineAgent(spec)).toThrow(message);
    expect(() => defineTool({ ...spec, description: 'd', input: z.object({}) })).toThrow(message);
  });
});
