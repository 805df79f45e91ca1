/**
 * The Responder conformance suite. Every responder runs it from its own test file. A
 * responder that rewrites text with a model (tone) runs it with a model that answers the
 * text unchanged, so that what it sends can be checked against the result's text.
 *
 * @example
 * describeResponder('passthrough', () => createPassthroughResponder());
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { AgentResult } from '../../src/actors/agent-result.js';
import { createContext } from '../../src/context/create-context.js';
import { InternalError } from '../../src/errors/internal-error.js';
import { TimeoutError } from '../../src/errors/timeout-error.js';
import {
  DEFAULT_CHANNEL,
  type Channel,
  type Responder,
  type Response,
} from '../../src/orchestrator/responder.js';

/** A complete AgentResult: a success of `output` by `handler`, with `overrides` applied. */
export function agentResult(overrides: Partial<AgentResult> = {}): AgentResult {
  return {
    status: 'success',
    output: null,
    data: null,
    error: null,
    handler: 'writer',
    runId: `run_${randomUUID()}`,
    stepId: `step_${randomUUID()}`,
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, costUsd: 0 },
    durationMs: 3,
    ...overrides,
  };
}

/** A channel named `name` with `overrides` applied to the default channel. */
export function channelOf(overrides: Partial<Channel> = {}): Channel {
  return { ...DEFAULT_CHANNEL, name: `ch-${randomUUID()}`, ...overrides };
}

/** The number of Unicode code points of `text`. */
export function codePoints(text: string): number {
  return Array.from(text).length;
}

/** True when `text` has a lone (unpaired) surrogate: a surrogate pair was split. */
export function hasLoneSurrogate(text: string): boolean {
  return /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}

const SENTENCE = 'the quick brown fox jumps over the lazy dog';

/**
 * Checks that `response` is `original` fitted to `max` code points: short enough, and if cut,
 * a prefix of `original` ending in '…' cut before whitespace (or inside a first word too
 * long to keep whole).
 */
function expectFitted(response: Response, original: string, max: number): void {
  const text = response.text;
  expect(codePoints(text)).toBeLessThanOrEqual(max);
  expect(hasLoneSurrogate(text)).toBe(false);
  if (codePoints(original) <= max) {
    expect(text).toBe(original);
    expect(response.metadata['truncated']).toBe(false);
    return;
  }
  expect(response.metadata['truncated']).toBe(true);
  expect(text.endsWith('…')).toBe(true);
  const kept = text.slice(0, -1);
  expect(original.startsWith(kept)).toBe(true);
  expect(kept).toBe(kept.trimEnd());
  const next = original.slice(kept.length);
  const onWordBoundary = kept === '' || /^\s/.test(next) || !/\s/.test(kept);
  expect(onWordBoundary, `"${text}" cuts "${original}" inside a word`).toBe(true);
}

