/**
 * The arguments of `axon agents` and `axon schedules`, checked before anything is opened: each
 * refusal names the value and is a usage error (exit 2) — but a schedule id of another form,
 * which names no schedule (exit 1, as the server answers it).
 */
import { describe, expect, it } from 'vitest';
import {
  AGENT_KEY,
  parseAgentName,
  parseAgentStatuses,
  parseClientToken,
  parseKey,
  parseKeyPrefix,
  parseMessage,
  parseScheduleId,
  parseUser,
} from '../../../src/cli/agents/agent-args.js';
import { CliError } from '../../../src/cli/cli-error.js';
import { ACTOR_KEY } from '../../../src/durable/actor-address.js';

/** The CliError `run` throws. */
function refusal(run: () => unknown): CliError {
  try {
    run();
  } catch (err) {
    if (err instanceof CliError) return err;
    throw err;
  }
  throw new Error('not refused');
}

describe('agent arguments', () => {
  it("the key's form is the runtime's (API.md's)", () => {
    expect(AGENT_KEY.source).toBe(ACTOR_KEY.source);
  });

  it('a key: 1 to 128 letters, digits, ".", "_", "~" or "-"', () => {
    expect(parseKey('customer-42')).toBe('customer-42');
    expect(parseKey('a.b_c~d-E9')).toBe('a.b_c~d-E9');
    expect(parseKey('k'.repeat(128))).toBe('k'.repeat(128));
    for (const bad of ['', 'customer 42', 'a/b', 'k'.repeat(129), 'ключ']) {
      const err = refusal(() => parseKey(bad));
      expect(err.code).toBe('USAGE');
      expect(err.exitCode).toBe(2);
      expect(err.message).toMatch(/^<key> must be 1 to 128 letters, digits/);
    }
    expect(refusal(() => parseKey('customer 42')).message).toContain('got "customer 42"');
  });

  it('a message is one JSON value; anything else is refused with an example', () => {
    expect(parseMessage('{"text":"hi"}')).toEqual({ text: 'hi' });
    expect(parseMessage('42')).toBe(42);
    expect(parseMessage('"a string"')).toBe('a string');
    const err = refusal(() => parseMessage('{text:"hi"}'));
    expect(err.exitCode).toBe(2);
    expect(err.message).toMatch(
      /^<message> is not JSON \(.+\): give one JSON value, e\.g\. '\{"text":"hello"\}'$/,
    );
    expect(refusal(() => parseMessage('')).exitCode).toBe(2);
  });

  it('statuses: asleep, awake, busy, waiting, comma-separated, each once', () => {
    expect(parseAgentStatuses(undefined)).toBeUndefined();
    expect(parseAgentStatuses('busy, waiting,busy')).toEqual(['busy', 'waiting']);
    const err = refusal(() => parseAgentStatuses('sleeping'));
    expect(err.exitCode).toBe(2);
    expect(err.message).toBe(
      '--status must be one or more of asleep, awake, busy, waiting (comma-separated), got "sleeping"',
    );
  });

  it('a key prefix has a key’s characters; names, users and client tokens 1 to 256 characters', () => {
    expect(parseKeyPrefix('customer-')).toBe('customer-');
    expect(parseKeyPrefix(undefined)).toBeUndefined();
    expect(refusal(() => parseKeyPrefix('a b')).message).toMatch(/^--key-prefix must be 1 to 128/);
    expect(parseAgentName('notebook')).toBe('notebook');
    expect(refusal(() => parseAgentName('')).message).toBe(
      '<name> must be 1 to 256 characters, got ""',
    );
    expect(refusal(() => parseAgentName('', '--name')).message).toMatch(/^--name must be/);
    expect(parseUser('alice')).toBe('alice');
    expect(refusal(() => parseUser('u'.repeat(257))).exitCode).toBe(2);
    expect(parseClientToken('t-1')).toBe('t-1');
    expect(parseClientToken(undefined)).toBeUndefined();
    expect(refusal(() => parseClientToken('')).message).toBe(
      '--client-token must be 1 to 256 characters, got ""',
    );
  });

  it('a schedule id of another form names no schedule: NOT_FOUND, exit 1', () => {
    expect(parseScheduleId('sched_nightly-notes')).toBe('sched_nightly-notes');
    for (const bad of ['nightly', 'sched_', 'sched_a b', `sched_${'x'.repeat(129)}`]) {
      const err = refusal(() => parseScheduleId(bad));
      expect(err.code).toBe('NOT_FOUND');
      expect(err.exitCode).toBe(1);
    }
    expect(refusal(() => parseScheduleId('nightly')).message).toBe(
      'no schedule "nightly": a schedule\'s id is sched_ and 1 to 128 letters, digits, ".", "_", "~" or "-" (axon schedules list shows them)',
    );
  });
});
