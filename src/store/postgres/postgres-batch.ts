/**
 * @module Group commit for the PostgreSQL store: the operations asked in one turn of the
 * event loop — by every run of the process — go to the server as one call of the schema's
 * `apply` function (`postgres-functions.ts`): one round trip, one transaction, one commit.
 * While a batch is at the server the next one gathers; it leaves when the answer is back and
 * the callers it woke have asked their next operations (one turn later).
 *
 * An operation resolves once its batch has committed — nothing is acknowledged before it is
 * durable, so the store holds nothing back for `flush()`. A refused operation (an unknown id,
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
import { NotFoundError } from '../../errors/not-found-error.js';
import { WorkerLostError } from '../../errors/worker-lost-error.js';
import { mailboxFull } from '../actor-records.js';

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

  /** `schema`: the quoted schema holding `apply`; `ready`: settles once it exists. */
  constructor(pool: pg.Pool, schema: string, ready: Promise<void>) {
    this.#pool = pool;
    this.#apply = `SELECT ${schema}.apply($1::jsonb, $2, $3) AS answers`;
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

  /** True while an operation waits or a batch is at the server. */
  get busy(): boolean {
    return this.#sending || this.#queue.length > 0;
  }

  #schedule(): void {
    if (this.#scheduled || this.#sending) return;
    this.#scheduled = true;
    setImmediate(this.#send);
  }

  readonly #send = (): void => {
    this.#scheduled = false;
    if (this.#sending || this.#queue.length === 0) return;
    // At most MAX_BATCH a call: a burst of writes goes as several bounded calls, in order.
    const batch = this.#queue.splice(0, MAX_BATCH);
    this.#sending = true;
    void this.#sendBatch(batch).finally(() => {
      this.#sending = false;
      if (this.#queue.length > 0) this.#schedule();
    });
  };

  async #sendBatch(batch: Pending[]): Promise<void> {
    try {
      await this.#ready;
    } catch (err) {
      for (const p of batch) p.reject(err as Error);
      return;
    }
    let answers: Answer[] | null;
    try {
      answers = await this.#once(batch.map((p) => p.op));
    } catch (err) {
      if (err instanceof OutcomeUnknown) {
        for (const p of batch) p.reject(err);
        return;
      }
      answers = null;
    }
    if (answers === null) {
      // One at a time: each operation's own answer, or its own error.
      for (const p of batch) {
        try {
          const [answer] = await this.#once([p.op]);
          settle(p, answer as Answer);
        } catch (err) {
          p.reject(err instanceof Error ? err : new Error(String(err)));
        }
      }
      return;
    }
    for (let i = 0; i < batch.length; i++) settle(batch[i] as Pending, answers[i] as Answer);
  }

  /**
   * The answers of `ops`, run once: on a lost connection, those the server kept if it had
   * committed them; rejects with the server's error (nothing committed), or the connection's
   * when the kept answers cannot be read either.
   */
  async #once(ops: readonly BatchOp[]): Promise<Answer[]> {
    for (let tries = 1; ; tries++) {
      const id = `${this.#id}:${++this.#calls}`;
      try {
        return await this.#call(ops, id);
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

  async #call(ops: readonly BatchOp[], id: string): Promise<Answer[]> {
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
        values: [JSON.stringify(ops), id, this.#calls % PRUNE_EVERY === 0],
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