/** Registers the Responder conformance suite for the responder `make` builds. */
export function describeResponder(name: string, make: () => Responder | Promise<Responder>): void {
  describe(`Responder conformance: ${name}`, () => {
    async function format(result: AgentResult, channel: Channel): Promise<Response> {
      const responder = await make();
      return responder.format(result, channel, createContext());
    }

    it('has a name', async () => {
      const responder = await make();
      expect(typeof responder.name).toBe('string');
      expect(responder.name).not.toBe('');
    });

    it("sends a string output's text on the default channel, under its name", async () => {
      const result = agentResult({ output: 'Your flight to Berlin is booked.' });
      const response = await format(result, DEFAULT_CHANNEL);
      expect(response.text).toBe('Your flight to Berlin is booked.');
      expect(response.channel).toBe('default');
      expect(response.media).toEqual([]);
      expect(response.metadata).toMatchObject({
        handler: 'writer',
        status: 'success',
        truncated: false,
      });
    });

    it("names the channel it formatted for in the response's channel", async () => {
      const channel = channelOf({ name: 'telegram' });
      const response = await format(agentResult({ output: 'hello' }), channel);
      expect(response.channel).toBe('telegram');
    });

    it('never sends more than a maxLength-20 channel takes, and cuts on a word boundary', async () => {
      const response = await format(
        agentResult({ output: SENTENCE }),
        channelOf({ maxLength: 20 }),
      );
      expect(codePoints(response.text)).toBeLessThanOrEqual(20);
      expect(response.text).toBe('the quick brown fox…');
      expect(response.metadata['truncated']).toBe(true);
    });

    it('fits the text to every maxLength from 1 to past its length', async () => {
      const original = `${SENTENCE} — naïve café 😀 👍🏽 done`;
      for (let max = 1; max <= codePoints(original) + 1; max++) {
        const response = await format(
          agentResult({ output: original }),
          channelOf({ maxLength: max }),
        );
        expectFitted(response, original, max);
      }
    });

    it('never splits a surrogate pair when cutting a text of emoji', async () => {
      const emoji = '😀'.repeat(30);
      for (const max of [1, 2, 3, 10, 29]) {
        const response = await format(
          agentResult({ output: emoji }),
          channelOf({ maxLength: max }),
        );
        expectFitted(response, emoji, max);
        // Code points, not UTF-16 units: the limit is not spent on half emoji.
        expect(response.text).toBe(`${'😀'.repeat(max - 1)}…`);
      }
    });

    it('never sends media on a channel without media', async () => {
      const channel = channelOf({ supportsMedia: false });
      for (const output of [
        'plain text',
        {
          text: 'Your room',
          blocks: [{ type: 'image', url: 'https://example.com/room.jpg', alt: 'the room' }],
        },
      ]) {
        const response = await format(agentResult({ output }), channel);
        expect(response.media).toEqual([]);
        expect(response.text).not.toBe('');
      }
    });

    it('sends plain text on a channel without markdown', async () => {
      const response = await format(
        agentResult({ output: '## Trip\n**Berlin** on _Tuesday_, see [docs](https://x.dev)' }),
        channelOf({ supportsMarkdown: false }),
      );
      expect(response.text).toBe('Trip\nBerlin on Tuesday, see docs (https://x.dev)');
    });

    it('formats a failed result instead of rejecting', async () => {
      const failed = agentResult({ status: 'error', error: new InternalError('boom') });
      const response = await format(failed, DEFAULT_CHANNEL);
      expect(response.text).toBe('error: boom');
      expect(response.metadata).toMatchObject({ status: 'error', handler: 'writer' });

      const timedOut = agentResult({ status: 'timeout', error: new TimeoutError('writer', 50) });
      expect((await format(timedOut, DEFAULT_CHANNEL)).text).toBe(
        'timeout: "writer" timed out after 50 ms',
      );
      expect((await format(timedOut, channelOf({ maxLength: 8 }))).text).toBe('timeout…');
    });

    it("sends a needs_data result's message to the user as it is", async () => {
      const asking = agentResult({ status: 'needs_data', output: 'Which city?' });
      const response = await format(asking, DEFAULT_CHANNEL);
      expect(response.text).toBe('Which city?');
      expect(response.metadata['status']).toBe('needs_data');
    });

    it('rejects (never throws) for a channel that is not valid, naming the field', async () => {
      const responder = await make();
      const ctx = createContext();
      const result = agentResult({ output: 'hi' });
      await expect(responder.format(result, channelOf({ maxLength: 0 }), ctx)).rejects.toThrow(
        RangeError,
      );
      await expect(responder.format(result, channelOf({ maxLength: 0 }), ctx)).rejects.toThrow(
        /maxLength/,
      );
      const noName = { ...DEFAULT_CHANNEL, name: 3 } as unknown as Channel;
      await expect(responder.format(result, noName, ctx)).rejects.toThrow(TypeError);
    });
  });
}
