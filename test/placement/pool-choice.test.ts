import { describe, expect, it } from 'vitest';
import { PoolUnavailableError } from '../../src/errors/pool-unavailable-error.js';
import { choosePool, placementOf, type PoolCandidate } from '../../src/placement/pool-choice.js';

function pool(id: string, over: Partial<PoolCandidate> = {}): PoolCandidate {
  return {
    pool_id: id,
    tags: [],
    healthy: true,
    free_slots: 4,
    active_slots: 0,
    replica_id: null,
    ...over,
  };
}

describe('choosePool (PLACE-5001)', () => {
  it('auto: the healthy pool with most free capacity, then fewest active slots, then by id', () => {
    const pools = [
      pool('b', { free_slots: 2 }),
      pool('c', { free_slots: 8, active_slots: 3 }),
      pool('a', { free_slots: 8, active_slots: 1 }),
      pool('z', { free_slots: 99, healthy: false }),
    ];
    expect(choosePool('auto', pools)).toEqual({
      pool_id: 'a',
      replica_id: null,
      policy: 'auto',
      reason: 'auto; most free capacity of 3 feasible pools',
    });
    // Ties break by id whatever the order the pools come in: a replay lands where it did.
    const tied = [pool('y'), pool('x'), pool('w')];
    expect(choosePool('auto', tied).pool_id).toBe('w');
    expect(choosePool('auto', [...tied].reverse()).pool_id).toBe('w');
  });

  it('pin: that pool, or POOL_UNAVAILABLE naming it and the pools there are', () => {
    const pools = [pool('local'), pool('gpu-1', { healthy: false })];
    expect(choosePool({ pin: 'local' }, pools)).toMatchObject({
      pool_id: 'local',
      policy: 'pin',
      reason: 'pinned to local; the only feasible pool',
    });
    const unknown = (() => {
      try {
        choosePool({ pin: 'gpu-9' }, pools);
      } catch (err) {
        return err;
      }
      return null;
    })();
    expect(unknown).toBeInstanceOf(PoolUnavailableError);
    expect(unknown).toMatchObject({
      code: 'POOL_UNAVAILABLE',
      retriable: false,
      details: { pin: 'gpu-9', pools: ['local', 'gpu-1'] },
    });
    // A pool that exists but does not take work now may come back.
    expect(() => choosePool({ pin: 'gpu-1' }, pools)).toThrow(
      expect.objectContaining({ code: 'POOL_UNAVAILABLE', retriable: true }) as Error,
    );
  });

  it('affinity: only pools with every tag asked for; none is POOL_UNAVAILABLE', () => {
    const pools = [pool('cpu', { tags: ['x86'] }), pool('gpu', { tags: ['x86', 'gpu'] })];
    expect(choosePool({ affinity: { tags: ['gpu', 'x86'] } }, pools)).toMatchObject({
      pool_id: 'gpu',
      policy: 'affinity',
    });
    expect(() => choosePool({ affinity: { tags: ['tpu'] } }, pools)).toThrow(PoolUnavailableError);
    expect(choosePool({ affinity: { tags: [] } }, pools).pool_id).toBe('cpu');
  });

  it('a step needing container placement goes only to a pool offering it; none is POOL_UNAVAILABLE', () => {
    const plain = pool('plain', { free_slots: 9 });
    const boxes = pool('boxes', {
      free_slots: 1,
      capabilities: { placements: ['inline', 'worker', 'process', 'container'] },
    });
    expect(choosePool('auto', [plain, boxes], { placement: 'container' }).pool_id).toBe('boxes');
    expect(choosePool('auto', [plain, boxes], {}).pool_id).toBe('plain');
    expect(() => choosePool('auto', [plain], { placement: 'container' })).toThrow(
      /no pool can run the step \(plain: no container placement\)/,
    );
  });

  it('reads a stored pool_policy; {} is auto', () => {
    expect(placementOf({})).toBe('auto');
    expect(placementOf({ placement: { pin: 'p' } })).toEqual({ pin: 'p' });
  });
});
