/**
 * @module The Redis store's format, kept in `<prefix>format`, and its migration in place at
 * start (issue 47). Format 1 (no marker) kept a step's record in its hash and its log in a
 * list of its own (`<prefix>log:<id>`); format 2 keeps both in the step's one hash
 * (`redis-step-scripts.ts`). A store opening a prefix without the marker moves every log of
 * it into its step's hash (one script call a step, each whole or not at all, so processes
 * opening it at once do no harm), then sets the marker; a step a format-1 writer left after
 * that is moved by the first operation that reads it. A marker of a format this code does not
 * know (a newer axon wrote the store) refuses every write. Stop every process of an older
 * axon before a newer one opens its store: an older writer would go on writing format 1.
 */
import { createHash } from 'node:crypto';
import { Cluster } from 'ioredis';
import { ConflictError } from '../../errors/conflict-error.js';
import type { RedisClient } from './redis-connection.js';
import { MIGRATE_LOG } from './redis-step-scripts.js';

/** The format this code writes. */
export const REDIS_FORMAT = 2;

/** The format marker's key under `prefix`. */
export const formatKey = (prefix: string): string => `${prefix}format`;

/** Moves one step's log (format 1) into its hash: KEYS[1] the step's hash. → events moved. */
const MIGRATE = `${MIGRATE_LOG}
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HEXISTS', KEYS[1], 'n') == 1 then return 0 end
return migrate_log(KEYS[1])`;
const MIGRATE_SHA = createHash('sha1').update(MIGRATE).digest('hex');

/** `prefix` as a `SCAN MATCH` pattern matches it: its glob characters escaped. */
function globOf(prefix: string): string {
  return prefix.replace(/[*?[\]\\]/g, '\\$&');
}

/** Runs {@link MIGRATE} on `stepKey`: by its digest, or whole when Redis does not have it. */
async function migrateStep(client: RedisClient, stepKey: string): Promise<void> {
  try {
    await client.evalsha(MIGRATE_SHA, 1, stepKey);
  } catch (err) {
    if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
    await client.eval(MIGRATE, 1, stepKey);
  }
}

/**
 * Opens the store under `prefix` in {@link REDIS_FORMAT}: resolves once it is (migrated
 * from format 1 when it was); rejects with `ConflictError` (`details.format`) for a marker
 * of a format this code does not know, and when Redis cannot be reached.
 */
export async function openRedisFormat(client: RedisClient, prefix: string): Promise<void> {
  const marker = formatKey(prefix);
  const found = await client.get(marker);
  if (found === String(REDIS_FORMAT)) return;
  if (found !== null) {
    throw new ConflictError(
      `the Redis store under ${JSON.stringify(prefix)} has format ${JSON.stringify(found)}, which this axon does not know (it writes format ${REDIS_FORMAT}): upgrade axon`,
      { details: { format: found, known: REDIS_FORMAT } },
    );
  }
  // A store with runs was written by format 1: its logs move now. A prefix without any
  // indexed run holds none to move (a store of format 1 older than the run indexes has each
  // step moved as it is first read).
  const indexed = await client.exists(`${prefix}runs:i`, `${prefix}runs:i:v1`);
  if (indexed > 0) {
    const logs = `${globOf(prefix)}log:*`;
    const nodes = client instanceof Cluster ? client.nodes('master') : [client];
    for (const node of nodes) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', logs, 'COUNT', 1000);
        cursor = next;
        await Promise.all(
          keys.map((key) =>
            migrateStep(client, `${prefix}step:${key.slice(prefix.length + 'log:'.length)}`),
          ),
        );
      } while (cursor !== '0');
    }
  }
  await client.set(marker, String(REDIS_FORMAT));
}
