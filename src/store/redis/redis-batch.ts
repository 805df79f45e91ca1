/**
 * @module The Redis store's writes on their way: every write is one operation of the
 * store's one script (`redis-scripts.ts`); the writes of one turn of the event loop are held
 * and sent together as one call of it (one socket write, one reply), each resolving or
 * rejecting on its own. A writer that may lose its turn (a fleet replica) gives each write
 * its fences: guards checked in the same call, just before it. A call that someone waits to
 * follow on the connection (`onSent`: a fleet worker's job finish after its step's end) is
 * held in the socket until the turn's end, so that both go in one socket write.
 */
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import type { RedisClient } from './redis-connection.js';
import { WorkerLostError } from '../../errors/worker-lost-error.js';
import { BATCH, Op, OP_ERROR, OP_FENCED, type OpCode } from './redis-scripts.js';
import type { WriteTarget } from '../write-target.js';

export type { WriteTarget } from '../write-target.js';

/** A fence: `key` must hold `token` for the write to run. */
export interface WriteGuard {
  readonly key: string;
  readonly token: string;
}

/** One operation of the script: its code, keys and arguments. */
export interface ScriptOp {
  readonly code: OpCode;
  readonly keys: readonly string[];
  readonly args: readonly string[];
}

/** One write waiting for its turn's call of the script. */
interface PendingWrite extends ScriptOp {
  /** Checked in the same call, just before: one that does not hold stops the write. */
  readonly guards: readonly WriteGuard[];
  /** Runs right after it in the same call, only if it succeeded (`Op.then`). */
  readonly next: PendingWrite | null;
  resolve(result: unknown): void;
  reject(err: Error): void;
}

/** The refusal of a write whose fence did not hold. */
function fencedError(guards: readonly WriteGuard[]): WorkerLostError {
  return new WorkerLostError(
    'this writer lost its turn: another took over what it was writing (its fence no longer holds)',
    { details: { reason: 'fenced', fences: guards.map((g) => g.key) } },
  );
}

/** A client's events after which its Redis may not have the script any more. */
const SCRIPT_LOST = ['close', 'reconnecting', 'end', '+node', '-node', 'node error'];

/** The script's digest, for EVALSHA. */
const BATCH_SHA = createHash('sha1').update(BATCH).digest('hex');

/**
 * A turn's writes go at once when this many are held, without waiting for the turn's end:
 * Redis then works on them while this process goes on with the turn, where one call per
 * turn would have each side wait for the other (measured in `bench:store`: 8 does better
 * than 4, 16 or a whole turn).
 */
const MAX_BATCH_OPS = 8;

/** … and when they hold this many keys and arguments. */
const MAX_BATCH_ARGS = 50_000;

/** More of a {@link RedisBatch}: what its store adds to every call. */
export interface RedisBatchOptions {
  /**
   * Whether the store may be written: `null` once it may, else a promise that settles when
   * it may (its format opened: `redis-format.ts`); calls wait for it, and a rejection
   * rejects the writes waiting. Default: at once.
   */
  readonly ready?: () => Promise<void> | null;
  /** The prefix of the wake streams of the processes a step's appends wake; default none. */
  readonly wakePrefix?: string;
}

/** The keys and arguments `write` (and the one chained to it) adds to a call. */
function argsOf(write: PendingWrite): number {
  let n = 0;
  for (let w: PendingWrite | null = write; w; w = w.next) {
    n += w.keys.length + w.args.length + 3 + w.guards.length * 5;
  }
  return n;
}

/**
 * Holds what is written on `client`'s socket until the end of this turn of the event loop
 * (`setImmediate`), then writes it at once: the commands sent meanwhile, from promise
 * callbacks too, go in one socket write. A cluster's connections are left as they are.
 */
function corkTurn(client: RedisClient): void {
  if (!(client instanceof Redis) || client.status !== 'ready') return;
  const socket = client.stream;
  socket.cork();
  setImmediate(() => {
    socket.uncork();
  });
}

