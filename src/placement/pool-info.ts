/**
 * @module The pools of a runtime as API.md's `GET /v1/pools` shows them. Embedded there is
 * one, `local` (the runtime's `poolId`): the runtime itself, one replica, with live figures —
 * steps in flight, worker threads, the worker queue's depth, and its health (degraded while
 * the worker pool's threads die faster than its restart intensity allows).
 */
import type { ActorSystem } from '../actors/actor-system.js';
import type { WorkerPool } from './worker/worker-pool.js';

/** A replica of a pool: one process that runs its steps. */
export interface PoolReplica {
  readonly replica_id: string;
  readonly health: 'healthy' | 'degraded' | 'unavailable';
  readonly load: {
    /** Steps running now (every placement). */
    readonly steps_in_flight: number;
    /** Worker threads running now (the embedded pool). */
    readonly worker_threads?: number;
    /** Steps it runs at once, at most (a fleet replica: `axon worker --concurrency`). */
    readonly concurrency?: number;
    /** Steps waiting: for a worker thread (embedded), on the pool's queue (a fleet). */
    readonly queue_depth: number;
  };
}

/** A pool (API.md). */
export interface PoolInfo {
  readonly pool_id: string;
  readonly tags: readonly string[];
  readonly capabilities: {
    /** Where its steps may run. */
    readonly placements: readonly string[];
    /** The most worker threads it starts (the embedded pool). */
    readonly max_worker_threads?: number;
    /** What a fleet pool's replicas declare (`vram_mb`, `arch`, `features`, ...). */
    readonly [capability: string]: unknown;
  };
  /** The engines it serves, by name. */
  readonly engines: readonly string[];
  readonly replicas: readonly PoolReplica[];
}

/** What the local pool's figures are read from. */
export interface LocalPoolSource {
  readonly poolId: string;
  readonly replicaId: string | null;
  readonly tags: readonly string[];
  readonly system: ActorSystem;
  readonly engines: () => readonly string[];
  /** The worker pool if it has started (reading the figures does not start it). */
  readonly workers: () => WorkerPool | null;
  readonly maxWorkerThreads: number;
  /** The placements it offers (`container` too when container placement is set up). */
  readonly placements: () => readonly string[];
}

/** The local pool, as it is now. */
export function localPool(source: LocalPoolSource): PoolInfo {
  const workers = source.workers();
  return {
    pool_id: source.poolId,
    tags: source.tags,
    capabilities: {
      placements: source.placements(),
      max_worker_threads: source.maxWorkerThreads,
      arch: process.arch,
    },
    engines: source.engines(),
    replicas: [
      {
        replica_id: source.replicaId ?? `${source.poolId}-0`,
        health: workers?.supervisor.degraded === true ? 'degraded' : 'healthy',
        load: {
          steps_in_flight: source.system.list('step').length,
          worker_threads: workers?.threads ?? 0,
          queue_depth: workers?.queued ?? 0,
        },
      },
    ],
  };
}
