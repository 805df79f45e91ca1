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
  /** The engines it serves; unknown (any) when absent. */
  readonly engines?: readonly string[];
  /** What it offers (`vram_mb`, `arch`, `features`); none when absent. */
  readonly capabilities?: Readonly<Record<string, unknown>>;
}

/** What a run's steps need of a pool (`pool_policy.requires`). */
export interface PoolRequirements {
  /** GPU memory in MiB, at least. */
  readonly vram_mb?: number | undefined;
  /** The CPU architecture (`x64`, `arm64`), exactly. */
  readonly arch?: string | undefined;
  /** Features it must all offer. */
  readonly features?: readonly string[] | undefined;
}

/** What one step needs of a pool: its run's requirements, and the engine it calls. */
export interface StepNeeds {
  readonly requires?: PoolRequirements | undefined;
  /** The engine an LLM step names. */
  readonly engine?: string | undefined;
  /**
   * A placement the step's behaviour needs of the pool beyond the usual ones (`container`):
   * it must be in the pool's `capabilities.placements`.
   */
  readonly placement?: string | undefined;
}

/** The placements a pool offers when it does not say. */
export const BASE_PLACEMENTS: readonly string[] = ['inline', 'worker', 'process'];

/** Why `pool` cannot take a step with `needs`; `null` when it can. */
function unmet(pool: PoolCandidate, needs: StepNeeds): string | null {
  if (needs.engine !== undefined && pool.engines && !pool.engines.includes(needs.engine)) {
    return `no engine ${needs.engine}`;
  }
  const caps = pool.capabilities ?? {};
  if (needs.placement !== undefined) {
    const offered = Array.isArray(caps['placements'])
      ? (caps['placements'] as unknown[])
      : BASE_PLACEMENTS;
    if (!offered.includes(needs.placement)) return `no ${needs.placement} placement`;
  }
  const r = needs.requires;
  if (!r) return null;
  const vram = typeof caps['vram_mb'] === 'number' ? caps['vram_mb'] : 0;
  if (r.vram_mb !== undefined && vram < r.vram_mb) return `vram_mb ${vram} < ${r.vram_mb}`;
  if (r.arch !== undefined && caps['arch'] !== r.arch) return `arch is not ${r.arch}`;
  const features = Array.isArray(caps['features']) ? (caps['features'] as unknown[]) : [];
  const missing = (r.features ?? []).filter((f) => !features.includes(f));
  if (missing.length > 0) return `no feature ${missing.join(', ')}`;
  return null;
}

/** A run's `pool_policy.placement` (API.md). */
export type PoolPlacement =
  'auto' | { readonly pin: string } | { readonly affinity: { readonly tags: readonly string[] } };

/** The requirements of a `pool_policy` record (`requires`), if it has any. */
export function requirementsOf(
  poolPolicy: Readonly<Record<string, unknown>>,
): PoolRequirements | undefined {
  return poolPolicy['requires'] as PoolRequirements | undefined;
}

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
  allPools: readonly PoolCandidate[],
  needs: StepNeeds = {},
): PlacementDecision {
  const known = allPools.map((p) => p.pool_id);
  // Pools that cannot run the step at all (an engine, a capability) are not candidates.
  const reasons = allPools.flatMap((p) => {
    const why = unmet(p, needs);
    return why === null ? [] : [`${p.pool_id}: ${why}`];
  });
  const pools = allPools.filter((p) => unmet(p, needs) === null);
  if (pools.length === 0 && allPools.length > 0) {
    throw new PoolUnavailableError(`no pool can run the step (${reasons.join('; ')})`, {
      details: { pools: known, unmet: reasons },
      retriable: false,
    });
  }
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
