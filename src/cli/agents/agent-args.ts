/**
 * @module The arguments of `axon agents` and `axon schedules`, checked before anything is
 * opened or sent: a typo costs no connection, and each refusal is one line naming the value
 * (`CliError` `USAGE`, exit 2) — an actor's key of the wrong form, a message that is not JSON,
 * a status that is not one. Light: the command definitions import it at start-up.
 */
import { CliError } from '../cli-error.js';
import { parseStatusList } from '../runs/runs-command.js';
import { AGENT_STATUSES, type AgentStatusName } from '../sources/agent-source.js';

/** API.md's form of an actor's key (`src/durable/actor-address.ts`' `ACTOR_KEY`). */
export const AGENT_KEY = /^[A-Za-z0-9._~-]{1,128}$/;

/** API.md's form of a schedule's id (`sched_` and 1 to 128 of a key's characters). */
export const SCHEDULE_ID = /^sched_[A-Za-z0-9._~-]{1,128}$/;

/** The longest agent name, user id and client token the API takes. */
const MAX_NAME = 256;

/** `value`, 1 to 256 characters (`what` names it in the refusal). */
function bounded(value: string, what: string): string {
  if (value === '' || value.length > MAX_NAME) {
    throw new CliError('USAGE', `${what} must be 1 to ${MAX_NAME} characters, got "${value}"`);
  }
  return value;
}

/** A durable agent's name (`<name>`, `--name`). */
export function parseAgentName(value: string, what = '<name>'): string {
  return bounded(value, what);
}

/** An actor's key: 1 to 128 letters, digits, `.`, `_`, `~` or `-`. */
export function parseKey(value: string): string {
  if (!AGENT_KEY.test(value)) {
    throw new CliError(
      'USAGE',
      `<key> must be 1 to 128 letters, digits, ".", "_", "~" or "-", got ${JSON.stringify(value.slice(0, 160))}`,
    );
  }
  return value;
}

/** `--key-prefix`: the start of a key (a key's characters only, 1 to 128 of them). */
export function parseKeyPrefix(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!AGENT_KEY.test(value)) {
    throw new CliError(
      'USAGE',
      `--key-prefix must be 1 to 128 letters, digits, ".", "_", "~" or "-", got ${JSON.stringify(value.slice(0, 160))}`,
    );
  }
  return value;
}

/** `--user`: whose actor (1 to 256 characters); `undefined` when not given. */
export function parseUser(value: string | undefined): string | undefined {
  return value === undefined ? undefined : bounded(value, '--user');
}

/** `--client-token`: 1 to 256 characters; `undefined` when not given. */
export function parseClientToken(value: string | undefined): string | undefined {
  return value === undefined ? undefined : bounded(value, '--client-token');
}

/** `<message>`: one JSON value (what the agent's input schema then checks). */
export function parseMessage(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new CliError(
      'USAGE',
      `<message> is not JSON (${why}): give one JSON value, e.g. '{"text":"hello"}'`,
      { cause: err },
    );
  }
}

/** `--status` of `agents list`: one or more of {@link AGENT_STATUSES}, comma-separated. */
export function parseAgentStatuses(value: string | undefined): AgentStatusName[] | undefined {
  return parseStatusList<AgentStatusName>(value, AGENT_STATUSES);
}

/**
 * A schedule's id: one of another form names no schedule, as the server answers it
 * (`CliError` `NOT_FOUND`, exit 1), with no request.
 */
export function parseScheduleId(value: string): string {
  if (!SCHEDULE_ID.test(value)) {
    throw new CliError(
      'NOT_FOUND',
      `no schedule "${value.slice(0, 160)}": a schedule's id is sched_ and 1 to 128 letters, digits, ".", "_", "~" or "-" (axon schedules list shows them)`,
    );
  }
  return value;
}
