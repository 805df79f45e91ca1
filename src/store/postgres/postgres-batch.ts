/**
 * @module Group commit for the PostgreSQL store: the operations asked in one turn of the
 * event loop — by every run of the process — go to the server as one call of the schema's
 * `apply` function (`postgres-functions.ts`): one round trip, one transaction, one commit.
 * While a batch is at the server the next one gathers; it leaves when the answer is back and
 * the callers it woke have asked their next operations (one turn later).
 *
 * The rows the store held back (`postgres-held-rows.ts`) go with the next batch, written
 * before its operations in the same call. An operation resolves once its batch has committed;
 * a held write resolved when it was held, and `flush()` resolves once the batch carrying it has
 * committed. Held rows that fail to commit (the server refuses one, or whether they committed
 * cannot be learnt) fail that flush and every later one: the store takes no more writes, as
 * the SQLite store after a failed commit. A refused operation (an unknown id,
 * an id taken, a `seq` out of order) rejects alone with its typed error. A batch that fails
 * as a whole (a deadlock with another process, a lost connection) is tried again, each
 * operation alone in a transaction of its own, so one bad operation cannot take the others
 * down; a connection the server dropped is replaced by the pool meanwhile.
 *
 * A connection lost after the server committed a batch but before its answer arrived is not
 * a batch to run again (its writes would be refused as done already): each batch's answers are
 * kept under its id in its own transaction (`<schema>.batches`), and after a lost connection
 * the batcher ends that connection's server process (its transaction may still be running)
 * and reads them; only a batch that is not there runs again.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { BudgetExceededError, type BudgetLimit } from '../../errors/budget-exceeded-error.js';
import { ConflictError } from '../../errors/conflict-error.js';
import { InternalError } from '../../errors/internal-error.js';
import { NotFoundError } from '../../errors/not-found-error.js';
import { WorkerLostError } from '../../errors/worker-lost-error.js';
import { mailboxFull } from '../actor-records.js';
import type { PostgresHeldRows } from './postgres-held-rows.js';

/** Operations in one call of `apply` at most (its JSON and its transaction stay bounded). */
export const MAX_BATCH = 1_000;

/**
 * Every this many calls, one also removes the kept answers of batches five minutes old (they
 * are read only just after a connection is lost).
 */
const PRUNE_EVERY = 1_000;

/** How long the batcher waits for a lost connection's server process to end, ms. */
const GONE_WAIT_MS = 5_000;

/**
 * A batch whose connection was lost and whose outcome could not be learnt (its server process
 * did not end, or the kept answers could not be read): it may have committed, so it is not run
 * again; its operations reject with this.
 */
class OutcomeUnknown extends Error {}

/** A commit's promise and its settling functions. */
interface Commit {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(err: Error): void;
}

