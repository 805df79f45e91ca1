/**
 * @module A step's events read from its hash by the client's own `HMGET`s, not by the
 * store's script: Redis hands a script's replies through Lua and back, which cost events
 * 5 001 … 10 000 of a 10 000-event log 6.3 ms on the server and 12.7 ms in all, against
 * 1 ms and 3 ms for the same `HMGET` sent by the client (see docs/benchmarks.md).
 *
 * A read is the step's `n` (its last seq) and a first page of fields, sent together (one
 * round trip), then, when the step has more than the page, the rest in commands of at most
 * {@link FIELDS_PER_COMMAND} fields, sent together. Events past the `n` read are left out,
 * so a read is the log as it was at one point, as the script's was.
 */
import type { RedisClient } from './redis-connection.js';

/** Fields asked for with a step's `n`: a follower's or a resume's read is one round trip. */
const FIRST_PAGE = 1_000;

/** Fields an `HMGET` asks for at most. */
const FIELDS_PER_COMMAND = 10_000;

/** `"from"` … `"to"`, the fields of those seqs. */
function seqFields(from: number, to: number): string[] {
  const fields: string[] = [];
  for (let seq = from; seq <= to; seq++) fields.push(String(seq));
  return fields;
}

/**
 * The JSON of the events of the step whose hash is `key` after seq `after`, `count` of them
 * at most (`-1`: all), in order; `[]` when there is no such step; `null` when its hash is of
 * format 1 still (no `n`: its log is a list the store's script moves in when it reads it).
 */
export async function readEventTexts(
  client: RedisClient,
  key: string,
  after: number,
  count: number,
): Promise<string[] | null> {
  const firstTo = after + (count === -1 ? FIRST_PAGE : Math.min(count, FIRST_PAGE));
  const [head, page] = await Promise.all([
    client.hmget(key, 'n', 'step_id'),
    client.hmget(key, ...seqFields(after + 1, firstTo)),
  ]);
  const [n, stepId] = head;
  if (n === null || n === undefined) return stepId === null || stepId === undefined ? [] : null;
  const last = Number(n);
  const to = count === -1 ? last : Math.min(last, after + count);
  const out: string[] = [];
  const keep = (values: readonly (string | null)[], from: number): void => {
    for (let j = 0; j < values.length && from + j <= to; j++) {
      const value = values[j];
      // A field gone (the step's run deleted meanwhile) is left out, as a script's read does.
      if (value !== null && value !== undefined) out.push(value);
    }
  };
  keep(page, after + 1);
  if (to <= firstTo) return out;
  const rest: Promise<(string | null)[]>[] = [];
  const starts: number[] = [];
  for (let from = firstTo + 1; from <= to; from += FIELDS_PER_COMMAND) {
    starts.push(from);
    rest.push(client.hmget(key, ...seqFields(from, Math.min(to, from + FIELDS_PER_COMMAND - 1))));
  }
  const pages = await Promise.all(rest);
  pages.forEach((values, j) => {
    keep(values, starts[j] ?? 0);
  });
  return out;
}
