/**
 * @module The API's bodies as the trace UI reads them (docs/spec/API.md, docs/http-api.md):
 * Run, Step, Thread and its turns, Workflow, Flow, an actor of a durable agent, its wakes and a
 * message's receipt, a Schedule, and the data of a step's stream events. Only the fields the page reads;
 * the server sends more.
 */

/** Tokens, dollars and time used (`budget_usage`). */
export interface Usage {
  readonly tokens_in: number;
  readonly tokens_out: number;
  readonly cost_usd: number;
  readonly wall_ms?: number;
}

/** A run's status. */
export type RunStatus = 'running' | 'waiting' | 'cancelling' | 'cancelled' | 'completed' | 'failed';
/** A step's status. */
export type StepStatus = 'queued' | 'running' | 'waiting' | 'succeeded' | 'failed' | 'cancelled';
/** A thread's status. */
export type ThreadStatus = 'queued' | 'started' | 'completed' | 'failed' | 'crashed' | 'killed';

/** An error as the API shows it on a step, a turn or a thread. */
export interface ApiErrorPayload {
  readonly code: string;
  readonly message: string;
  readonly retriable?: boolean;
}

/** A Run (`GET /v1/runs/{id}`, `GET /v1/runs`). */
export interface Run {
  readonly run_id: string;
  readonly flow_id: string | null;
  readonly status: RunStatus;
  readonly budget_usage: Usage;
  readonly created_at: string;
  readonly ended_at: string | null;
  readonly cancel_on_disconnect?: boolean;
  readonly entry?: string;
}

/** A Step (`GET /v1/steps/{id}`, `GET /v1/runs/{id}/steps`). */
export interface Step {
  readonly step_id: string;
  readonly run_id: string;
  readonly type: string;
  readonly client_token: string | null;
  readonly input: unknown;
  readonly status: StepStatus;
  readonly budget_usage: Usage;
  readonly provenance?: Readonly<Record<string, unknown>> | null;
  readonly output: unknown;
  readonly error: ApiErrorPayload | null;
  readonly created_at: string;
  readonly ended_at: string | null;
  readonly parent_step_id: string | null;
  readonly name?: string;
  readonly actor_path?: readonly string[];
  readonly started_at?: string | null;
  readonly first_token_at?: string | null;
}

/** A turn of a thread, as `GET /v1/threads/{id}` shows it. */
export interface Turn {
  readonly n: number;
  readonly role: string;
  readonly step_id: string;
  readonly status: StepStatus;
  readonly raw: string | null;
  readonly output: unknown;
  readonly error: ApiErrorPayload | null;
  readonly started_at: string | null;
  readonly ended_at: string | null;
  readonly tokens_in: number;
  readonly tokens_out: number;
  readonly cost_usd: number;
}

/** A Thread (`GET /v1/threads/{id}`, `GET /v1/threads`, the `thread_end` frame). */
export interface Thread {
  readonly thread_id: string;
  readonly workflow: string;
  readonly status: ThreadStatus;
  readonly end_reason: string | null;
  readonly error: ApiErrorPayload | null;
  readonly input: string;
  readonly rounds: number;
  readonly turns?: readonly Turn[];
  readonly tokens_in: number;
  readonly tokens_out: number;
  readonly cost_usd: number;
  readonly created_at: string;
  readonly started_at: string | null;
  readonly ended_at: string | null;
}

/** A workflow the server runs (`GET /v1/workflows`). */
export interface Workflow {
  readonly name: string;
  readonly description?: string;
  readonly roles?: readonly { readonly name: string; readonly kind: string }[];
  readonly max_rounds: number;
  readonly concurrency?: {
    readonly max: number;
    readonly overflow: string;
    readonly max_queue?: number;
  } | null;
  readonly running: number;
  readonly queued: number;
}

/** A Flow (`GET /v1/flows/{id}`), for its name. */
export interface Flow {
  readonly flow_id: string;
  readonly name?: string;
}