/** The writes of a Redis store, batched by turn; see the module. */
export class RedisBatch {
  readonly #client: RedisClient;
  readonly #fence: ((target: WriteTarget) => readonly WriteGuard[]) | null;
  readonly #ready: () => Promise<void> | null;
  readonly #wakePrefix: string;
  /** Set while the writes wait for {@link RedisBatchOptions.ready}. */
  #waiting = false;
  /** Writes held for one call of the script: sent at the turn's end, at {@link MAX_BATCH_OPS}, or before a read. */
  #pending: PendingWrite[] = [];
  #pendingArgs = 0;
  #scheduled: NodeJS.Immediate | null = null;
  /** Told once the writes held now are sent (`onSent`). */
  #onSent: (() => void)[] = [];
  /**
   * Whether this client's Redis surely has the script: a call by its digest was answered,
   * and no connection has closed, nor a cluster node come or gone, since.
   */
  #scriptKnown = false;

  /** The last call sent, settled once it is answered. */
  #last: Promise<unknown> = Promise.resolve();
  readonly #unknown = (): void => {
    this.#scriptKnown = false;
  };

  constructor(
    client: RedisClient,
    fence: ((target: WriteTarget) => readonly WriteGuard[]) | null,
    options: RedisBatchOptions = {},
  ) {
    this.#client = client;
    this.#fence = fence;
    this.#ready = options.ready ?? (() => null);
    this.#wakePrefix = options.wakePrefix ?? '';
    for (const event of SCRIPT_LOST) client.on(event, this.#unknown);
  }

  /** Sends what is held, and stops listening to the client. */
  close(): void {
    this.send();
    for (const event of SCRIPT_LOST) this.#client.off(event, this.#unknown);
  }

  /**
   * Calls `fn` once the writes held now have been sent (at once when none is held), so that
   * a command sent on this client after it runs after them. While this client's Redis may
   * lack the script (none of its calls answered yet, or a connection closed since), `fn`
   * waits for the call's reply instead: a call by digest that Redis did not know is sent
   * again whole, after whatever followed it.
   */
  onSent(fn: () => void): void {
    if (this.#pending.length > 0) this.#onSent.push(fn);
    else if (this.#scriptKnown) fn();
    else void this.#last.then(fn, fn);
  }

  /**
   * Queues one operation of the script for this turn's call; resolves its result once Redis
   * has run it, rejects with what it raised. Its fences are those of `target`, or `guards`
   * given.
   */
  write(
    code: OpCode,
    keys: readonly string[],
    args: readonly string[],
    target?: WriteTarget,
    guards: readonly WriteGuard[] = this.#guardsOf(target),
  ): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      this.#queue({ code, keys, args, guards, next: null, resolve, reject });
    });
  }

  /**
   * Queues `op` and `next` right after it in the same call, `next` run only if `op`
   * succeeded (else it rejects as fenced, not run); both carry the fences of `target`.
   * Resolves each one's result.
   */
  chain(op: ScriptOp, next: ScriptOp, target?: WriteTarget): [Promise<unknown>, Promise<unknown>] {
    const guards = this.#guardsOf(target);
    let second!: PendingWrite;
    const secondDone = new Promise<unknown>((resolve, reject) => {
      second = { ...next, guards, next: null, resolve, reject };
    });
    const firstDone = new Promise<unknown>((resolve, reject) => {
      this.#queue({ ...op, guards, next: second, resolve, reject });
    });
    return [firstDone, secondDone];
  }

  #guardsOf(target: WriteTarget | undefined): readonly WriteGuard[] {
    return target && this.#fence ? this.#fence(target) : [];
  }

  /** Holds `write` (and the one chained to it) for this turn's call, or sends now when full. */
  #queue(write: PendingWrite): void {
    this.#pending.push(write);
    this.#pendingArgs += argsOf(write);
    if (this.#pendingArgs >= MAX_BATCH_ARGS || this.#pending.length >= MAX_BATCH_OPS) this.send();
    else
      this.#scheduled ??= setImmediate(() => {
        this.send();
      });
  }

  /** Sends the writes held so far as one call of the script (before a read, so it sees them). */
  send(): void {
    if (this.#scheduled) {
      clearImmediate(this.#scheduled);
      this.#scheduled = null;
    }
    if (this.#pending.length === 0 || this.#waiting) return;
    const ready = this.#ready();
    if (ready) {
      this.#waiting = true;
      ready.then(
        () => {
          this.#waiting = false;
          // What was held meanwhile goes in calls of at most MAX_BATCH_OPS.
          while (this.#pending.length > 0) this.#sendSome(MAX_BATCH_OPS);
        },
        (err: unknown) => {
          this.#waiting = false;
          const error = err instanceof Error ? err : new Error(String(err));
          const writes = this.#pending;
          const onSent = this.#onSent;
          this.#pending = [];
          this.#pendingArgs = 0;
          this.#onSent = [];
          for (const w of writes) {
            w.reject(error);
            w.next?.reject(error);
          }
          for (const fn of onSent) fn();
        },
      );
      return;
    }
    this.#sendSome(this.#pending.length);
  }

  /** Sends the first `count` writes held as one call of the script. */
  #sendSome(count: number): void {
    const writes = this.#pending.slice(0, count);
    const rest = this.#pending.slice(count);
    const onSent = rest.length === 0 ? this.#onSent : [];
    this.#pending = rest;
    this.#pendingArgs = 0;
    for (const w of rest) this.#pendingArgs += argsOf(w);
    if (rest.length === 0) this.#onSent = [];
    const keys: string[] = [];
    const argv: string[] = ['0', this.#wakePrefix];
    let ops = 0;
    const add = (w: PendingWrite): void => {
      for (const g of w.guards) {
        keys.push(g.key);
        argv.push(String(Op.guard), '1', '1', g.token);
      }
      keys.push(...w.keys);
      argv.push(String(w.code), String(w.keys.length), String(w.args.length), ...w.args);
      ops += w.guards.length + 1;
    };
    for (const w of writes) {
      add(w);
      if (w.next) {
        argv.push(String(Op.then), '0', '0');
        ops++;
        add(w.next);
      }
    }
    argv[0] = String(ops);
    const known = this.#scriptKnown;
    // What follows the call on the connection (onSent) joins it in one socket write.
    if (known && onSent.length > 0) corkTurn(this.#client);
    const replied = (): void => {
      if (!known) for (const fn of onSent) fn();
    };
    const call = this.#call(keys, argv);
    this.#last = call;
    call.then(
      (results) => {
        replied();
        let at = 0;
        const settle = (w: PendingWrite): void => {
          at += w.guards.length;
          const r = results[at++];
          if (Array.isArray(r) && r[0] === OP_FENCED) w.reject(fencedError(w.guards));
          else if (Array.isArray(r) && r[0] === OP_ERROR) w.reject(new Error(String(r[1])));
          else w.resolve(r);
        };
        for (const w of writes) {
          settle(w);
          if (w.next) {
            at++;
            settle(w.next);
          }
        }
      },
      (err: unknown) => {
        replied();
        const error = err instanceof Error ? err : new Error(String(err));
        for (const w of writes) {
          w.reject(error);
          w.next?.reject(error);
        }
      },
    );
    // The call is on the connection (`#call` sends it before its first await).
    if (known) for (const fn of onSent) fn();
  }

  /** One call of the script: by its digest, or whole when this Redis does not have it yet. */
  async #call(keys: readonly string[], argv: readonly string[]): Promise<unknown[]> {
    try {
      const results = (await this.#client.evalsha(
        BATCH_SHA,
        keys.length,
        ...keys,
        ...argv,
      )) as unknown[];
      this.#scriptKnown = true;
      return results;
    } catch (err) {
      // NOSCRIPT: nothing ran; the script is sent and cached with this call.
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      this.#scriptKnown = false;
      return (await this.#client.eval(BATCH, keys.length, ...keys, ...argv)) as unknown[];
    }
  }
}
