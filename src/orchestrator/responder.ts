/**
 * @module The responder's contract (Nerva's `format`, REFERENCE.md): an invocation's result
 * made into what a channel can show — its text cut to the channel's length, its media kept
 * only where the channel shows media. Every responder runs
 * `test/orchestrator/responder.conformance.ts`.
 */
import type { AgentResult } from '../actors/agent-result.js';
import type { ExecContext } from '../context/exec-context.js';

/** Where a response goes, and what it can show. */
export interface Channel {
  readonly name: string;
  /** Whether markdown is rendered (else it is sent as plain text). */
  readonly supportsMarkdown: boolean;
  /** Whether images and cards are shown (else they are left out, their text kept). */
  readonly supportsMedia: boolean;
  /** The most characters (Unicode code points) a message may have, or `null` for no limit. */
  readonly maxLength: number | null;
}

/** A channel with markdown and media and no length limit: the default of `handle`. */
export const DEFAULT_CHANNEL: Channel = Object.freeze({
  name: 'default',
  supportsMarkdown: true,
  supportsMedia: true,
  maxLength: null,
});

/** A block of a response besides its text. */
export type MediaBlock =
  | { readonly type: 'image'; readonly url: string; readonly alt: string }
  | {
      readonly type: 'card';
      readonly title: string;
      readonly body: string;
      readonly actions?: readonly { readonly label: string; readonly value: string }[];
    };

/** What a responder makes of a result for a channel. */
export interface Response {
  readonly text: string;
  /** The channel's name. */
  readonly channel: string;
  /** Images and cards, `[]` on a channel without media. */
  readonly media: readonly MediaBlock[];
  /** What the responder wants known (`truncated`, `handler`, `status`, …). */
  readonly metadata: Readonly<Record<string, unknown>>;
}

/** Formats results for channels. */
export interface Responder {
  readonly name: string;
  /** Never rejects for a failed result: a failure is formatted like any result. */
  format(result: AgentResult, channel: Channel, ctx: ExecContext): Promise<Response>;
}

/** One piece of a streamed response: text as it comes, then one final chunk. */
export interface ResponseChunk {
  /** Position from 0, in order. */
  readonly index: number;
  /** Text of this piece (`''` on the final chunk). */
  readonly text: string;
  /** True on the last chunk, which carries the whole formatted response. */
  readonly done: boolean;
  readonly response?: Response;
}
