/**
 * @module Where `axon agents` and `axon schedules` read and drive durable agents: a running
 * server (`--url`, `agent-server-source.ts`, API.md's "Durable agents") or the data dir a
 * server keeps (`--data-dir`, `agent-data-dir-source.ts`, which runs a message's actor in this
 * process). Both give the API's bodies — an Agent, a Schedule, a message's receipt — so a
 * command is written once.
 */

/** An actor's statuses on the wire (API.md), as `--status` takes them. */
export const AGENT_STATUSES = ['asleep', 'awake', 'busy', 'waiting'] as const;

/** One of {@link AGENT_STATUSES}. */
export type AgentStatusName = (typeof AGENT_STATUSES)[number];

/** An actor as `GET /v1/agents/{name}/{key}` shows it, with whose it is. */
export interface AgentInfo {
  readonly name: string;
  readonly key: string;
  readonly user_id: string | null;
  readonly version: number;
  readonly status: string;
  readonly state: unknown;
  readonly mailbox_depth: number;
  /** ISO time of its soonest pending timer, or `null`. */
  readonly next_timer_at: string | null;
  readonly run_id: string;
  readonly created_at: string;
  readonly updated_at: string;
}

/** Which actors to list (newest first). */
export interface AgentQuery {
  readonly name?: string | undefined;
  readonly status?: readonly AgentStatusName[] | undefined;
  readonly keyPrefix?: string | undefined;
  /** Only this user's actors; absent: all a data dir holds, or those the key may read. */
  readonly userId?: string | undefined;
  readonly limit: number;
}

/** Which actor: a durable agent's name and a key, and (`--user`) whose. */
export interface AgentAddress {
  readonly name: string;
  readonly key: string;
  /** Absent: a data dir's `anonymous` (the caller of a server without keys), a key's own user. */
  readonly userId?: string | undefined;
}

/** A stored wake of an actor: what brings its waiting message (or a reminder) back. */
export interface WakeInfo {
  readonly wake_id: string;
  /** `sleep`, `event` or `reminder`. */
  readonly kind: string;
  /** `pending`, or `fired` (its message goes on). */
  readonly status: string;
  /** When it fires (an event wait's timeout), ISO; `null`: no time. */
  readonly due_at: string | null;
  /** The event waited for. */
  readonly event: string | null;
  /** A reminder's name. */
  readonly name: string | null;
  /** Fields an event's data must have. */
  readonly match: unknown;
  /** A reminder's period, ms. */
  readonly every_ms: number | null;
  /** The message that waits (`null`: a reminder). */
  readonly step_id: string | null;
  /** A reminder's message. */
  readonly message: unknown;
}

/** A message to an actor: its step in the actor's run. */
export interface MessageInfo {
  readonly message_id: string;
  readonly status: string;
  readonly created_at: string;
  readonly started_at: string | null;
  readonly ended_at: string | null;
  readonly input: unknown;
  readonly output: unknown;
  readonly error: { readonly code: string; readonly message: string } | null;
}

/** One actor, as `agents show` prints it. */
export interface AgentDetail {
  readonly agent: AgentInfo;
  /** Its wakes, the soonest first. */
  readonly wakes: readonly WakeInfo[];
  /** Its last messages, in the order accepted. */
  readonly messages: readonly MessageInfo[];
  /** How many messages it has had. */
  readonly message_count: number;
}

/** A message's receipt: API.md's 202 (`created`) or 200 (its client token seen before). */
export interface ReceiptInfo {
  readonly message_id: string;
  readonly step_id: string;
  readonly run_id: string;
  readonly status: string;
  /** False: a message with this client token was accepted before, and nothing now. */
  readonly created: boolean;
}

/** How a message ended. */
export interface MessageEnd {
  /** `succeeded`, `failed` or `cancelled`. */
  readonly status: string;
  readonly output: unknown;
  readonly error: { readonly code: string; readonly message: string } | null;
}

/** A message accepted: its receipt, and its end once it comes. */
export interface SentMessage {
  readonly receipt: ReceiptInfo;
  /** Resolves once the message has ended (after its waits too). */
  ended(): Promise<MessageEnd>;
}

/** A schedule as API.md's Schedule body shows it. */
export interface ScheduleInfo {
  readonly schedule_id: string;
  readonly agent: string;
  readonly key: string;
  readonly message: unknown;
  readonly cron: string;
  readonly timezone: string;
  readonly overlap: string;
  readonly catchup: boolean;
  /** `active` or `paused`. */
  readonly status: string;
  /** Its next firing, ISO; `null`: its cron has none left. */
  readonly next_at: string | null;
  readonly created_at: string;
  readonly updated_at: string;
}

/**
 * Durable agents and schedules, read and driven on a server or a data dir. Failures are
 * `CliError`s: `NOT_FOUND` for an unknown agent, actor or schedule, `USAGE` for what this
 * source cannot do, `REQUEST_FAILED` for a refused message (its input, a full mailbox, a busy
 * actor), `UNREACHABLE` when the source cannot be read.
 */
export interface AgentSource {
  /** Where it reads, for messages: `http://127.0.0.1:7070`, `data dir .axon`. */
  readonly description: string;
  /** The flags that name this source again, for a hint: `--url http://…`, `--data-dir .axon`. */
  readonly flags: string;
  /** Actors, newest first. */
  listAgents(query: AgentQuery): Promise<AgentInfo[]>;
  /** An actor with its wakes and its last `messages` messages. */
  getAgent(address: AgentAddress, messages: number): Promise<AgentDetail>;
  /** Sends `message` (JSON data) to the actor at `address`. */
  send(address: AgentAddress, message: unknown, clientToken?: string): Promise<SentMessage>;
  /** Every schedule the source shows (a key's own, every one for an admin or a data dir). */
  listSchedules(): Promise<ScheduleInfo[]>;
  pauseSchedule(scheduleId: string): Promise<ScheduleInfo>;
  resumeSchedule(scheduleId: string): Promise<ScheduleInfo>;
  deleteSchedule(scheduleId: string): Promise<void>;
  /** Releases the source; on a data dir, after the messages it sent are handled (or wait). */
  close(): Promise<void>;
}
