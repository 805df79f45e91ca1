/**
 * @module A replica's turns at the steps it takes, and their fences. Taking a step sets the
 * step's fence (`<prefix>fleet:fence:<step_id>`) to a token of this turn; every write the
 * replica's store makes about the step — or a step made under it, or its run when only this
 * step of the run is here — carries that fence (`RedisStoreOptions.fence`), so once another
 * replica has taken the step over (this one frozen past its lock), this one writes nothing.
 */
import { randomBytes } from 'node:crypto';
import type { FleetKeys } from '../placement/fleet-keys.js';
import type { StepJob } from '../placement/fleet-jobs.js';
import type { RedisRunStore, WriteGuard, WriteTarget } from '../store/redis-store.js';

/** How long a step's fence is kept, ms (a day: longer than a step runs; its end deletes it). */
const FENCE_TTL_MS = 86_400_000;

/** This replica's turn at a step it took. */
export interface Turn {
  readonly runId: string;
  readonly clientToken: string;
  /** What the step's fence holds while the turn is this replica's. */
  readonly token: string;
  /** The step's fence and this turn's token, as a guard. */
  readonly fence: WriteGuard;
  /** Set once the step's end was said on the fleet's `ended` stream by this turn. */
  said: boolean;
}

/** The turns of one replica; see the module. */
export class StepTurns {
  readonly #store: RedisRunStore;
  readonly #keys: FleetKeys;
  readonly #replicaId: string;
  /** The steps taken here, by id. */
  readonly #turns = new Map<string, Turn>();
  /** Steps made under a step taken here (its delegations, tool calls): that step, by id. */
  readonly #roots = new Map<string, string>();

  constructor(store: RedisRunStore, keys: FleetKeys, replicaId: string) {
    this.#store = store;
    this.#keys = keys;
    this.#replicaId = replicaId;
  }

  /**
   * Takes the turn at the step of `job`: from now on the writes of any earlier turn are
   * refused. In the same round trip, reads whether the step's cancel is recorded.
   */
  async take(
    job: StepJob,
    attempt: number,
  ): Promise<{ readonly turn: Turn; readonly cancelled: boolean }> {
    const token = `${this.#replicaId}:${attempt}:${randomBytes(4).toString('hex')}`;
    const key = this.#keys.fence(job.step_id);
    const clientToken = job.body.client_token;
    const turn: Turn = {
      runId: job.run_id,
      clientToken: typeof clientToken === 'string' ? clientToken : '',
      token,
      fence: { key, token },
      said: false,
    };
    // Queued before any write of the turn (they go in the same call, after it, or later).
    const cancelled = this.#store.takeTurn(
      key,
      token,
      FENCE_TTL_MS,
      this.#keys.cancelled(job.step_id),
    );
    this.#turns.set(job.step_id, turn);
    return { turn, cancelled: await cancelled };
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
   * The fence of a write (see `RedisStoreOptions.fence`): that of the turn at the step it is
   * about — by its step, the step it is made under, or its run and client token when it
   * names no step. None for a write of no step taken here.
   */
  fenceOf(target: WriteTarget): WriteGuard[] {
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
    const turn = root === undefined ? undefined : this.#turns.get(root);
    return turn ? [turn.fence] : [];
  }

  /** The step taken here that `id` is, or was made under. */
  #rootOf(id: string): string | undefined {
    return this.#turns.has(id) ? id : this.#roots.get(id);
  }
}
