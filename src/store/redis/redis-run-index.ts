/**
 * @module The Redis store's indexes of runs: sorted sets scored by when each run was created
 * (ms), members its id — every run (`<prefix>runs:i`), by status (`…:s:<status>`), by user
 * (`…:u:<user as JSON>`), by user and status (`…:u:<user>:s:<status>`) and by entry
 * (`…:e:<entry>`). A run enters them with its creation and moves between the status ones
 * with its status, in the same script call (`Op.createRun`, `Op.patchRun`). A page is read
 * from the newest end of the sets that fit its query, a range at a time, so its cost grows
 * with the page, not with how many runs there are. Runs stored before the indexes were kept
 * are put in them once, by the first listing of a store that finds the indexes unmarked.
 */
import type { RedisClient } from './redis-connection.js';
import type { RunRecord, RunStatus } from '../records.js';
import { asRun, fromFields } from './redis-fields.js';
import { Op, type OpCode } from './redis-scripts.js';
import { ofRunPage } from '../run-pages.js';
import type { RunPageQuery } from '../run-store.js';

/** One index entry: a run's id and when it was created (ms). */
interface Entry {
  readonly id: string;
  readonly score: number;
}

/** Newest first: by score, then by id (as Redis orders equal scores, reversed). */
const newer = (a: Entry, b: Entry): number =>
  b.score - a.score || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/** A run's score in the indexes. */
export const runScore = (run: Pick<RunRecord, 'created_at'>): number => Date.parse(run.created_at);

/** The indexes of one store's runs; see the module. */
export class RedisRunIndex {
  /** The prefix of every index key. */
  readonly base: string;
  /** The prefix of every run's hash. */
  readonly #runs: string;
  readonly #read: () => RedisClient;
  readonly #write: (code: OpCode, keys: string[], args: string[]) => Promise<unknown>;
  #ready: Promise<void> | null = null;

  /**
   * The indexes of the store of key prefix `prefix`: `read` its connection for a read (its
   * writes sent first), `write` one operation of its script.
   */
  constructor(
    prefix: string,
    read: () => RedisClient,
    write: (code: OpCode, keys: string[], args: string[]) => Promise<unknown>,
  ) {
    this.base = `${prefix}runs:i`;
    this.#runs = `${prefix}run:`;
    this.#read = read;
    this.#write = write;
  }

  /** The sets a new run goes in. */
  keysOf(run: Pick<RunRecord, 'status' | 'user_id' | 'entry'>): string[] {
    const user = `${this.base}:u:${JSON.stringify(run.user_id)}`;
    return [
      this.base,
      `${this.base}:s:${run.status}`,
      user,
      `${user}:s:${run.status}`,
      `${this.base}:e:${run.entry}`,
    ];
  }