function commit(): Commit {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A commit nobody flushed for still fails the store; no unhandled rejection.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

/** A call that failed, with the server process of its connection (`null`: unknown). */
class CallFailed extends Error {
  constructor(
    readonly reason: unknown,
    readonly pid: number | null,
  ) {
    super(reason instanceof Error ? reason.message : String(reason));
  }
}

/**
 * Whether `err` is the server's answer (an SQLSTATE: the transaction was rolled back), not a
 * connection lost on the way.
 */
const fromServer = (err: unknown): boolean =>
  typeof err === 'object' &&
  err !== null &&
  typeof (err as { code?: unknown }).code === 'string' &&
  /^[0-9A-Z]{5}$/.test((err as { code: string }).code) &&
  !connectionGone((err as { code: string }).code);

/**
 * SQLSTATEs of a connection the server ended (`57P01` terminated by an administrator, `57P02`
 * a crash, `57P03` not accepting connections now, class `08` connection exceptions): not a
 * refusal of the batch but a connection lost, whose batch may be run again on another.
 */
const connectionGone = (code: string): boolean => /^(08|57P0)/.test(code);

/** Calls of one batch at most, each on a connection of its own, while connections are lost. */
const CALL_TRIES = 3;

/** One operation of a batch: `op` names the schema's function, the rest are its arguments. */
export interface BatchOp {
  readonly op: string;
  readonly [arg: string]: unknown;
}

interface Pending {
  readonly op: BatchOp;
  resolve(value: unknown): void;
  reject(err: Error): void;
}

/** What one operation answered. */
type Answer =
  | { readonly ok: unknown }
  | { readonly err: 'not_found'; readonly kind: string; readonly id: string }
  | {
      readonly err: 'conflict';
      readonly message: string;
      readonly details: Record<string, unknown> | null;
    }
  /** A fenced operation whose writer's turn at step `id` is over (`take_turn`). */
  | { readonly err: 'fenced'; readonly id: string }
  /** A reservation that does not fit (`reserve`). */
  | {
      readonly err: 'over';
      readonly limit: BudgetLimit;
      readonly asked: number;
      readonly left: number;
    }
  /** A message to an actor whose mailbox is full (`accept_message`). */
  | {
      readonly err: 'queue_full';
      readonly name: string;
      readonly key: string;
      readonly max_queue: number;
    };

/** The refusal of a write whose writer's turn at step `stepId` is over. */
export function turnLost(stepId: string): WorkerLostError {
  return new WorkerLostError(
    `this writer lost its turn at step ${stepId}: another replica took it over`,
    { details: { reason: 'fenced', step_id: stepId } },
  );
}

/** The typed error of a refused operation. */
function refusal(op: BatchOp, answer: Exclude<Answer, { readonly ok: unknown }>): Error {
  switch (answer.err) {
    case 'not_found':
      return new NotFoundError(answer.kind, answer.id);
    case 'conflict': {
      const details = answer.details ?? undefined;
      return new ConflictError(answer.message, details ? { details } : {});
    }
    case 'fenced':
      return turnLost(answer.id);
    case 'over':
      return new BudgetExceededError(
        answer.limit,
        `run ${String(op['run_id'])}`,
        answer.asked,
        answer.left,
      );
    case 'queue_full':
      return mailboxFull(answer, answer.max_queue);
  }
}

/** The value of `answer`, or its typed error. */
function settle(pending: Pending, answer: Answer): void {
  if ('ok' in answer) pending.resolve(answer.ok);
  else pending.reject(refusal(pending.op, answer));
}

/** The batches of one store: see the module. */
export class PostgresBatcher {
  readonly #pool: pg.Pool;
  readonly #apply: string;
  /** The prepared statement's name: one per schema (stores may share a pool). */
  readonly #name: string;
  readonly #ready: Promise<void>;
  /** The batches' ids: this batcher's, then a count. */
  readonly #id = randomUUID();
  #calls = 0;
  readonly #answered: string;
  #queue: Pending[] = [];
  #sending = false;
  #scheduled = false;
  /** The rows held for the next batch (`null`: the store holds none). */
  readonly #held: PostgresHeldRows | null;
  /** The commit of the held rows gathering for the next batch, and of those at the server. */
  #gathering: Commit | null = null;
  #atServer: Commit | null = null;
  /** Writes held for the next batch. */
  #heldCount = 0;
  /** Why held writes failed, once they have: every flush and held write after is refused. */
  #failure: InternalError | null = null;

  /**
   * `schema`: the quoted schema holding `apply`; `ready`: settles once it exists; `held`: the
   * rows the store holds back, sent with each batch.
   */
  constructor(
    pool: pg.Pool,
    schema: string,
    ready: Promise<void>,
    held: PostgresHeldRows | null = null,
  ) {
    this.#pool = pool;
    this.#held = held;
    this.#apply = `SELECT ${schema}.apply($1::jsonb, $2, $3, $4::json) AS answers`;
    this.#answered = `SELECT answers FROM ${schema}.batches WHERE id = $1`;
    this.#name = `axon_apply_${schema.replaceAll('"', '')}`;
    this.#ready = ready;
  }

  /** Runs `op` in the next batch; resolves its value once the batch has committed. */
  run<T>(op: BatchOp): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ op, resolve: resolve, reject });
      this.#schedule();
    });
  }

  /** True while an operation or a held row waits, or a batch is at the server. */
  get busy(): boolean {
    return this.#sending || this.#queue.length > 0 || this.#gathering !== null;
  }

  /** Why held writes failed, if they have: the store refuses writes with it. */
  get failure(): InternalError | null {
    return this.#failure;
  }

  /**
   * A write was held: the next batch carries it (sent when this turn ends). Past
   * {@link MAX_BATCH} held writes in one batch, the commit the caller should wait for (a turn
   * that goes on writing without end waits for its writes to commit); else `null`.
   */
  held(): Promise<void> | null {
    this.#gathering ??= commit();
    this.#schedule();
    return ++this.#heldCount >= MAX_BATCH ? this.#gathering.promise : null;
  }

  /**
   * Resolves once every row held so far has committed; rejects when held rows failed to;
   * `null` when none is held or at the server.
   */
  flush(): Promise<void> | null {
    if (this.#failure) return Promise.reject(this.#failure);
    return (this.#gathering ?? this.#atServer)?.promise ?? null;
  }

  #schedule(): void {
    if (this.#scheduled || this.#sending) return;
    this.#scheduled = true;
    setImmediate(this.#send);
  }

  readonly #send = (): void => {
    this.#scheduled = false;
    if (this.#sending || (this.#queue.length === 0 && this.#gathering === null)) return;
    // At most MAX_BATCH a call: a burst of writes goes as several bounded calls, in order.
    const batch = this.#queue.splice(0, MAX_BATCH);
    const rows = this.#held?.take() ?? null;
    const committed = this.#gathering;
    this.#gathering = null;
    this.#heldCount = 0;
    this.#atServer = committed;
    this.#sending = true;
    void this.#sendBatch(batch, rows, committed).finally(() => {
      this.#sending = false;
      if (this.#atServer === committed) this.#atServer = null;
      if (this.#queue.length > 0 || this.#gathering !== null) this.#schedule();
    });
  };

  async #sendBatch(batch: Pending[], rows: string | null, committed: Commit | null): Promise<void> {
    try {
      await this.#ready;
    } catch (err) {
      for (const p of batch) p.reject(err as Error);
      if (committed) this.#heldFailed(committed, err);
      return;
    }
    let answers: Answer[] | null;
    try {
      answers = await this.#once(
        batch.map((p) => p.op),
        rows,
      );
    } catch (err) {
      if (err instanceof OutcomeUnknown) {
        for (const p of batch) p.reject(err);
        if (committed) this.#heldFailed(committed, err);
        return;
      }
      answers = null;
    }
    if (answers === null) {
      // The held rows alone, then one operation at a time: each its own answer or error.
      if (rows !== null) {
        try {
          await this.#once([], rows);
        } catch (err) {
          if (committed) this.#heldFailed(committed, err);
        }
      }
      for (const p of batch) {
        try {
          const [answer] = await this.#once([p.op], null);
          settle(p, answer as Answer);
        } catch (err) {
          p.reject(err instanceof Error ? err : new Error(String(err)));
        }
      }
      if (committed) this.#committed(committed);
      return;
    }
    if (committed) this.#committed(committed);
    for (let i = 0; i < batch.length; i++) settle(batch[i] as Pending, answers[i] as Answer);
  }

  /** Held rows of a batch that committed: durable, unless held rows before them failed. */
  #committed(committed: Commit): void {
    if (this.#failure) committed.reject(this.#failure);
    else committed.resolve();
  }

  /** Held rows did not commit: this flush and every later one fail, and no write is held again. */
  #heldFailed(committed: Commit, err: unknown): void {
    const reason = err instanceof Error ? err.message : String(err);
    this.#failure ??= new InternalError(
      `the PostgreSQL store could not commit the writes it held back (${reason}); it takes no more`,
      { cause: err },
    );
    this.#held?.clear();
    committed.reject(this.#failure);
    this.#gathering?.reject(this.#failure);
  }

  /**
   * The answers of `ops`, run once: on a lost connection, those the server kept if it had
   * committed them; rejects with the server's error (nothing committed), or the connection's
   * when the kept answers cannot be read either.
   */
  async #once(ops: readonly BatchOp[], rows: string | null): Promise<Answer[]> {
    for (let tries = 1; ; tries++) {
      const id = `${this.#id}:${++this.#calls}`;
      try {
        return await this.#call(ops, id, rows);
      } catch (err) {
        if (!(err instanceof CallFailed)) throw err;
        // The server's refusal: rolled back, nothing to run again.
        if (fromServer(err.reason)) throw err.reason as Error;
        // Lost on the way: answered from what the server kept, if it committed; run again
        // on another connection if it did not (a pooled connection the server ended too).
        if (err.pid !== null) {
          const kept = await this.#kept(id, err.pid).catch((e: unknown) => {
            throw new OutcomeUnknown(
              `the connection was lost during a write, and whether it committed could not be learnt: ${(e as Error).message}`,
              { cause: err.reason },
            );
          });
          if (kept !== null) return kept;
        }
        if (tries >= CALL_TRIES) throw err.reason as Error;
      }
    }
  }

  async #call(ops: readonly BatchOp[], id: string, held: string | null): Promise<Answer[]> {
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (err) {
      throw new CallFailed(err, null);
    }
    const pid = (client as { processID?: number }).processID ?? null;
    // A connection lost during the call is its query's error; the client says it again as an
    // event, which, unheard, would end the process (the pool hears it only while idle).
    const heard = (): void => undefined;
    client.on('error', heard);
    try {
      const { rows } = await client.query<{ answers: Answer[] }>({
        name: this.#name,
        text: this.#apply,
        values: [JSON.stringify(ops), id, this.#calls % PRUNE_EVERY === 0, held],
      });
      client.off('error', heard);
      client.release();
      return (rows[0] as { answers: Answer[] }).answers;
    } catch (err) {
      client.off('error', heard);
      // A connection that failed is not reused.
      client.release(fromServer(err) ? undefined : (err as Error));
      throw new CallFailed(err, pid);
    }
  }

  /**
   * The answers kept for batch `id` (`null`: it did not commit), once the server process of
   * its lost connection, `pid`, has ended — its transaction ends with it, committed or not.
   */
  async #kept(id: string, pid: number | null): Promise<Answer[] | null> {
    if (pid !== null) {
      await this.#query('SELECT pg_terminate_backend($1)', [pid]);
      const until = Date.now() + GONE_WAIT_MS;
      for (;;) {
        const { rowCount } = await this.#query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [
          pid,
        ]);
        if (rowCount === 0) break;
        if (Date.now() > until) throw new Error(`server process ${pid} did not end`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    const { rows } = await this.#query(this.#answered, [id]);
    return (rows[0] as { answers: Answer[] } | undefined)?.answers ?? null;
  }

  /** A statement of the batcher's own, on another connection while the server ends them. */
  async #query(text: string, values: readonly unknown[]): Promise<pg.QueryResult> {
    for (let tries = 1; ; tries++) {
      try {
        return await this.#pool.query(text, values as unknown[]);
      } catch (err) {
        if (fromServer(err) || tries >= CALL_TRIES) throw err;
      }
    }
  }
}
