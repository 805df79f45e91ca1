import { describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import { quietRuntime, until } from '../support/runtime.js';

describe('runtime.listPools: the local pool with live figures (API.md GET /v1/pools)', () => {
  it('shows one pool, its tags and engines, and the steps in flight now', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started = false;
    const slow = defineAgent({
      name: 'slow',
      handler: async () => {
        started = true;
        await held;
        return 'done';
      },
    });
    const rt = quietRuntime({
      agents: [slow],
      poolTags: ['cpu'],
      replicaId: 'r-1',
      workers: { maxThreads: 3 },
    });
    const [pool] = rt.listPools();
    expect(pool).toMatchObject({
      pool_id: 'local',
      tags: ['cpu'],
      capabilities: { max_worker_threads: 3 },
      replicas: [{ replica_id: 'r-1', health: 'healthy', load: { steps_in_flight: 0 } }],
    });
    expect(pool?.engines).toContain('scripted');
    const running = rt.invoke('slow', 'x');
    await until(() => started);
    expect(rt.getPool('local')?.replicas[0]?.load.steps_in_flight).toBe(1);
    release();
    await running;
    expect(rt.getPool('local')?.replicas[0]?.load.steps_in_flight).toBe(0);
    expect(rt.getPool('gpu')).toBeNull();
    await rt.close();
  });
});
