/**
 * @module Durable agents' bodies on the wire (API.md, "Durable agents"; issue 46): an actor as
 * `GET /v1/agents/{name}/{key}` shows it, a message's receipt, an event's answer and a
 * Schedule — and their zod schemas, from which the OpenAPI document describes them.
 */
import { z } from 'zod';
import { isoTime } from '../context/clock.js';
import type { MessageReceipt } from '../durable/actor-intake.js';
import type { SignalResult } from '../durable/actor-signals.js';
import type { ActorView } from '../durable/actor-view.js';
import type { ScheduleRecord } from '../store/actor-records.js';

/** The statuses of an actor on the wire, as `GET /v1/agents?status=` takes them. */
export const AGENT_STATUSES = ['asleep', 'awake', 'busy', 'waiting'] as const;
/** An actor's status on the wire. */
export type AgentStatus = (typeof AGENT_STATUSES)[number];

/** An actor on the wire: API.md's fields, and whose it is (`user_id`). */
export function agentView(view: ActorView, userId: string | null): Record<string, unknown> {
  return {
    name: view.name,
    key: view.key,
    user_id: userId,
    version: view.version,
    status: view.status,
    state: view.state,
    mailbox_depth: view.mailbox_depth,
    next_timer_at: view.next_timer_at,
    run_id: view.run_id,
    created_at: view.created_at,
    updated_at: view.updated_at,
  };
}

/** A message's receipt: its ids and its step's status (202, or 200 for a token seen). */
export function receiptView(r: MessageReceipt): Record<string, unknown> {
  return { message_id: r.message_id, step_id: r.step_id, run_id: r.run_id, status: r.status };
}

/** What `POST /v1/events` answers. */
export function signalView(r: SignalResult): Record<string, unknown> {
  return {
    woken: r.woken,
    refused: r.refused.map((w) => ({
      agent: w.agent,
      key: w.key,
      wake_id: w.wake_id,
      issues: w.issues.map((i) => ({ path: [...i.path], message: i.message })),
    })),
  };
}

/** A Schedule: its record, `next_at` as an ISO time (`null`: its cron has none left). */
export function scheduleView(s: ScheduleRecord): Record<string, unknown> {
  return {
    schedule_id: s.schedule_id,
    agent: s.agent,
    key: s.key,
    message: s.message,
    cron: s.cron,
    timezone: s.timezone,
    overlap: s.overlap,
    catchup: s.catchup,
    status: s.status,
    next_at: s.next_at === null ? null : isoTime(s.next_at),
    created_at: s.created_at,
    updated_at: s.updated_at,
  };
}

const json = z.unknown();
const agent = z.object({
  name: z.string(),
  key: z.string(),
  /** The actor's user: the caller's own, or (an admin's read) another's. */
  user_id: z.string().nullable(),
  version: z.number().int(),
  status: z.enum(AGENT_STATUSES),
  /** The state every message whose step ended `succeeded` left, and no other. */
  state: json,
  mailbox_depth: z.number().int(),
  next_timer_at: z.string().nullable(),
  run_id: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});

const schedule = z.object({
  schedule_id: z.string(),
  agent: z.string(),
  key: z.string(),
  message: json,
  cron: z.string(),
  timezone: z.string(),
  overlap: z.enum(['skip', 'queue', 'cancel_previous']),
  catchup: z.boolean(),
  status: z.enum(['active', 'paused']),
  next_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

/** The bodies of the durable agents' routes, for the OpenAPI document. */
export const AGENT_SCHEMAS = {
  Agent: agent,
  AgentPage: z.object({
    agents: z.array(agent),
    /** Give it as `before` for the next page; `null`: there is none. */
    next: z.string().nullable(),
  }),
  MessageAccepted: z.object({
    message_id: z.string(),
    step_id: z.string(),
    run_id: z.string(),
    status: z.string(),
  }),
  EventsAnswer: z.object({
    woken: z.number().int(),
    refused: z.array(
      z.object({
        agent: z.string(),
        key: z.string(),
        wake_id: z.string(),
        issues: z.array(
          z.object({ path: z.array(z.union([z.string(), z.number()])), message: z.string() }),
        ),
      }),
    ),
  }),
  Schedule: schedule,
  ScheduleList: z.object({ schedules: z.array(schedule) }),
} as const;
