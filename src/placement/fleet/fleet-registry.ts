/**
 * @module The fleet's registry in Redis: each replica (one `axon worker` process) writes a
 * heartbeat — its pool, tags, capabilities, engines, slots and load — to a key that expires
 * with its TTL, so a dead replica leaves the registry on its own. API processes read the
 * heartbeats into a {@link PoolTable}, an `@xstate/store` store (small shared state read by
 * many: placement, `GET /v1/pools`, `/metrics`), and place steps from it.
 */
import { BASE_PLACEMENTS } from '../pool-choice.js';
import { createStore } from '@xstate/store';
import type { RedisClient } from '../../store/redis/redis-connection.js';
import { z } from 'zod';
import type { FleetKeys } from './fleet-keys.js';
import type { PoolCandidate } from '../pool-choice.js';
import type { PoolInfo } from '../pool-info.js';

/** A replica's heartbeat. */
export const replicaBeatSchema = z.object({
  pool_id: z.string(),
  replica_id: z.string(),
  tags: z.array(z.string()),
  /** What the replica offers (`vram_mb`, `arch`, `features`, declared or read from the host). */
  capabilities: z.record(z.string(), z.unknown()),
  engines: z.array(z.string()),
  /** Steps it runs at once, at most. */
  concurrency: z.number().int().min(1),
  /** Steps it runs now. */
  active: z.number().int().min(0),
  /** `draining` once it has been asked to stop: it takes no new step. */
  health: z.enum(['healthy', 'degraded', 'draining']),
  host: z.string(),
  pid: z.number().int(),
  /** When it was written (ms since the epoch). */
  ts: z.number(),
});

/** A replica's heartbeat. */
export type ReplicaBeat = z.infer<typeof replicaBeatSchema>;

/** Writes a replica's heartbeat, to expire after `ttlMs` unless written again. */
export async function writeBeat(
  client: RedisClient,
  keys: FleetKeys,
  beat: ReplicaBeat,
  ttlMs: number,
): Promise<void> {
  const key = keys.replica(beat.pool_id, beat.replica_id);
  await client.multi().set(key, JSON.stringify(beat), 'PX', ttlMs).sadd(keys.replicas, key).exec();
}

/** Takes a replica out of the registry at once (a replica that stops cleanly). */
export async function removeBeat(
  client: RedisClient,
  keys: FleetKeys,
  poolId: string,
  replicaId: string,
): Promise<void> {
  const key = keys.replica(poolId, replicaId);
  await client.multi().del(key).srem(keys.replicas, key).exec();
}

/**
 * The live replicas' heartbeats. A key whose TTL ran out is gone: it is dropped from the set
 * too. A heartbeat that does not parse (another version's) is skipped.
 */
export async function readBeats(client: RedisClient, keys: FleetKeys): Promise<ReplicaBeat[]> {
  const members = await client.smembers(keys.replicas);
  if (members.length === 0) return [];
  const values = await client.mget(...members);
  const out: ReplicaBeat[] = [];
  const gone: string[] = [];
  values.forEach((value, i) => {
    if (value === null) {
      gone.push(members[i] as string);
      return;
    }
    const parsed = replicaBeatSchema.safeParse(JSON.parse(value));
    if (parsed.success) out.push(parsed.data);
  });
  if (gone.length > 0) await client.srem(keys.replicas, ...gone);
  return out;
}

/** A pool's queue figures, from BullMQ and the fleet's counters. */
export interface QueueFigures {
  /** Jobs waiting for a replica. */
  readonly waiting: number;
  /** Jobs a replica runs now. */
  readonly active: number;
  /** Steps its replicas completed (ever, in this Redis). */
  readonly completed: number;
  /** Jobs found stalled (their replica died or froze) and queued again. */
  readonly stalled: number;
}

const NO_FIGURES: QueueFigures = Object.freeze({ waiting: 0, active: 0, completed: 0, stalled: 0 });

