/**
 * @module What a store's write is about, for the fence of a writer that may lose its turn (a
 * fleet replica whose step another replica took over): the Redis store's
 * (`RedisStoreOptions.fence`) and the PostgreSQL store's (`PostgresStoreOptions.fence`).
 */

/** What a write is about. */
export interface WriteTarget {
  /** The step the write is of (its record, its events, a fact or checkpoint it made). */
  readonly stepId?: string | undefined;
  /** A step being created: the step it is made under. */
  readonly parentStepId?: string | null | undefined;
  /** The run the write is of. */
  readonly runId?: string | undefined;
  /** A recording's: the client token of the submitted step whose tree made the call. */
  readonly clientToken?: string | undefined;
}

/**
 * A turn at a step, as the PostgreSQL store fences with it: the write runs only while the
 * step's turn (`PostgresRunStore.takeTurn`) is still the one of `token`.
 */
export interface TurnFence {
  readonly stepId: string;
  readonly token: string;
}
