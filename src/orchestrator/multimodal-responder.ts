/**
 * @module The multimodal responder (Nerva's): a result's text with image and card blocks;
 * on a channel without media the blocks are sent as text instead.
 */
import { z } from 'zod';
import type { AgentResult } from '../actors/agent-result.js';
import type { ExecContext } from '../context/exec-context.js';
import { checkChannel, textForChannel, textOf } from './channel-text.js';
import type { Channel, MediaBlock, Responder, Response } from './responder.js';

/**
 * One media block as an output may give it. An image's `url` must be `http`, `https` or
 * `data`: a `javascript:` link in an agent's output is not passed on to a client.
 */
export const mediaBlockSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('image'),
    url: z.url({ protocol: /^(https?|data)$/ }),
    alt: z.string(),
  }),
  z.object({
    type: z.literal('card'),
    title: z.string(),
    body: z.string(),
    actions: z.array(z.object({ label: z.string(), value: z.string() })).optional(),
  }),
]);

/** An output the multimodal responder reads as text and blocks (other keys are ignored). */
const multimodalOutputSchema = z
  .object({ text: z.string().optional(), blocks: z.array(z.unknown()).optional() })
  .refine((o) => o.text !== undefined || o.blocks !== undefined);

/** A checked block as a {@link MediaBlock}: an absent `actions` left out, not `undefined`. */
function toMediaBlock(block: z.infer<typeof mediaBlockSchema>): MediaBlock {
  if (block.type === 'image') return block;
  const { title, body, actions } = block;
  return actions === undefined
    ? { type: 'card', title, body }
    : { type: 'card', title, body, actions };
}

/** The text a block leaves on a channel without media. */
function blockText(block: MediaBlock): string {
  if (block.type === 'image') return `[image: ${block.alt === '' ? block.url : block.alt}]`;
  return block.body === '' ? block.title : `${block.title}: ${block.body}`;
}

/**
 * A responder for outputs of the shape `{ text?: string, blocks?: MediaBlock[] }`: the text
 * is the response's text and the blocks its media. Each block is checked
 * ({@link mediaBlockSchema}); an invalid one is dropped and counted in
 * `metadata.dropped_blocks`. Blocks keep only their known fields.
 *
 * On a channel without media, `media` is `[]` and each block's text is appended to the
 * text, one paragraph each (`[image: alt]`, or the url when `alt` is empty; `title: body`
 * for a card, its actions left out), before the whole is made plain (if the channel lacks
 * markdown) and fitted to the channel's length — so a long text can push block texts out.
 *
 * Any other output (a string, an object of another shape) and a result that is not a
 * success are sent as `createPassthroughResponder` sends them.
 *
 * Metadata: `handler`, `status`, `truncated`, `dropped_blocks`.
 *
 * @example
 * // a handler returns { text: 'Your room', blocks: [{ type: 'image', url: 'https://…/room.jpg', alt: 'the room' }] }
 * const response = await createMultimodalResponder().format(result, channel, ctx);
 */
export function createMultimodalResponder(): Responder {
  return {
    name: 'multimodal',
    format(result: AgentResult, channel: Channel, _ctx: ExecContext): Promise<Response> {
      // A throw in the executor (a bad channel) rejects: `format` never throws synchronously.
      return new Promise((resolve) => {
        checkChannel(channel);
        const parsed =
          result.status === 'success' ? multimodalOutputSchema.safeParse(result.output) : null;
        let text = textOf(result);
        let blocks: MediaBlock[] = [];
        let dropped = 0;
        if (parsed?.success) {
          text = parsed.data.text ?? '';
          for (const candidate of parsed.data.blocks ?? []) {
            const block = mediaBlockSchema.safeParse(candidate);
            if (block.success) blocks.push(toMediaBlock(block.data));
            else dropped++;
          }
          if (!channel.supportsMedia) {
            text = [text, ...blocks.map(blockText)].filter((part) => part !== '').join('\n\n');
            blocks = [];
          }
        }
        const fitted = textForChannel(text, channel);
        resolve({
          text: fitted.text,
          channel: channel.name,
          media: blocks,
          metadata: {
            handler: result.handler,
            status: result.status,
            truncated: fitted.truncated,
            dropped_blocks: dropped,
          },
        });
      });
    },
  };
}
