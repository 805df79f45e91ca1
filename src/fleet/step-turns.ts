/**
 * @module A replica's turns at the steps it takes, and their fences. The job's lock is the
 * claim: BullMQ sets the step's job lock (`FleetKeys.jobLock`) to a token of this replica's
 * when it hands it the job, and that lock is the step's fence. Every write the replica's
 * store makes about the step (or a step made under it, or its run when only this step of the
 * run is here) is fenced with the turn ({@link StepTurns.turnOf}):
 *
 * - records in Redis: the write checks, in the same script call, that the lock still holds
 *   this turn's token (`RedisStoreOptions.fence`). No key of axon's own is written to take a
 *   step, nor left behind by one.
 * - records in PostgreSQL, which cannot see the lock: taking the turn records it on the step
 *   (`PostgresRunStore.takeTurn`, with the job's start count, which BullMQ raises with every
 *   take), and each write checks, in its transaction, that the step's turn is still this one
 *   (`PostgresStoreOptions.fence`).
 *
 * Once another replica has taken the job (this one frozen past its lock, or its job handed
 * back) — on Redis, once the lock has lapsed — this one writes nothing.
 */
import type { FleetKeys } from '../placement/fleet/fleet-keys.js';
import type { StepJob } from '../placement/fleet/fleet-jobs.js';
import type { StepStatus } from '../store/records.js';
import type { WriteGuard } from '../store/redis/redis-store.js';
import type { WriteTarget } from '../store/write-target.js';

/** This replica's turn at a step it took. */
export interface Turn {
  readonly stepId: string;
  readonly runId: string;
  readonly clientToken: string;
  /** The count of the job's starts, this one's (BullMQ's `attemptsStarted`). */
  readonly number: number;
  /** This turn's token (the lock's, BullMQ's). */
  readonly token: string;
  /** The step's job lock and this turn's token, as a guard. */
  readonly fence: WriteGuard;
  /** Set once the step's end was said on the fleet's `ended` stream by this turn. */
  said: boolean;
  /**
   * Resolves with the step's status once its end and notice are sent (`EndNotice.sent`):
   * the job's finish, sent after them on the same connection, runs after them.
   */
  readonly ending: Promise<StepStatus>;
  /** Resolves {@link ending}. */
  readonly endSent: (status: StepStatus) => void;
}

/**
 * Takes a turn in the records: resolves whether the step's cancel is recorded (its key,
 * `mark`); rejects with `WorkerLostError` when the turn is no longer the step's.
 */
export type TakeTurn = (turn: Turn, mark: string) => Promise<boolean>;

/** The turns of one replica; see the module. */
export class StepTurns {
  readonly #take: TakeTurn;
  readonly #keys: FleetKeys;
  /** The pool whose queue the jobs come from. */
  readonly #poolId: string;
  /** The steps taken here, by id. */
  readonly #turns = new Map<string, Turn>();
  /** Steps made under a step taken here (its delegations, tool calls): that step, by id. */
  readonly #roots = new Map<string, string>();

  constructor(take: TakeTurn, keys: FleetKeys, poolId: string) {
    this.#take = take;
    this.#keys = keys;
    this.#poolId = poolId;
  }

  /**
   * Takes the turn at the step of `job`, whose job `jobId` BullMQ handed this replica with
   * its lock's `token`, started `number` times (the writes of any earlier turn are refused
   * since). `cancelled` reads whether the step's cancel is recorded; it rejects with
   * `WorkerLostError` when the turn is no longer the step's.
   */
  take(
    job: StepJob,
    jobId: string,
    token: string,
    number: number,
  ): { readonly turn: Turn; readonly cancelled: Promise<boolean> } {
    const clientToken = job.body.client_token;
    let endSent!: (status: StepStatus) => void;
    const ending = new Promise<StepStatus>((resolve) => {
      endSent = resolve;
    });
    const turn: Turn = {
      stepId: job.step_id,
      runId: job.run_id,
      clientToken: typeof clientToken === 'string' ? clientToken : '',
      number,
      token,
      fence: { key: this.#keys.jobLock(this.#poolId, jobId), token },
      said: false,
      ending,
      endSent,
    };
    // Queued before any write of the turn (they go in the same call, after it, or later).
    const cancelled = this.#take(turn, this.#keys.cancelled(job.step_id));
    this.#turns.set(job.step_id, turn);
    return { turn, cancelled };
  }

  /** The turn at `stepId`, a step taken here (not one made under it). */
  of(stepId: string): Turn | undefined {
    return this.#turns.get(stepId);
  }

  /** Forgets the turn at `stepId` (and the steps made under it). */
  end(stepId: string): void {
    this.#turns.delete(stepId);
    for (const [child, root] of this.#roots) if (root === stepId) this.#roots.delete(child);
  }

  /**
   * The turn a write is fenced with: the turn at the step it is about — by its step, the step
   * it is made under, or its run and client token when it names no step. None for a write of
   * no step taken here.
   */
  turnOf(target: WriteTarget): Turn | undefined {
    let root: string | undefined;
    if (target.stepId !== undefined) {
      const parent = target.parentStepId ? this.#rootOf(target.parentStepId) : undefined;
      if (parent !== undefined) this.#roots.set(target.stepId, parent);
      root = this.#rootOf(target.stepId);
    }
    if (root === undefined && target.runId !== undefined) {
      const mine = [...this.#turns].filter(
        ([, t]) =>
          t.runId === target.runId &&
          (target.clientToken === undefined || t.clientToken === target.clientToken),
      );
      if (mine.length === 1) root = mine[0]?.[0];
    }
    return root === undefined ? undefined : this.#turns.get(root);
  }

  /** The step taken here that `id` is, or was made under. */
  #rootOf(id: string): string | undefined {
    return this.#turns.has(id) ? id : this.#roots.get(id);
  }
}
