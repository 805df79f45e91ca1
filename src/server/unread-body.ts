/**
 * @module A body the server answered before reading it (413 past the limit, 401, 415, 404),
 * read on and dropped after the answer, so that the client can finish sending it and then
 * read the answer. Closing at once would cut a client that is still writing (Node's `fetch`
 * then reports a broken pipe, never the 413). What is read this way is bounded: past
 * {@link UNREAD_BODY_BYTES} or {@link UNREAD_BODY_MS} the connection is cut.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The most bytes of a refused body read (and dropped) after its answer. */
export const UNREAD_BODY_BYTES = 64 * 1024 * 1024;
/** The longest a refused body is read after its answer, ms. */
export const UNREAD_BODY_MS = 10_000;

/**
 * When `req`'s body is not read in full, reads what is left of it once `res` is sent (Node
 * drops it unread), cutting the connection past the bounds of the module. Returns whether
 * the body was unread: then the answer should not ask to close the connection (the drain
 * does it, or keeps it usable).
 */
export function drainAfterAnswer(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.complete) return false;
  res.once('finish', () => {
    if (req.complete) return;
    let read = 0;
    const cut = (): void => {
      stop();
      req.socket.destroy();
    };
    const onData = (chunk: Buffer): void => {
      read += chunk.length;
      if (read > UNREAD_BODY_BYTES) cut();
    };
    const timer = setTimeout(cut, UNREAD_BODY_MS);
    timer.unref();
    const stop = (): void => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', stop);
      req.off('close', stop);
    };
    req.on('data', onData);
    req.once('end', stop);
    req.once('close', stop);
    // Node resumes an unread body itself once the answer is sent; this makes sure of it.
    req.resume();
  });
  return true;
}
