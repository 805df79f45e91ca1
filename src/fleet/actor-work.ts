/**
 * @module A replica's side of durable agents on a fleet (issue 46): its runtime's durable
 * agents join the fleet (they run here, each actor under its lease, their writes fenced by it;
 * every due time queued on the pool as a delayed job), and it takes their jobs — `actor`
 * (handle an actor's messages; put off a while when another replica holds the actor) and
 * `tick` (fire what is due).
 */
import { DelayedError, Queue, UnrecoverableError, type Job } from 'bullmq';
import type { DurableAgents } from '../durable/durable-agents.js';
import {
  actorDispatchOn,
  actorJobSchema,
  TICK_JOB,
  tickJobSchema,
} from '../placement/fleet/actor-jobs.js';
import type { FleetKeys } from '../placement/fleet/fleet-keys.js';
import { redisLeases } from '../runtime/leases.js';
import type { RedisClient } from '../store/redis/redis-connection.js';
import type { WorkerRecords } from './worker-records.js';

/** How long an actor's job whose lease another replica holds is put off, ms. */
const ACTOR_RETRY_MS = 1_000;

/**
 * The replica's durable agents join the fleet (see the module); resolves its pool's queue,
 * where their due times go, or `null` without durable agents (nothing to join). Refused with
 * records in PostgreSQL, whose writes the actor's lease cannot fence.
 */
export function joinDurable(
  durable: DurableAgents,
  client: RedisClient,
  keys: FleetKeys,
  poolId: string,
  records: Pick<WorkerRecords, 'actorFences'>,
): Queue | null {
  if (durable.list().length === 0) return null;
  const fences = records.actorFences;
  if (!fences) {
    throw new TypeError(
      "fleet worker: durable agents on a fleet whose records are in PostgreSQL are not implemented (their writes cannot be fenced by the actor lease there): keep the fleet's records in Redis",
    );
  }
  const queue = new Queue(keys.queue(poolId), { connection: client, prefix: keys.bullPrefix });
  const leasePrefix = `${keys.prefix}lease:`;
  durable.attachFleet({
    dispatch: actorDispatchOn(() => queue, Date.now),
    runsActors: true,
    leases: redisLeases(client, leasePrefix),
    leaseKey: (key) => `${leasePrefix}${key}`,
    fences,
  });
  return queue;
}

/**
 * Takes a durable agents' job (`actor`, `tick`). An actor whose lease another replica holds:
 * the job is put off `ACTOR_RETRY_MS` and looks again (a live holder has handled the message
 * by then; a dead or frozen one has lost the lease).
 */
export async function takeActorWork(
  durable: DurableAgents,
  replicaId: string,
  job: Job,
  token: string | undefined,
): Promise<unknown> {
  if (job.name === TICK_JOB) {
    tickJobSchema.parse(job.data);
    await durable.tick();
    return { ticked: true };
  }
  const parsed = actorJobSchema.safeParse(job.data);
  if (!parsed.success) {
    throw new UnrecoverableError(
      `job ${job.id ?? ''} is not an actor job: ${parsed.error.message}`,
    );
  }
  const done = await durable.drainHere(parsed.data.actor_id, parsed.data.step_id);
  if (done === 'unregistered') {
    throw new UnrecoverableError(
      `actor ${parsed.data.actor_id}'s durable agent is not registered on replica ${replicaId}`,
    );
  }
  if (done === 'held') {
    await job.moveToDelayed(Date.now() + ACTOR_RETRY_MS, token);
    throw new DelayedError();
  }
  return { done };
}
