/**
 * @module The {@link AgentSource} of a running server (`--url`): API.md's "Durable agents" —
 * `GET /v1/agents`, `GET /v1/agents/{name}/{key}`, `POST /v1/agents/{name}/{key}/messages`,
 * `/v1/schedules…` — and the actor's run's steps (`GET /v1/runs/{run_id}/steps`) for its
 * messages. A message's end is followed on its step's stream (`GET /v1/steps/{id}/stream`) to
 * its `end` or `error`, then read (`GET /v1/steps/{id}`). The server shows what the key may
 * see: a key's own actors and schedules, every one for an admin; an actor's wakes from the
 * server's `GET /v1/agents/{name}/{key}/wakes` (not in API.md).
 */
import { CliError } from '../cli-error.js';
import type {
  AgentAddress,
  AgentDetail,
  AgentInfo,
  AgentQuery,
  AgentSource,
  MessageEnd,
  MessageInfo,
  ReceiptInfo,
  ScheduleInfo,
  SentMessage,
  WakeInfo,
} from './agent-source.js';
import { followToEnd } from './step-stream-follow.js';
import {
  createServerClient,
  type ApiError,
  type RequestMethod,
  type ServerClientOptions,
} from './server-client.js';

/** Options of {@link createAgentServerSource}. */
export type AgentServerSourceOptions = ServerClientOptions;

/** A body that is not what API.md says: turned into the client's `notAxon`. */
class NotApiBody extends Error {}

type Body = Readonly<Record<string, unknown>>;

function objectOf(value: unknown): Body {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new NotApiBody();
  return value as Body;
}

function arrayOf(value: unknown): readonly unknown[] {
  if (!Array.isArray(value)) throw new NotApiBody();
  return value;
}

function text(b: Body, key: string): string {
  const v = b[key];
  if (typeof v !== 'string') throw new NotApiBody();
  return v;
}

