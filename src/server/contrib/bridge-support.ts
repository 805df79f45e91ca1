/**
 * @module What the bridges share beyond the core: the signal that aborts when a Node client
 * goes away before its response is finished, and the reply to a refused request.
 */
import type { ServerResponse } from 'node:http';
import { CancelledError } from '../../errors/cancelled-error.js';
import type { Logger } from '../../observability/logger.js';
import { errorReply, type ErrorReply } from '../http-errors.js';

/**
 * A signal that aborts, with a `CancelledError`, when `res` closes before it has finished:
 * the client disconnected. A response that finishes aborts nothing, so work a route leaves
 * running after answering (a 202) is not cancelled by the connection closing later.
 */
export function disconnectSignal(res: ServerResponse): AbortSignal {
  const gone = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) {
      gone.abort(new CancelledError('the client closed the connection before the response'));
    }
  });
  return gone.signal;
}

/**
 * API.md's reply to a request refused with `err`. What is not an axon error (a bug in a
 * team's `identify`, say) is a 500 whose message stays out of the body; it is logged.
 */
export function refusal(err: unknown, correlationId: string, logger: Logger): ErrorReply {
  const reply = errorReply(err, correlationId);
  if (reply.status >= 500) {
    logger.error({ err, correlation_id: correlationId }, 'axon bridge: request refused');
  }
  return reply;
}
