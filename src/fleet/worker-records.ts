/**
 * @module Where a fleet replica keeps its records: the fleet's Redis (the Redis store, its
 * writes fenced by the step's job lock, the processes following a step woken in the call of
 * each append to it) or PostgreSQL (`FleetWorkerOptions.postgres`: its writes fenced by the turn the
 * replica took on the step, its stream entries added once each append commits). Queues,
 * streams, cancels and the registry are in Redis either way.
 */
import type { Logger } from '../observability/logger.js';
import type { FleetKeys } from '../placement/fleet/fleet-keys.js';
import { countersKey } from '../placement/fleet/fleet-link.js';
import { endedNotice, EVENTS_FIELD, STREAM_TTL_MS } from '../placement/fleet/fleet-relay.js';
import { postgresStore } from '../store/postgres/postgres-store.js';
import { shownPostgres } from '../store/postgres/postgres-url.js';
import type { RedisClient } from '../store/redis/redis-connection.js';
import { redisStore } from '../store/redis/redis-store.js';
import { StepTurns } from './step-turns.js';
import { ReplicaActorFences } from './actor-fences.js';
import { StreamingStore } from './streaming-store.js';

/** A replica's store and its turns at the steps it takes. */
export interface WorkerRecords {
  /**
   * The fences of the durable agents' messages handled here (`actor-fences.ts`), with the
   * records in Redis; `null` with them in PostgreSQL, where an actor's lease fences nothing.
   */
  readonly actorFences: ReplicaActorFences | null;
  readonly store: StreamingStore;
  readonly turns: StepTurns;
  /** Resolves once the records can be written; rejects naming why not. */
  readonly ready: () => Promise<void>;
  /** Where the records are, for the replica's banner. */
  readonly where: string;
}

/** What {@link workerRecords} needs. */
export interface WorkerRecordsOptions {
  readonly client: RedisClient;
  readonly keys: FleetKeys;
  readonly poolId: string;
  /** Entries a step's stream keeps (approximately). */
  readonly streamMaxLen: number;
  /** The fleet's records in PostgreSQL instead of Redis. */
  readonly postgres: { readonly url: string; readonly schema?: string } | null;
  readonly logger: Logger;
}

/** The store and turns of a replica; see the module. */
export function workerRecords(o: WorkerRecordsOptions): WorkerRecords {
  const { client, keys, poolId } = o;
  if (o.postgres && !/^postgres(ql)?:\/\/\S+$/.test(o.postgres.url)) {
    throw new TypeError('fleet worker: postgres.url must be a postgres:// or postgresql:// URL');
  }
  // Made below: the stores' fences ask it for the turn of each write, once they write.
  let turns: StepTurns;
  if (o.postgres) {
    const records = postgresStore({
      connection: o.postgres.url,
      ...(o.postgres.schema === undefined ? {} : { schema: o.postgres.schema }),
      fence: (target) => {
        const turn = turns.turnOf(target);
        return turn ? { stepId: turn.stepId, token: turn.token } : null;
      },
    });
    turns = new StepTurns(
      async (turn, mark) => {
        const [, marked] = await Promise.all([
          records.takeTurn(turn.stepId, turn.number, turn.token),
          client.exists(mark),
        ]);
        return marked === 1;
      },
      keys,
      poolId,
    );
    const store = new StreamingStore(records, client, keys, {
      maxLen: o.streamMaxLen,
      ttlMs: STREAM_TTL_MS,
      field: EVENTS_FIELD,
      onError: (err) => {
        o.logger.warn({ err }, 'fleet worker: could not add to a step stream');
      },
    });
    return {
      store,
      turns,
      actorFences: null,
      ready: () => records.ready(),
      where: `PostgreSQL at ${shownPostgres(o.postgres.url)}, schema ${o.postgres.schema ?? 'axon'}`,
    };
  }
  const completed = { key: countersKey(keys, poolId), field: 'completed' };
  const fences = new ReplicaActorFences();
  const records = redisStore({
    client,
    prefix: keys.prefix,
    fence: (target) => {
      const turn = turns.turnOf(target);
      return turn ? [turn.fence] : fences.guardsOf(target);
    },
    // The API processes following a step are woken in the call of each append to it.
    wakes: { prefix: keys.wake('') },
    // The end of a step taken here is said in the same call as it is written.
    endNotice: (stepId, status) => {
      const turn = turns.of(stepId);
      if (!turn) return null;
      return {
        ...endedNotice(keys, stepId, status, completed, turn.fence),
        said: (yes) => {
          if (yes) turn.said = true;
        },
        sent: () => {
          turn.endSent(status);
        },
      };
    },
  });
  turns = new StepTurns((turn, mark) => records.takeTurn(turn.fence, mark), keys, poolId);
  return {
    store: new StreamingStore(records, client, keys),
    turns,
    actorFences: fences,
    ready: () => Promise.resolve(),
    where: 'Redis',
  };
}
