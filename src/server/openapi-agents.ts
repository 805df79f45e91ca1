/**
 * @module The durable agents' part of the OpenAPI document (API.md, "Durable agents"; issue
 * 46): the paths of `agent-routes.ts`, `agent-stream-route.ts` and `schedule-routes.ts`, and
 * their request bodies, described with the helpers of `openapi.ts`.
 */
import type { z } from 'zod';
import {
  DEFAULT_AGENT_LIMIT,
  eventBodySchema,
  MAX_AGENT_LIMIT,
  messageBodySchema,
} from './agent-routes.js';
import { AGENT_STATUSES } from './agent-views.js';
import { scheduleBodySchema } from './schedule-routes.js';

type Json = Record<string, unknown>;

/** The request bodies of the durable agents' routes, by component name. */
export const AGENT_REQUESTS: Readonly<Record<string, z.ZodType>> = {
  MessageInput: messageBodySchema,
  EventInput: eventBodySchema,
  ScheduleInput: scheduleBodySchema,
};

/** What the paths are described with (`openapi.ts`'s helpers). */
export interface OpenApiHelpers {
  readonly op: (summary: string, responses: Json, extra?: Json) => Json;
  readonly ok: (name: string | null, description: string, list?: boolean) => Json;
  readonly body: (name: string) => Json;
  readonly id: (name: string) => Json;
}

const query = (name: string, description: string, schema: Json = { type: 'string' }): Json => ({
  name,
  in: 'query',
  required: false,
  description,
  schema,
});

const userQuery = query(
  'user_id',
  "An admin key's read of another user's actor (a key without admin: 403 for any user but its own)",
);

/** The durable agents' paths. */
export function agentPaths({ op, ok, body, id }: OpenApiHelpers): Record<string, Json> {
  const actor = [id('name'), id('key')];
  const schedule = [id('id')];
  return {
    '/v1/agents': {
      get: op(
        "The caller's actors (an admin's: every user's), newest first, from the store's index",
        { 200: ok('AgentPage', '`{ agents, next }`') },
        {
          parameters: [
            query('name', 'Only actors of this durable agent'),
            query(
              'status',
              `Only actors with one of these statuses, comma-separated: ${AGENT_STATUSES.join(', ')}`,
            ),
            query('key_prefix', 'Only actors whose key begins with this'),
            query('before', 'The `next` of the page before'),
            query('limit', 'How many actors at most', {
              type: 'integer',
              minimum: 1,
              maximum: MAX_AGENT_LIMIT,
              default: DEFAULT_AGENT_LIMIT,
            }),
            query('user_id', "An admin key's listing of one user's actors"),
          ],
        },
      ),
    },
    '/v1/agents/{name}/{key}': {
      get: op(
        'An actor: its state, status, mailbox and next timer (404: never messaged)',
        { 200: ok('Agent', 'The actor') },
        { parameters: [...actor, userQuery] },
      ),
    },
    '/v1/agents/{name}/{key}/messages': {
      post: op(
        'Send an actor a message; idempotent by client_token (422 input, 429 QUEUE_FULL, 409 reject)',
        {
          202: ok('MessageAccepted', 'Accepted, durably'),
          200: ok('MessageAccepted', 'Accepted before under this client_token'),
        },
        { parameters: actor, requestBody: body('MessageInput') },
      ),
    },
    '/v1/agents/{name}/{key}/cancel': {
      post: op(
        "Cancel an actor's open messages (handled, queued, waiting): they end CANCELLED",
        { 202: ok(null, '`{ "cancelled": n }`') },
        { parameters: actor },
      ),
    },
    '/v1/agents/{name}/{key}/wakes': {
      get: op(
        'What an actor waits for: its timers, event waits and reminders (not in API.md)',
        { 200: ok(null, '`{ "wakes": [Wake] }`') },
        { parameters: actor },
      ),
    },
    '/v1/agents/{name}/{key}/stream': {
      get: op(
        "An actor's messages' events as Server-Sent Events, from Last-Event-ID (<n>.<seq>) on; stays open for new messages",
        {
          200: {
            description:
              "text/event-stream: `id: <n>.<seq>` (the message's place, the event's seq), `event: <type>`, `data: <json>` (the step event with `message_id`)",
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
        },
        {
          parameters: [
            ...actor,
            userQuery,
            { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string' } },
          ],
        },
      ),
    },
    '/v1/events': {
      post: op(
        "Signal an event: wakes the caller's actors waiting for it whose match fits (data over 64 KiB: 413)",
        { 202: ok('EventsAnswer', '`{ woken, refused }`') },
        { requestBody: body('EventInput') },
      ),
    },
    '/v1/schedules': {
      get: op("The caller's schedules (an admin's: every user's), in creation order", {
        200: ok('ScheduleList', '`{ schedules }`'),
      }),
      post: op(
        'Schedule a message to an actor on a cron (400 a cron that does not parse, 404 agent, 422 message)',
        { 201: ok('Schedule', 'The schedule') },
        { requestBody: body('ScheduleInput') },
      ),
    },
    '/v1/schedules/{id}': {
      get: op('A schedule', { 200: ok('Schedule', 'The schedule') }, { parameters: schedule }),
      delete: op('Remove a schedule', { 204: ok(null, 'Removed') }, { parameters: schedule }),
    },
    '/v1/schedules/{id}/pause': {
      post: op(
        'Pause a schedule: it fires no more until resumed',
        { 200: ok('Schedule', 'The schedule, paused') },
        { parameters: schedule },
      ),
    },
    '/v1/schedules/{id}/resume': {
      post: op(
        'Resume a schedule from its next time after now (what it missed is not sent)',
        { 200: ok('Schedule', 'The schedule, active') },
        { parameters: schedule },
      ),
    },
  };
}
