/**
 * @module The leases of the threads an engine drives or queues (`runtime.leases`, key
 * `thread:<id>`): held from admission to the thread's end and renewed every third of their
 * time. Another engine on the same leases (a fleet's Redis) leaves a leased thread alone —
 * it neither resumes nor kills it — and takes it once its holder stopped renewing (it died).
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from '../observability/logger.js';
import type { Runtime } from '../runtime/runtime.js';

/** How long a thread's lease lives without renewal, by default: 30 s. */
export const DEFAULT_LEASE_MS = 30_000;

const key = (threadId: string): string => `thread:${threadId}`;

/** The thread leases of one engine; see the module. */
export class ThreadLeases {
  /** This engine, as the leases name their holder. */
  readonly owner = `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
  readonly #runtime: Runtime;
  readonly #ttlMs: number;
  readonly #held = new Set<string>();
  readonly #onLost: (threadId: string) => void;
  readonly #timer: NodeJS.Timeout;

  /** `onLost` is told of a thread whose lease another engine took (this one renewed too late). */
  constructor(runtime: Runtime, ttlMs: number, onLost: (threadId: string) => void) {
    this.#runtime = runtime;
    this.#ttlMs = ttlMs;
    this.#onLost = onLost;
    this.#timer = setInterval(() => void this.#renew(), Math.max(1, Math.floor(ttlMs / 3)));
    this.#timer.unref();
  }

  /** Takes thread `threadId`'s lease (or renews it); false while another engine holds it. */
  async take(threadId: string): Promise<boolean> {
    if (!(await this.#runtime.leases.acquire(key(threadId), this.owner, this.#ttlMs))) {
      return false;
    }
    this.#held.add(threadId);
    return true;
  }

  /** Lets thread `threadId`'s lease go. */
  async drop(threadId: string): Promise<void> {
    if (!this.#held.delete(threadId)) return;
    await this.#runtime.leases.release(key(threadId), this.owner);
  }

  async #renew(): Promise<void> {
    for (const id of [...this.#held]) {
      let kept: boolean;
      try {
        kept = await this.#runtime.leases.acquire(key(id), this.owner, this.#ttlMs);
      } catch (err) {
        // Redis away for a moment: try again next time; the lease may run out meanwhile.
        this.#runtime.logger.warn({ err, thread: id }, 'a thread lease could not be renewed');
        continue;
      }
      if (!kept && this.#held.delete(id)) this.#onLost(id);
    }
  }

  /** Stops renewing and lets every lease go (another engine may take the threads at once). */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    const held = [...this.#held];
    this.#held.clear();
    await Promise.allSettled(held.map((id) => this.#runtime.leases.release(key(id), this.owner)));
  }
}

/**
 * Runs `recover` every `ms` (never two at once), logging the threads it took: how an engine
 * on a fleet takes the threads of one that died. The timer does not hold the process open.
 */
export function sweepEvery(
  ms: number,
  recover: () => Promise<{
    readonly resumed: readonly string[];
    readonly crashed: readonly string[];
    readonly requeued: readonly string[];
  }>,
  logger: Logger,
): NodeJS.Timeout {
  let sweeping = false;
  const timer = setInterval(() => {
    if (sweeping) return;
    sweeping = true;
    recover()
      .then((r) => {
        if (r.resumed.length + r.crashed.length + r.requeued.length > 0) {
          logger.info(
            { resumed: r.resumed, crashed: r.crashed, requeued: r.requeued },
            'took over threads of an engine that stopped',
          );
        }
      })
      .catch((err: unknown) => {
        logger.warn({ err }, 'could not look for threads to take over');
      })
      .finally(() => {
        sweeping = false;
      });
  }, ms);
  timer.unref();
  return timer;
}
