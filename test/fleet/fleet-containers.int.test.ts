/**
 * Container placement on a fleet (issue 31): a replica advertises `container` among its
 * pool's placements only when its runtime offers container placement and an engine works
 * on its host; a step of a container agent goes only to such a pool, and is refused
 * `POOL_UNAVAILABLE` when there is none.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { useInProcessFleets } from '../support/fleet-inprocess.js';

const { prefix: fleetPrefix, replica, api } = useInProcessFleets('fleet-containers');
const image = process.env['AXON_TEST_IMAGE'] ?? 'localhost/axon-node:test';
const echo = defineAgent({
  name: 'echo',
  placement: 'container',
  module: new URL('../fixtures/container-agents.mjs', import.meta.url).href,
  export: 'echo',
});

async function submitEcho(rt: Runtime) {
  const { flow } = await rt.createFlow({ name: 'boxed' });
  const run = await rt.createRun(flow.flow_id, {});
  return rt.submitStep(run.run_id, {
    type: 'agent',
    input: { agent: 'echo', message: 'from afar' },
  });
}

describe('container placement on a fleet', () => {
  it('a container agent step goes to the pool that offers containers, and nowhere else', async () => {
    const prefix = fleetPrefix();
    await replica(prefix, 'plain');
    // Offers containers in its runtime, but its engine does not work: docker, with no daemon
    // at the address it is given (installed or not, a daemon of this host running or not).
    const daemon = process.env['DOCKER_HOST'];
    process.env['DOCKER_HOST'] = `unix://${join(tmpdir(), 'axon-no-docker-daemon.sock')}`;
    onTestFinished(() => {
      if (daemon === undefined) delete process.env['DOCKER_HOST'];
      else process.env['DOCKER_HOST'] = daemon;
    });
    await replica(prefix, 'broken', {
      runtime: { agents: [echo], container: { engine: 'docker' } },
    });
    const boxes = await replica(prefix, 'boxes', {
      runtime: { agents: [echo], container: { image } },
    });
    const rt = await api(prefix, { agents: [echo] });
    const placements = Object.fromEntries(
      rt.listPools().map((p) => [p.pool_id, p.capabilities.placements]),
    );
    expect(placements).toEqual({
      boxes: ['inline', 'worker', 'process', 'container'],
      broken: ['inline', 'worker', 'process'],
      plain: ['inline', 'worker', 'process'],
    });
    const step = await submitEcho(rt);
    expect(await step.done).toBe('succeeded');
    expect(await rt.getStep(step.step_id)).toMatchObject({
      output: { echo: 'from afar', uid: 65534 },
      placement_decision: { pool_id: 'boxes' },
    });
    await boxes.stop(5_000);
    await rt.refreshPools();
    const refused = await submitEcho(rt).catch((err: unknown) => err);
    expect(refused).toMatchObject({ code: 'POOL_UNAVAILABLE' });
    expect((refused as Error).message).toMatch(/plain: no container placement/);
  });
});