  /** Once per store: the runs stored before the indexes, put in them (see the module). */
  ready(): Promise<void> {
    this.#ready ??= this.#indexStoredRuns(`${this.base}:v1`).catch((err: unknown) => {
      this.#ready = null;
      throw err;
    });
    return this.#ready;
  }

  /** Runs in creation order, those of `status` when given. */
  async list(status?: readonly RunStatus[]): Promise<RunRecord[]> {
    await this.ready();
    const keys = status ? status.map((s) => `${this.base}:s:${s}`) : [this.base];
    const lists = await Promise.all(
      keys.map(async (key) => entries(await this.#read().zrange(key, 0, -1, 'WITHSCORES'))),
    );
    const ids = lists
      .flat()
      .sort((a, b) => newer(b, a))
      .map((e) => e.id);
    return (await this.#fetch(ids)).filter((r): r is RunRecord => r !== null);
  }

  /** One page (see `RunStore.pageRuns`); `before` is the run it goes on after, found. */
  async page(query: RunPageQuery, before: Entry | null): Promise<RunRecord[]> {
    await this.ready();
    const keys = this.#keysFor(query);
    const out: RunRecord[] = [];
    let cursor = before;
    for (;;) {
      const want = query.limit - out.length;
      const lists = await Promise.all(keys.map((key) => this.#after(key, cursor, want)));
      const next = lists.flat().sort(newer).slice(0, want);
      const runs = await this.#fetch(next.map((e) => e.id));
      for (const run of runs) if (run && ofRunPage(run, query)) out.push(run);
      if (out.length >= query.limit || lists.every((l) => l.length < want)) return out;
      cursor = next.at(-1) ?? null;
    }
  }

  /** Where run `id` stands in the indexes; `null` when it is in none. */
  async entryOf(id: string): Promise<Entry | null> {
    await this.ready();
    const score = await this.#read().zscore(this.base, id);
    return score === null ? null : { id, score: Number(score) };
  }

  /** Runs by id, in one round trip; `null` for one that is gone. */
  async #fetch(ids: readonly string[]): Promise<(RunRecord | null)[]> {
    if (ids.length === 0) return [];
    const pipeline = this.#read().pipeline();
    for (const id of ids) pipeline.hgetall(`${this.#runs}${id}`);
    return ((await pipeline.exec()) ?? []).map(([err, hash]) =>
      err ? null : asRun(fromFields(hash as Record<string, string>)),
    );
  }

  /** Puts every run stored so far in the indexes, once per prefix: then `marker` says so. */
  async #indexStoredRuns(marker: string): Promise<void> {
    if ((await this.#read().exists(marker)) === 1) return;
    let cursor = '0';
    do {
      const [next, keys] = await this.#read().scan(cursor, 'MATCH', `${this.#runs}*`, 'COUNT', 500);
      cursor = next;
      // A run's own hash; its steps, facts and other lists have a further ':'.
      const runs = keys.filter((key) => !key.slice(this.#runs.length).includes(':'));
      const created = await Promise.all(runs.map((key) => this.#read().hget(key, 'created_at')));
      await Promise.all(
        runs.map((key, i) => {
          const at = created[i];
          if (!at) return Promise.resolve(0);
          const score = String(Date.parse(JSON.parse(at) as string));
          return this.#write(Op.indexRun, [key], [this.base, key.slice(this.#runs.length), score]);
        }),
      );
    } while (cursor !== '0');
    await this.#read().set(marker, '1');
  }

  /** The sets that hold every run `query` keeps (and no more than need be). */
  #keysFor(query: RunPageQuery): string[] {
    if (query.userId !== undefined) {
      const user = `${this.base}:u:${JSON.stringify(query.userId)}`;
      return query.status ? query.status.map((s) => `${user}:s:${s}`) : [user];
    }
    if (query.status) return query.status.map((s) => `${this.base}:s:${s}`);
    if (query.entry !== undefined) return [`${this.base}:e:${query.entry}`];
    return [this.base];
  }

  /** Up to `n` entries of `key` after `cursor` (older), newest first. */
  async #after(key: string, cursor: Entry | null, n: number): Promise<Entry[]> {
    const redis = this.#read();
    if (cursor === null) {
      return entries(
        await redis.zrevrangebyscore(key, '+inf', '-inf', 'WITHSCORES', 'LIMIT', 0, n),
      );
    }
    const [same, older] = await Promise.all([
      redis.zrevrangebyscore(key, cursor.score, cursor.score, 'WITHSCORES'),
      redis.zrevrangebyscore(key, `(${cursor.score}`, '-inf', 'WITHSCORES', 'LIMIT', 0, n),
    ]);
    return [...entries(same).filter((e) => e.id < cursor.id), ...entries(older)].slice(0, n);
  }
}

/** `[member, score, …]` as entries. */
function entries(flat: readonly string[]): Entry[] {
  const out: Entry[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    out.push({ id: flat[i] as string, score: Number(flat[i + 1]) });
  }
  return out;
}