function textOrNull(b: Body, key: string): string | null {
  const v = b[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw new NotApiBody();
  return v;
}

function num(b: Body, key: string): number {
  const v = b[key];
  if (typeof v !== 'number') throw new NotApiBody();
  return v;
}

function errorOf(value: unknown): MessageInfo['error'] {
  if (value === undefined || value === null) return null;
  const e = objectOf(value);
  return { code: text(e, 'code'), message: text(e, 'message') };
}

/** An Agent body. */
export function agentOf(value: unknown): AgentInfo {
  const b = objectOf(value);
  return {
    name: text(b, 'name'),
    key: text(b, 'key'),
    user_id: textOrNull(b, 'user_id'),
    version: num(b, 'version'),
    status: text(b, 'status'),
    state: b['state'] ?? null,
    mailbox_depth: num(b, 'mailbox_depth'),
    next_timer_at: textOrNull(b, 'next_timer_at'),
    run_id: text(b, 'run_id'),
    created_at: text(b, 'created_at'),
    updated_at: text(b, 'updated_at'),
  };
}

/** A Schedule body. */
export function scheduleOf(value: unknown): ScheduleInfo {
  const b = objectOf(value);
  const catchup = b['catchup'];
  return {
    schedule_id: text(b, 'schedule_id'),
    agent: text(b, 'agent'),
    key: text(b, 'key'),
    message: b['message'] ?? null,
    cron: text(b, 'cron'),
    timezone: text(b, 'timezone'),
    overlap: text(b, 'overlap'),
    catchup: typeof catchup === 'boolean' ? catchup : false,
    status: text(b, 'status'),
    next_at: textOrNull(b, 'next_at'),
    created_at: text(b, 'created_at'),
    updated_at: text(b, 'updated_at'),
  };
}

/** A Step body as a message (its step id is its message id). */
function messageOf(b: Body): MessageInfo {
  return {
    message_id: text(b, 'step_id'),
    status: text(b, 'status'),
    created_at: text(b, 'created_at'),
    started_at: textOrNull(b, 'started_at'),
    ended_at: textOrNull(b, 'ended_at'),
    input: b['input'] ?? null,
    output: b['output'] ?? null,
    error: errorOf(b['error']),
  };
}

/**
 * A source over the server at `options.url`. `CliError` `USAGE` for a URL that is not
 * http(s); nothing is sent until a method is called.
 */
export function createAgentServerSource(options: AgentServerSourceOptions): AgentSource {
  const client = createServerClient(options);
  const { shown } = client;
  const enc = encodeURIComponent;

  /** `method path` read by `read`; `UNREACHABLE` when the body is not API.md's. */
  async function call<T>(
    method: RequestMethod,
    path: string,
    what: string,
    notFound: (error: ApiError) => CliError,
    read: (body: unknown, status: number) => T,
    body?: unknown,
  ): Promise<T> {
    const refused = (status: number, error: ApiError): CliError | null =>
      // A message or a schedule the server refused: its code and its words.
      status === 400 || status === 409 || status === 422 || status === 429
        ? new CliError('REQUEST_FAILED', `refused, ${error.code}: ${error.message}`)
        : null;
    const answer = await client.exchange(method, path, what, notFound, { body, refused });
    try {
      return read(answer.body, answer.status);
    } catch (err) {
      if (err instanceof NotApiBody) throw client.notAxon(what);
      throw err;
    }
  }

  const noAgent = (a: AgentAddress) => (error: ApiError) =>
    error.details['kind'] === 'actor'
      ? new CliError(
          'NOT_FOUND',
          `no actor ${a.name}/${a.key} at ${shown}: it has had no message (or is not one this key may read)`,
        )
      : new CliError('NOT_FOUND', `no durable agent "${a.name}" at ${shown}`);
  const noSchedule = (id: string) => (): CliError =>
    new CliError('NOT_FOUND', `no schedule "${id}" at ${shown} (or not one this key may see)`);
  const userQuery = (userId: string | undefined): string =>
    userId === undefined ? '' : `?${new URLSearchParams({ user_id: userId }).toString()}`;

  async function ended(stepId: string): Promise<MessageEnd> {
    const step = () =>
      call(
        'GET',
        `v1/steps/${enc(stepId)}`,
        'GET /v1/steps/{id}',
        () => new CliError('NOT_FOUND', `no message "${stepId}" at ${shown}`),
        (b) => messageOf(objectOf(b)),
      );
    const end = await followToEnd(client, stepId, step, options.signal);
    return { status: end.status, output: end.output, error: end.error };
  }

  async function scheduleAction(id: string, action: 'pause' | 'resume'): Promise<ScheduleInfo> {
    return call(
      'POST',
      `v1/schedules/${enc(id)}/${action}`,
      `POST /v1/schedules/{id}/${action}`,
      noSchedule(id),
      scheduleOf,
      {},
    );
  }

  return {
    description: shown,
    flags: `--url ${shown}`,
    listAgents(query: AgentQuery): Promise<AgentInfo[]> {
      const params = new URLSearchParams({ limit: String(query.limit) });
      if (query.name !== undefined) params.set('name', query.name);
      if (query.status) params.set('status', query.status.join(','));
      if (query.keyPrefix !== undefined) params.set('key_prefix', query.keyPrefix);
      if (query.userId !== undefined) params.set('user_id', query.userId);
      return call(
        'GET',
        `v1/agents?${params.toString()}`,
        'GET /v1/agents',
        () => new CliError('UNREACHABLE', `the server at ${shown} serves no durable agents`),
        (b) => arrayOf(objectOf(b)['agents']).map(agentOf),
      );
    },
    async getAgent(address: AgentAddress, messages: number): Promise<AgentDetail> {
      const agent = await call(
        'GET',
        `v1/agents/${enc(address.name)}/${enc(address.key)}${userQuery(address.userId)}`,
        'GET /v1/agents/{name}/{key}',
        noAgent(address),
        agentOf,
      );
      const what = 'GET /v1/runs/{run_id}/steps';
      const all = await call(
        'GET',
        `v1/runs/${enc(agent.run_id)}/steps`,
        what,
        () => new CliError('NOT_FOUND', `no run "${agent.run_id}" at ${shown}`),
        (b) => arrayOf(b).map(objectOf),
      );
      // Its messages are its run's top steps; what they called hangs below them.
      const top = all.filter((s) => s['parent_step_id'] === null).map(messageOf);
      const wakes = await call(
        'GET',
        `v1/agents/${enc(address.name)}/${enc(address.key)}/wakes${userQuery(address.userId)}`,
        'GET /v1/agents/{name}/{key}/wakes',
        noAgent(address),
        (b) => arrayOf(objectOf(b)['wakes']).map((w) => w as WakeInfo),
      );
      return {
        agent,
        wakes,
        messages: top.slice(-messages),
        message_count: top.length,
      };
    },
    async send(address: AgentAddress, message: unknown, clientToken?: string) {
      if (address.userId !== undefined) {
        throw new CliError(
          'USAGE',
          "--user goes with a data dir: over --url a message goes to the actor of the key's user",
        );
      }
      const receipt = await call(
        'POST',
        `v1/agents/${enc(address.name)}/${enc(address.key)}/messages`,
        'POST /v1/agents/{name}/{key}/messages',
        noAgent(address),
        (b, status): ReceiptInfo => {
          const r = objectOf(b);
          return {
            message_id: text(r, 'message_id'),
            step_id: text(r, 'step_id'),
            run_id: text(r, 'run_id'),
            status: text(r, 'status'),
            created: status === 202,
          };
        },
        { message, ...(clientToken === undefined ? {} : { client_token: clientToken }) },
      );
      const sent: SentMessage = { receipt, ended: () => ended(receipt.step_id) };
      return sent;
    },
    listSchedules: () =>
      call(
        'GET',
        'v1/schedules',
        'GET /v1/schedules',
        () => new CliError('UNREACHABLE', `the server at ${shown} serves no schedules`),
        (b) => arrayOf(objectOf(b)['schedules']).map(scheduleOf),
      ),
    pauseSchedule: (id) => scheduleAction(id, 'pause'),
    resumeSchedule: (id) => scheduleAction(id, 'resume'),
    async deleteSchedule(id: string): Promise<void> {
      await call(
        'DELETE',
        `v1/schedules/${enc(id)}`,
        'DELETE /v1/schedules/{id}',
        noSchedule(id),
        () => undefined,
      );
    },
    close: () => Promise.resolve(),
  };
}
