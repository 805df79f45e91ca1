/**
 * @module The passthrough responder (Nerva's): a result's text as it is, made plain for a
 * channel without markdown and fitted to the channel's length; no media.
 */
import type { AgentResult } from '../actors/agent-result.js';
import type { ExecContext } from '../context/exec-context.js';
import { checkChannel, textForChannel, textOf } from './channel-text.js';
import type { Channel, Responder, Response } from './responder.js';

/**
 * A responder that sends a result's text (see `textOf`: a string output as it is, other
 * outputs as JSON, a failure as `"error: <message>"`) with no media. Markdown is made
 * plain on a channel without it; the text is cut to the channel's `maxLength`.
 *
 * Metadata: `handler`, `status` (the result's) and `truncated`.
 *
 * @example
 * const responder = createPassthroughResponder();
 * const response = await responder.format(result, DEFAULT_CHANNEL, ctx);
 */
export function createPassthroughResponder(): Responder {
  return {
    name: 'passthrough',
    format(result: AgentResult, channel: Channel, _ctx: ExecContext): Promise<Response> {
      // A throw in the executor (a bad channel) rejects: `format` never throws synchronously.
      return new Promise((resolve) => {
        checkChannel(channel);
        const fitted = textForChannel(textOf(result), channel);
        resolve({
          text: fitted.text,
          channel: channel.name,
          media: [],
          metadata: { handler: result.handler, status: result.status, truncated: fitted.truncated },
        });
      });
    },
  };
}
