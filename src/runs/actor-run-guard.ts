/**
 * @module A durable actor's run (issue 46, entry `actor:<name>/<key>`) lives as long as its
 * actor, and its steps are the actor's messages, through its mailbox: the run operations a
 * flow's run takes — a step submitted, the run completed or cancelled — are refused on it.
 */
import { ConflictError } from '../errors/conflict-error.js';
import { ACTOR_ENTRY_PREFIX } from '../store/actor-records.js';
import type { RunRecord } from '../store/records.js';

/**
 * Refuses an operation on a durable actor's run (entry `actor:<name>/<key>`): the run lives as
 * long as its actor, and its steps are the actor's messages, through its mailbox.
 */
export function refuseActorRun(run: RunRecord, what: string): void {
  if (!run.entry.startsWith(ACTOR_ENTRY_PREFIX)) return;
  const address = run.entry.slice(ACTOR_ENTRY_PREFIX.length);
  throw new ConflictError(
    `run ${run.run_id} is the run of actor ${address}: it ${what} (POST /v1/agents/${address}/messages; POST /v1/agents/${address}/cancel cancels them)`,
    { details: { actor: address } },
  );
}
