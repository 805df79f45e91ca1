/**
 * @module Schedules over HTTP (API.md, "Durable agents"; issue 46): `POST /v1/schedules`,
 * `GET /v1/schedules`, `GET /v1/schedules/{id}`, `POST /v1/schedules/{id}/pause`,
 * `POST /v1/schedules/{id}/resume` and `DELETE /v1/schedules/{id}`. A schedule is its
 * creator's: another user's is 404, as one that does not exist; an admin key reaches every
 * user's. A schedule is refused with nothing stored for a cron that does not parse, a bad time
 * zone, overlap or key (400 naming it), an unknown agent (404) or a message that fails the
 * agent's input (422).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Runtime } from '../runtime/runtime.js';
import { SCHEDULE_OVERLAPS, type ScheduleOverlap } from '../store/actor-records.js';
import { scheduleView } from './agent-views.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { callerOf, checkBody } from './routes.js';

/** The body of `POST /v1/schedules` (`message` required, any JSON). */
export const scheduleBodySchema = z.strictObject({
  agent: z.string(),
  key: z.string(),
  message: z.unknown(),
  cron: z.string(),
  timezone: z.string().optional(),
  overlap: z.enum(SCHEDULE_OVERLAPS as [ScheduleOverlap, ...ScheduleOverlap[]]).optional(),
  catchup: z.boolean().optional(),
});
const noBodySchema = z.strictObject({});
/** A schedule's id: `sched_` and 1 to 128 more of the characters an id or a name has. */
const SCHEDULE_ID = /^sched_[A-Za-z0-9._~-]{1,128}$/;

/** Registers the routes of the module on `app`. */
export function registerScheduleRoutes(app: FastifyInstance, runtime: Runtime): void {
  const schedules = runtime.durable.schedules;

  /** Whose schedules the caller reaches: its own, or (an admin) everyone's (`undefined`). */
  const ownerOf = (req: FastifyRequest): string | undefined => {
    const caller = callerOf(req);
    return caller.permissions.has('admin') ? undefined : caller.userId;
  };
  /** The path's schedule id; one of another form names nothing (404). */
  const idOf = (req: FastifyRequest): string => {
    const { id = '' } = req.params as Record<string, string>;
    if (!SCHEDULE_ID.test(id)) throw new NotFoundError('schedule', id.slice(0, 80));
    return id;
  };

  app.post('/v1/schedules', async (req, reply) => {
    // `message` is required (zod: a missing key is an issue at its path).
    const body = checkBody(scheduleBodySchema, 'schedule', req.body);
    const made = await schedules.create(callerOf(req).userId, {
      agent: body.agent,
      key: body.key,
      message: body.message,
      cron: body.cron,
      ...(body.timezone === undefined ? {} : { timezone: body.timezone }),
      ...(body.overlap === undefined ? {} : { overlap: body.overlap }),
      ...(body.catchup === undefined ? {} : { catchup: body.catchup }),
    });
    return reply.code(201).send(scheduleView(made));
  });

  app.get('/v1/schedules', async (req) => {
    checkBody(noBodySchema, 'schedules query', req.query ?? {});
    const list = await schedules.list(ownerOf(req));
    return { schedules: list.map(scheduleView) };
  });

  app.get('/v1/schedules/:id', async (req) =>
    scheduleView(await schedules.get(idOf(req), ownerOf(req))),
  );

  app.post('/v1/schedules/:id/pause', async (req) => {
    checkBody(noBodySchema, 'pause', req.body ?? {});
    return scheduleView(await schedules.pause(idOf(req), ownerOf(req)));
  });

  app.post('/v1/schedules/:id/resume', async (req) => {
    checkBody(noBodySchema, 'resume', req.body ?? {});
    return scheduleView(await schedules.resume(idOf(req), ownerOf(req)));
  });

  app.delete('/v1/schedules/:id', async (req, reply) => {
    await schedules.delete(idOf(req), ownerOf(req));
    return reply.code(204).send();
  });
}
