/**
 * @module Group commit for the SQLite store: the writes of one turn of the event loop run in
 * one transaction, committed when the turn ends (and at least every `maxBatchMs` of a turn
 * that goes on writing). A commit costs far more than a statement (a WAL write, locks,
 * now and then a checkpoint), and a turn of a busy runtime makes many writes.
 *
 * What this changes, and what it does not:
 * - a write runs (or, for rows the store holds back, is checked) at once, so constraint
 *   errors (a duplicate id, a seq out of order) reject the write that caused them, and this
 *   process reads its own writes at once;
 * - a write resolves before it is durable; `flush()` resolves once it is. The runtime
 *   flushes before it acknowledges anything (see `RunStore.flush`), so a crash loses at most
 *   writes nobody was told about, and the file keeps a consistent prefix of them;
 * - the turn holds the file's write lock (`BEGIN IMMEDIATE`): another process waits for it
 *   up to its busy timeout. Two stores on one file in one process would wait for each
 *   other: open one store per file per process.
 */
import type Database from 'better-sqlite3';
import { InternalError } from '../../errors/internal-error.js';

interface Deferred {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(err: Error): void;
}

/** A promise with its settling functions (Node 20 has no `Promise.withResolvers`). */
function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A commit nobody waits for still reports its failure, through `onError`.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

/** Runs `fn`, resolving its value or rejecting with what it threw (never throwing). */
export function settle<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}

/** What the owner of a {@link TurnCommit} does at the edges of its transactions. */
export interface TurnHooks {
  /** Right after `BEGIN`, under the write lock. */
  begun?(): void;
  /** Right before `COMMIT`: the last writes of the transaction (held rows). */
  beforeCommit?(): void;
  /** The transaction was rolled back: forget what belonged to it. */
  rolledBack?(): void;
}

/** The open transaction of the current turn, and its commit. */
export class TurnCommit {
  readonly #db: Database.Database;
  readonly #maxBatchMs: number;
  readonly #onError: (err: Error) => void;
  readonly #hooks: TurnHooks;
  /** Settles when the open transaction commits (or fails to); `null` with none open. */
  #committed: Deferred | null = null;
  /** When the open transaction began (`performance.now()`). */
  #openedAt = 0;
  #scheduled = false;
  /** Why writes are refused (a failed commit), if they are. */
  #failure: InternalError | null = null;
  #closed = false;

  /**
   * `maxBatchMs`: a turn that goes on writing commits at least this often; `0` commits every
   * write by itself. `onError` hears of a failed commit.
   */
  constructor(
    db: Database.Database,
    maxBatchMs: number,
    onError: (err: Error) => void = () => undefined,
    hooks: TurnHooks = {},
  ) {
    if (!(Number.isFinite(maxBatchMs) && maxBatchMs >= 0)) {
      throw new RangeError(`sqliteStore: maxBatchMs must be a number >= 0, got ${maxBatchMs}`);
    }
    this.#db = db;
    this.#maxBatchMs = maxBatchMs;
    this.#onError = onError;
    this.#hooks = hooks;
  }

  /**
   * Runs a write in the turn's transaction, opening it (and scheduling its commit) on the
   * turn's first write. A write of several statements should be a `db.transaction()`: inside
   * the turn's transaction it is a savepoint of its own.
   */
  write<T>(fn: () => T): Promise<T> {
    if (this.#failure !== null) return Promise.reject(this.#failure);
    if (this.#committed !== null && performance.now() - this.#openedAt > this.#maxBatchMs) {
      const failure = this.#commitNow();
      if (failure) return Promise.reject(failure);
    }
    if (this.#committed === null) {
      try {
        // IMMEDIATE: the write lock for the turn, so no writer of another process can make
        // this transaction fail later (it waits up to its busy timeout instead).
        this.#db.exec('BEGIN IMMEDIATE');
      } catch (err) {
        return Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
      this.#hooks.begun?.();
      this.#openedAt = performance.now();
      this.#committed = deferred();
      if (!this.#scheduled && this.#maxBatchMs > 0) {
        this.#scheduled = true;
        setImmediate(this.#endTurn);
      }
    }
    const result = settle(fn);
    if (this.#maxBatchMs === 0) {
      const failure = this.#commitNow();
      if (failure) return Promise.reject(failure);
    }
    return result;
  }

  /** Resolves when the writes so far are committed; `null` when none wait. */
  flush(): Promise<void> | null {
    if (this.#failure !== null) return Promise.reject(this.#failure);
    return this.#committed?.promise ?? null;
  }

  /** Commits what is open; no more writes after. Rejects if that (or an earlier) commit failed. */
  close(): Promise<void> {
    this.#commit();
    this.#closed = true;
    return this.closed();
  }

  /** How closing went: resolved, or the commit failure. */
  closed(): Promise<void> {
    return this.#failure === null ? Promise.resolve() : Promise.reject(this.#failure);
  }

  #commitNow(): InternalError | null {
    this.#commit();
    return this.#failure;
  }

  readonly #endTurn = (): void => {
    this.#scheduled = false;
    this.#commit();
  };

  /** Commits the open transaction. A failed commit loses it: every write after is refused. */
  #commit(): void {
    const committed = this.#committed;
    if (this.#closed || committed === null) return;
    this.#committed = null;
    try {
      if (!this.#db.open) throw new Error('the database connection is closed');
      this.#hooks.beforeCommit?.();
      this.#db.exec('COMMIT');
      committed.resolve();
    } catch (err) {
      this.#fail(committed, err);
    }
  }

  /**
   * Gives up the open transaction because a write of it failed after its caller was told it
   * succeeded (a held row that could not be written): the same as a failed commit. Returns
   * the error every write after is refused with.
   */
  abort(err: unknown): InternalError {
    const committed = this.#committed;
    this.#committed = null;
    if (committed) this.#fail(committed, err);
    return this.#failure ?? (err instanceof InternalError ? err : new InternalError(String(err)));
  }

  #fail(committed: Deferred, err: unknown): void {
    this.#failure = new InternalError(
      `the SQLite store could not commit its writes (${err instanceof Error ? err.message : String(err)}); it takes no more`,
      { cause: err },
    );
    try {
      if (this.#db.open) this.#db.exec('ROLLBACK');
    } catch {
      // Nothing left to roll back.
    }
    this.#hooks.rolledBack?.();
    committed.reject(this.#failure);
    this.#onError(this.#failure);
  }
}
