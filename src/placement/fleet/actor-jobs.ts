/**
 * @module Durable agents' work travelling to a pool (issue 46): the BullMQ jobs that bring an
 * actor's messages to a replica, and the delayed jobs that ring the durable agents' clock at
 * a wake's (or a schedule's) due time, on every replica's queue alike.
 *
 * - `actor` (`{ actor_id, step_id }`): the replica that takes it handles the actor's open
 *   messages under the actor's lease (one activation across the fleet); a replica that finds
 *   the lease held by another puts the job off a while and looks again — a live holder has
 *   handled the message by then, a dead or frozen one has lost its lease.
 * - `tick` (`{ at }`, delayed until `at`): the replica that takes it fires every wake and
 *   schedule due (each fires once: its record, or its message's client token, sees to that).
 *
 * A job's id names what it is for, so the same work queued twice is one job.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';

/** The data of an `actor` job. */
export const actorJobSchema = z
  .object({
    actor_id: z.string().min(1).max(256),
    /** The message the job was queued for: once it has ended, the job has nothing to do. */
    step_id: z.string().min(1).max(256),
  })
  .strict();

/** The data of a `tick` job. */
export const tickJobSchema = z.object({ at: z.number().int().nonnegative() }).strict();

export type ActorJob = z.infer<typeof actorJobSchema>;
export type TickJob = z.infer<typeof tickJobSchema>;

/** The names of durable agents' jobs (a step's job is named `step`). */
export const ACTOR_JOB = 'actor';
export const TICK_JOB = 'tick';

/** The job id of an actor's message: one job per message, whoever queues it. */
export function actorJobId(stepId: string): string {
  return `a${createHash('sha256').update(stepId).digest('hex').slice(0, 40)}`;
}

/** The job id of a tick at `at` (ms): one job per due time. */
export function tickJobId(at: number): string {
  return `k${at}`;
}

/** How a runtime on a fleet hands durable agents' work to its pools. */
export interface ActorDispatch {
  /** Queues an `actor` job: message `stepId` of actor `actorId` is to be handled. */
  deliver(actorId: string, stepId: string): Promise<void>;
  /** Queues a `tick` job delayed until `at` (ms). */
  tick(at: number): Promise<void>;
}

/** The queue a dispatch adds to: a pool's BullMQ queue, as `Queue.add` takes a job. */
export interface JobQueue {
  add(
    name: string,
    data: unknown,
    options: {
      readonly jobId: string;
      readonly delay?: number;
      readonly attempts?: number;
      readonly backoff?: { readonly type: 'exponential'; readonly delay: number };
      readonly removeOnComplete: boolean;
      readonly removeOnFail: { readonly count: number };
    },
  ): Promise<unknown>;
}

/** An {@link ActorDispatch} adding to the queue `queueOf` gives (chosen at each call). */
export function actorDispatchOn(
  queueOf: () => JobQueue | Promise<JobQueue>,
  now: () => number,
): ActorDispatch {
  return {
    async deliver(actorId, stepId) {
      const data: ActorJob = { actor_id: actorId, step_id: stepId };
      await (
        await queueOf()
      ).add(ACTOR_JOB, data, {
        jobId: actorJobId(stepId),
        // A replica that died taking it: another goes on from the message's log.
        attempts: 5,
        backoff: { type: 'exponential', delay: 500 },
        removeOnComplete: true,
        removeOnFail: { count: 1000 },
      });
    },
    async tick(at) {
      const data: TickJob = { at };
      await (
        await queueOf()
      ).add(TICK_JOB, data, {
        jobId: tickJobId(at),
        delay: Math.max(0, at - now()),
        attempts: 5,
        backoff: { type: 'exponential', delay: 500 },
        removeOnComplete: true,
        removeOnFail: { count: 100 },
      });
    },
  };
}
