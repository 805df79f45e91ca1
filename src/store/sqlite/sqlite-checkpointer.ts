/**
 * @module WAL checkpoints off the event loop. In WAL mode SQLite copies the log back into the
 * database file (a checkpoint) when the log passes `wal_autocheckpoint` pages, inside the
 * commit that crossed it: a few milliseconds on the event loop every few hundred commits.
 * A {@link WalCheckpointer} runs `PRAGMA wal_checkpoint(PASSIVE)` on its own connection in a
 * worker thread instead, every `intervalMs`; a passive checkpoint never waits for the writer
 * and never makes it wait. The store's connection keeps an automatic checkpoint at a far
 * larger size, so the log stays bounded if the thread falls behind or stops.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * The thread's code (CommonJS, run with `eval`: it needs no loader and no file of its own).
 * It opens the file, checkpoints on a timer, and closes the connection when told to.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path);
const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (err) {
    // The store goes back to checkpointing in its commits; this thread stops.
    parentPort.postMessage({ error: String(err && err.message || err) });
    clearInterval(timer);
  }
}, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  if (db.open) db.close();
  parentPort.close();
});
`;

/** Pages of log the store's own connection lets grow before it checkpoints itself. */
export const FALLBACK_AUTOCHECKPOINT_PAGES = 16_000;

/** A worker thread checkpointing the WAL of the database file at `path`. */
export class WalCheckpointer {
  readonly #worker: Worker;
  readonly #exited: Promise<void>;

  /** `onError` hears of a failed checkpoint or a thread that stopped. */
  constructor(path: string, intervalMs: number, onError: (err: Error) => void) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.#worker = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData: { path, intervalMs, driver },
    });
    // Never what keeps a process alive.
    this.#worker.unref();
    this.#worker.on('message', (m: { error?: string }) => {
      if (m.error !== undefined) onError(new Error(`WAL checkpoint failed: ${m.error}`));
    });
    this.#exited = new Promise((resolve) => {
      this.#worker.once('error', (err) => {
        onError(err);
      });
      this.#worker.once('exit', () => {
        resolve();
      });
    });
  }

  /** Stops checkpointing and closes the thread's connection. */
  close(): Promise<void> {
    // Whoever awaits this keeps the process alive until the thread is gone.
    this.#worker.ref();
    this.#worker.postMessage('close');
    return this.#exited;
  }
}
