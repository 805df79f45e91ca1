/**
 * @module The fences of the durable agents' messages a replica handles (issue 46): each write
 * about such a message — its record, its log, the steps made under it, its run — holds only
 * while the actor's lease in the fleet's Redis is still this replica's (`durable/
 * fleet-actors.ts`). The Redis store checks the guard in the same script call as the write
 * (`RedisStoreOptions.fence`), so a replica that lost the lease (frozen past it) writes
 * nothing about the actor another replica took over.
 */
import type { ActorFences } from '../durable/fleet-actors.js';
import type { WriteGuard } from '../store/redis/redis-batch.js';
import type { WriteTarget } from '../store/write-target.js';

/** See the module. */
export class ReplicaActorFences implements ActorFences {
  /** Messages handled here, by step id: their lease's guard. */
  readonly #messages = new Map<string, WriteGuard>();
  /** Their runs (an actor's run: one message at a time), by run id. */
  readonly #runs = new Map<string, WriteGuard>();
  /** Steps made under a message handled here: that message, by id. */
  readonly #roots = new Map<string, string>();

  hold(stepId: string, runId: string, key: string, owner: string): void {
    const guard: WriteGuard = { key, token: owner };
    this.#messages.set(stepId, guard);
    this.#runs.set(runId, guard);
  }

  drop(stepId: string, runId: string): void {
    this.#messages.delete(stepId);
    this.#runs.delete(runId);
    for (const [child, root] of this.#roots) if (root === stepId) this.#roots.delete(child);
  }

  /** The guards a write about `target` carries: its message's lease, or none. */
  guardsOf(target: WriteTarget): readonly WriteGuard[] {
    if (target.stepId !== undefined) {
      const parent = target.parentStepId ? this.#rootOf(target.parentStepId) : undefined;
      if (parent !== undefined) this.#roots.set(target.stepId, parent);
      const root = this.#rootOf(target.stepId);
      const guard = root === undefined ? undefined : this.#messages.get(root);
      if (guard) return [guard];
      return [];
    }
    const guard = target.runId === undefined ? undefined : this.#runs.get(target.runId);
    return guard ? [guard] : [];
  }

  #rootOf(id: string): string | undefined {
    return this.#messages.has(id) ? id : this.#roots.get(id);
  }
}
