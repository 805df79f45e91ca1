/**
 * @module Choosing a pool for a run's steps (API.md's `pool_policy`, PLACE-5001): `auto`,
 * `pin(pool_id)` or `affinity(tags)`, over the pools this runtime knows. Pure: the same pools
 * and policy give the same choice, ties broken by pool id, so a `strict_replay` run lands
 * where its recording did. Embedded there is one pool, `local`; the fleet adds more.
 */
import { PoolUnavailableError } from '../errors/pool-unavailable-error.js';
import type { PlacementDecision } from '../store/records.js';

/** A pool as placement sees it. */
export interface PoolCandidate {
  readonly pool_id: string;
  readonly tags: readonly string[];
  /** Whether it takes work now. */
  readonly healthy: boolean;
  /** Steps it could start now. */
  readonly free_slots: number;
  /** Steps it runs now. */
  readonly active_slots: number;
  /** The replica a step placed on it reports; `null` embedded (one replica). */
  readonly replica_id: string | null;
}

/** A run's `pool_policy.placement` (API.md). */
export type PoolPlacement =
  'auto' | { readonly pin: string } | { readonly affinity: { readonly tags: readonly string[] } };

/** The placement of a `pool_policy` record (`{}` is `auto`). */
export function placementOf(poolPolicy: Readonly<Record<string, unknown>>): PoolPlacement {
  return (poolPolicy['placement'] as PoolPlacement | undefined) ?? 'auto';
}

/**
 * Chooses the pool for `placement` among `pools`: the feasible ones (healthy; the pinned one;
 * those with every tag asked for) sorted by free capacity (most first), active slots (fewest
 * first), then id. Throws {@link PoolUnavailableError} naming what was asked and what exists
 * when no pool is feasible.
 */
export function choosePool(
  placement: PoolPlacement,
  pools: readonly PoolCandidate[],
): PlacementDecision {
  const known = pools.map((p) => p.pool_id);
  let feasible: PoolCandidate[];
  let policy: PlacementDecision['policy'];
  let why: string;
  if (placement === 'auto') {
    policy = 'auto';
    feasible = pools.filter((p) => p.healthy);
    why = 'auto';
  } else if ('pin' in placement) {
    policy = 'pin';
    const pinned = placement.pin;
    feasible = pools.filter((p) => p.pool_id === pinned && p.healthy);
    if (feasible.length === 0) {
      const exists = known.includes(pinned);
      throw new PoolUnavailableError(
        exists
          ? `pool "${pinned}" is pinned but does not take work now`
          : `pool "${pinned}" is pinned but there is no such pool (pools: ${known.join(', ')})`,
        { details: { pin: pinned, pools: known }, retriable: exists },
      );
    }
    why = `pinned to ${pinned}`;
  } else {
    policy = 'affinity';
    const tags = placement.affinity.tags;
    feasible = pools.filter((p) => p.healthy && tags.every((t) => p.tags.includes(t)));
    if (feasible.length === 0) {
      throw new PoolUnavailableError(
        `no pool has every tag of affinity [${tags.join(', ')}] (pools: ${pools
          .map((p) => `${p.pool_id} [${p.tags.join(', ')}]`)
          .join('; ')})`,
        { details: { affinity: tags, pools: known }, retriable: false },
      );
    }
    why = tags.length === 0 ? 'affinity with no tags' : `has tags ${tags.join(', ')}`;
  }
  if (feasible.length === 0) {
    throw new PoolUnavailableError(`no pool takes work now (pools: ${known.join(', ')})`, {
      details: { pools: known },
    });
  }
  const chosen = [...feasible].sort(
    (a, b) =>
      b.free_slots - a.free_slots ||
      a.active_slots - b.active_slots ||
      (a.pool_id < b.pool_id ? -1 : a.pool_id > b.pool_id ? 1 : 0),
  )[0] as PoolCandidate;
  const reason =
    feasible.length === 1
      ? `${why}; the only feasible pool`
      : `${why}; most free capacity of ${feasible.length} feasible pools`;
  return { pool_id: chosen.pool_id, replica_id: chosen.replica_id, policy, reason };
}