/** What the pool table holds. */
interface TableContext {
  readonly replicas: readonly ReplicaBeat[];
  readonly queues: Readonly<Record<string, QueueFigures>>;
  /** When it was last read (ms since the epoch); 0 before the first read. */
  readonly readAt: number;
}

/** The table before its first read. */
const EMPTY_TABLE: TableContext = { replicas: [], queues: {}, readAt: 0 };

/** The host-side table of the fleet's pools and replicas (an `@xstate/store` store). */
export class PoolTable {
  readonly #store = createStore({
    context: EMPTY_TABLE,
    on: {
      read: (
        _context,
        event: {
          replicas: readonly ReplicaBeat[];
          queues: Readonly<Record<string, QueueFigures>>;
          at: number;
        },
      ): TableContext => ({ replicas: event.replicas, queues: event.queues, readAt: event.at }),
    },
  });

  /** Replaces the table with what was read from Redis at `at`. */
  update(
    replicas: readonly ReplicaBeat[],
    queues: Readonly<Record<string, QueueFigures>>,
    at: number,
  ): void {
    this.#store.trigger.read({ replicas, queues, at });
  }

  /** When the table was last read; 0 before the first read. */
  get readAt(): number {
    return this.#store.getSnapshot().context.readAt;
  }

  /** The pool ids with a live replica, sorted. */
  poolIds(): string[] {
    return [...new Set(this.#store.getSnapshot().context.replicas.map((r) => r.pool_id))].sort();
  }

  /** A pool's queue figures as last read. */
  figures(poolId: string): QueueFigures {
    return this.#store.getSnapshot().context.queues[poolId] ?? NO_FIGURES;
  }

  /** Every pool with a live replica, as placement sees it. */
  candidates(): PoolCandidate[] {
    return this.#byPool().map(([poolId, replicas]) => {
      const taking = replicas.filter((r) => r.health !== 'draining');
      const slots = taking.reduce((n, r) => n + Math.max(0, r.concurrency - r.active), 0);
      return {
        pool_id: poolId,
        tags: (replicas[0] as ReplicaBeat).tags,
        healthy: taking.some((r) => r.health === 'healthy'),
        // Free capacity: idle slots less the jobs already waiting for one.
        free_slots: slots - this.figures(poolId).waiting,
        active_slots: replicas.reduce((n, r) => n + r.active, 0),
        // The replica that takes the job is the worker's to say (in its `started`).
        replica_id: null,
        engines: [...new Set(replicas.flatMap((r) => r.engines))],
        capabilities: (replicas[0] as ReplicaBeat).capabilities,
      };
    });
  }

  /** Every pool with a live replica, as `GET /v1/pools` shows it. */
  pools(): PoolInfo[] {
    return this.#byPool().map(([poolId, replicas]) => {
      const first = replicas[0] as ReplicaBeat;
      return {
        pool_id: poolId,
        tags: first.tags,
        capabilities: { placements: BASE_PLACEMENTS, ...first.capabilities },
        engines: [...new Set(replicas.flatMap((r) => r.engines))].sort(),
        replicas: replicas.map((r) => ({
          replica_id: r.replica_id,
          health: r.health === 'draining' ? 'unavailable' : r.health,
          load: {
            steps_in_flight: r.active,
            concurrency: r.concurrency,
            queue_depth: this.figures(poolId).waiting,
          },
        })),
      };
    });
  }

  /** The live replicas by pool, each list sorted by replica id. */
  #byPool(): [string, ReplicaBeat[]][] {
    const by = new Map<string, ReplicaBeat[]>();
    for (const beat of this.#store.getSnapshot().context.replicas) {
      let list = by.get(beat.pool_id);
      if (!list) by.set(beat.pool_id, (list = []));
      list.push(beat);
    }
    return [...by.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([poolId, list]) => [
        poolId,
        list.sort((a, b) =>
          a.replica_id < b.replica_id ? -1 : a.replica_id > b.replica_id ? 1 : 0,
        ),
      ]);
  }
}