/** A thread just started (`POST /v1/workflows/{name}/threads`). */
export interface ThreadStarted {
  readonly thread_id: string;
  readonly status: string;
}

/** An actor's status: `busy`, `waiting` (on a timer or an event), `awake`, `asleep`. */
export type AgentStatus = 'asleep' | 'awake' | 'busy' | 'waiting';

/** An actor of a durable agent (`GET /v1/agents/{name}/{key}`, an item of `GET /v1/agents`). */
export interface Agent {
  readonly name: string;
  readonly key: string;
  /** Whose actor it is (an admin's listing holds every user's). */
  readonly user_id?: string | null;
  readonly version: number;
  readonly status: AgentStatus;
  readonly state: unknown;
  readonly mailbox_depth: number;
  /** Its soonest pending timer (a sleep, a wait's timeout, a reminder), ISO; or `null`. */
  readonly next_timer_at: string | null;
  readonly run_id: string;
  readonly created_at: string;
  readonly updated_at: string;
}

/** A page of actors (`GET /v1/agents`): `next` is the `before` of the next page, or `null`. */
export interface AgentPage {
  readonly agents: readonly Agent[];
  readonly next: string | null;
}

/** A message accepted (`POST /v1/agents/{name}/{key}/messages`: 202, or 200 for a token seen). */
export interface MessageReceipt {
  readonly message_id: string;
  readonly step_id: string;
  readonly run_id: string;
  readonly status: string;
}

/**
 * What an actor waits for (`GET /v1/agents/{name}/{key}/wakes`, docs/http-api.md "What the
 * server adds"): a message's sleep or event wait, or a reminder.
 */
export interface Wake {
  readonly wake_id: string;
  readonly kind: 'sleep' | 'event' | 'reminder';
  readonly status: 'pending' | 'fired';
  /** When it fires, ISO: a sleep's end, an event wait's timeout, a reminder's next time. */
  readonly due_at: string | null;
  /** The event waited for (kind `event`). */
  readonly event: string | null;
  /** Fields the event's data must have, each equal (kind `event`); `null`: any data. */
  readonly match: Readonly<Record<string, unknown>> | null;
  /** A reminder's name. */
  readonly name: string | null;
  /** A reminder's period, ms (`null`: once). */
  readonly every_ms: number | null;
  /** A reminder's message to the actor. */
  readonly message: unknown;
  /** The message that waits (a sleep, an event wait); `null` for a reminder. */
  readonly step_id: string | null;
}

/** A schedule of a durable agent (`GET /v1/schedules`, its pause and resume). */
export interface Schedule {
  readonly schedule_id: string;
  readonly agent: string;
  readonly key: string;
  readonly message: unknown;
  readonly cron: string;
  readonly timezone: string;
  readonly overlap: string;
  readonly status: 'active' | 'paused';
  /** Its next firing, ISO; `null`: its cron has none left. */
  readonly next_at: string | null;
}

/**
 * The data of one event of a step's stream (API.md's step events: `started`, `token`,
 * `metrics`, `narration`, `tool_suggest`, `fact`, `checkpoint`, `escalation`, `end`,
 * `error`, …); on a thread's stream it carries its turn and role too.
 */
export interface StepEventData {
  readonly step_id?: string;
  readonly seq?: number;
  readonly ts: number;
  readonly t?: string;
  readonly tokens_in?: number;
  readonly tokens_out?: number;
  readonly cost_usd?: number;
  readonly pool_id?: string;
  readonly replica_id?: string;
  readonly text?: string;
  readonly tool?: string;
  readonly args?: unknown;
  readonly reason?: string;
  readonly type?: string;
  readonly data?: unknown;
  readonly checkpoint_id?: string;
  readonly target?: string;
  readonly output?: unknown;
  readonly code?: string;
  readonly message?: string;
  /** On a thread's stream: the turn's number and role. */
  readonly turn?: number;
  readonly role?: string;
}
