/**
 * @module `axon.yaml`'s `schedules:` (issue 46): schedules of durable agents the server keeps,
 * each named, kept under the id `sched_<name>` — made at start when it is not stored, made
 * again when its entry changed (paused stays paused), left as it is otherwise. The file's
 * schema checks each entry as far as the file alone can (its fields, its cron and time zone,
 * names unique); the agent and the message against its input are checked at start, once the
 * agents are registered, each problem named by the entry's line.
 *
 * @example
 * schedules:
 *   - name: nightly-notes
 *     agent: notebook
 *     key: team-a
 *     message: { text: 'nightly check' }
 *     cron: '0 2 * * *'
 *     timezone: Europe/Berlin
 */
import { z } from 'zod';
import { ACTOR_KEY } from '../../durable/actor-address.js';
import { compileCron } from '../../durable/actor-schedules.js';
import { AxonError } from '../../errors/axon-error.js';
import { InvalidParamsError } from '../../errors/invalid-params-error.js';
import type { Runtime } from '../../runtime/runtime.js';
import {
  SCHEDULE_OVERLAPS,
  type ScheduleOverlap,
  type ScheduleRecord,
} from '../../store/actor-records.js';

/** A schedule's name in the file: its id is `sched_<name>`. */
const SCHEDULE_NAME = /^[A-Za-z0-9._~-]{1,64}$/;

/** The user a schedule of the file belongs to when it names none: the caller without keys. */
export const DEFAULT_SCHEDULE_USER = 'anonymous';

/** An entry of `schedules:`. */
export const scheduleConfigSchema = z
  .strictObject({
    name: z.string().regex(SCHEDULE_NAME, 'must be 1 to 64 letters, digits, ".", "_", "~" or "-"'),
    agent: z.string().min(1),
    key: z.string().regex(ACTOR_KEY, 'must be 1 to 128 letters, digits, ".", "_", "~" or "-"'),
    /** Any JSON the agent's input takes (`{}` for an agent whose input is empty); required. */
    message: z.unknown().optional(),
    /** Five fields, or six with seconds first. */
    cron: z.string(),
    /** An IANA time zone; default `UTC`. */
    timezone: z.string().optional(),
    overlap: z.enum(SCHEDULE_OVERLAPS as [ScheduleOverlap, ...ScheduleOverlap[]]).optional(),
    catchup: z.boolean().optional(),
    /** Whose actor it messages; default `anonymous` (every caller of a server without keys). */
    user_id: z.string().min(1).max(256).optional(),
  })
  .superRefine((entry, ctx) => {
    if (entry.message === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['message'],
        message: 'is required: the message each firing sends (`{}` for an empty one)',
      });
    }
    try {
      compileCron(entry.cron, entry.timezone);
    } catch (err) {
      if (!(err instanceof InvalidParamsError)) throw err;
      ctx.addIssue({ code: 'custom', path: [err.param ?? 'cron'], message: err.message });
    }
  });

/** An entry of `schedules:`, checked. */
export type ScheduleConfig = z.output<typeof scheduleConfigSchema>;

/** `schedules:`: a list of entries whose names are unique. */
export const schedulesConfigSchema = z.array(scheduleConfigSchema).superRefine((list, ctx) => {
  const seen = new Set<string>();
  list.forEach((entry, i) => {
    if (seen.has(entry.name)) {
      ctx.addIssue({
        code: 'custom',
        path: [i, 'name'],
        message: `"${entry.name}" names another schedule of the list already`,
      });
    }
    seen.add(entry.name);
  });
});

/** The id a schedule of the file is kept under. */
export function scheduleIdOf(name: string): string {
  return `sched_${name}`;
}

/** A schedule of the file the runtime refused: its place in the list, and why. */
export class ScheduleRefusedError extends InvalidParamsError {
  /** Its index in `schedules:`. */
  readonly index: number;

  constructor(index: number, entry: ScheduleConfig, cause: Error) {
    super(`schedule "${entry.name}": ${cause.message}`, {
      cause,
      param: `schedules.${index}`,
    });
    this.index = index;
  }
}

/**
 * Keeps the file's schedules in `runtime`'s store (see the module); resolves them in the
 * file's order. Rejects with {@link ScheduleRefusedError} for the first the runtime refuses
 * (an unknown agent, a message its input refuses); those before it are kept.
 */
export async function keepSchedules(
  runtime: Runtime,
  schedules: readonly ScheduleConfig[],
): Promise<ScheduleRecord[]> {
  const kept: ScheduleRecord[] = [];
  for (const [i, entry] of schedules.entries()) {
    try {
      kept.push(
        await runtime.durable.schedules.create(
          entry.user_id ?? DEFAULT_SCHEDULE_USER,
          {
            agent: entry.agent,
            key: entry.key,
            message: entry.message,
            cron: entry.cron,
            ...(entry.timezone === undefined ? {} : { timezone: entry.timezone }),
            ...(entry.overlap === undefined ? {} : { overlap: entry.overlap }),
            ...(entry.catchup === undefined ? {} : { catchup: entry.catchup }),
          },
          scheduleIdOf(entry.name),
        ),
      );
    } catch (err) {
      if (!(err instanceof AxonError)) throw err;
      throw new ScheduleRefusedError(i, entry, err);
    }
  }
  return kept;
}
