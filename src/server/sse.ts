/**
 * @module The server's streams as Server-Sent Events (API.md, STREAM-2001..2003), one writer
 * for a step's and a thread's: frames
 * `id: <seq>` / `event: <type>` / `data: <json>`, read from the durable log from
 * `Last-Event-ID` on and then live (`runtime.followStepPages`), `: keep-alive` comments while
 * nothing else is written, `write()` backpressure honoured (the next frame waits for
 * `drain`), and the drop policy: while the socket is backed up, `metrics` and `narration`
 * frames are dropped (counted); `token` and `fact` wait, never dropped. The stream closes
 * after the step's `end` or `error`; a client that goes away aborts the follow, which is
 * the runtime's disconnect (`cancel_on_disconnect`).
 */
import type { ServerResponse } from 'node:http';
import type { StepEvent } from '../streams/events.js';

/**
 * What the stream needs of the runtime: its follow of a step's log, a page (the events of
 * one read, never none) at a time (`runtime.followStepPages`).
 */
export type FollowLog = (
  stepId: string,
  options: { readonly afterSeq: number; readonly signal: AbortSignal },
) => AsyncIterable<readonly StepEvent[]>;

/** Options of {@link serveSse}. */
export interface SseOptions {
  /** How often a `: keep-alive` comment is written while nothing else is; ms. */
  readonly keepAliveMs: number;
  /** Extra response headers (the correlation id). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Told of each frame dropped by the drop policy. */
  readonly onDrop?: (type: string) => void;
  /** Told of a failure of what the stream reads (the stream then ends). */
  readonly onError?: (err: unknown) => void;
  /**
   * The least time between two writes of frames to the socket, ms: frames that come sooner
   * wait and go out together in one write (a write is a syscall; a token each would be one
   * a token). 0 writes each page of the log at once. The first frame and the step's last
   * are never held.
   */
  readonly flushMs: number;
}

/** How a stream ended. */
export type SseEnd = 'ended' | 'disconnected' | 'failed';

/** The response headers of a stream (API.md). */
export function sseHeaders(extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  return {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    ...extra,
  };
}

/**
 * Characters of frames gathered before a write: a page of a log's events goes out in one
 * write or a few, and the socket's backpressure is looked at between them.
 */
const CHUNK_CHARS = 16_384;

/** The events that end a step's log: their frame is never held. */
const LAST: ReadonlySet<string> = new Set(['end', 'error']);

/** The types the drop policy may drop under pressure (STREAM-2003). */
const DROPPABLE: ReadonlySet<string> = new Set(['metrics', 'narration']);

/**
 * An event's `data` on the wire: its fields, with a fact's nested fields flattened. A fact's
 * `data` is the Fact as `GET /v1/runs/{id}/facts` shows it (its own `ts`, the time it was
 * appended) plus the event's `step_id` and `seq`.
 */
export function sseData(event: StepEvent): Record<string, unknown> {
  const { type: _type, ...fields } = event as StepEvent & Record<string, unknown>;
  if (event.type === 'fact') {
    const { fact, ...rest } = fields as { fact: Record<string, unknown> } & Record<string, unknown>;
    return { ...rest, ...fact };
  }
  return fields;
}

/** One SSE frame of `event`. */
export function sseFrame(event: StepEvent): string {
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(sseData(event))}\n\n`;
}

/**
 * A signal aborted when `res`'s connection closes — at once when it closed already: a client
 * that went away while the handler awaited the store (an ownership check, a first read) must
 * not leave a stream following a live step for as long as it runs. `stop()` forgets the
 * connection once the stream is over.
 */
export function whileOpen(res: ServerResponse): { readonly signal: AbortSignal; stop(): void } {
  const gone = new AbortController();
  const onClose = (): void => {
    gone.abort();
  };
  res.once('close', onClose);
  if (res.destroyed || res.socket === null || res.socket.destroyed) gone.abort();
  return {
    signal: gone.signal,
    stop: () => {
      res.off('close', onClose);
    },
  };
}

/** Resolves when `res` drains (`true`), or when the connection closes first (`false`). */
export function drained(res: ServerResponse, closed: AbortSignal): Promise<boolean> {
  if (closed.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (ok: boolean): void => {
      res.off('drain', onDrain);
      closed.removeEventListener('abort', onClose);
      resolve(ok);
    };
    const onDrain = (): void => {
      done(true);
    };
    const onClose = (): void => {
      done(false);
    };
    res.on('drain', onDrain);
    closed.addEventListener('abort', onClose, { once: true });
  });
}

/**
 * What {@link writeSse} streams: pages of items (the events of one read of a log, never
 * none), how each is written as a frame, its type (for the drop policy), and whether it is
 * the stream's last (never held back by the flush window).
 */
export interface SseSource<T> {
  readonly pages: AsyncIterable<readonly T[]>;
  frame(item: T): string;
  type(item: T): string;
  last(item: T): boolean;
}

/**
 * Streams `source` to `res` as SSE until its pages end, or until `closed` aborts (the client
 * went away) — the one writer of every stream of the server (steps' and threads'): headers,
 * `: keep-alive` comments, the flush window (`options.flushMs`), writes of a chunk at most,
 * and the drop policy (`metrics` and `narration` dropped while the socket is backed up,
 * anything else waits for `drain`). Resolves how it ended; never rejects: a failure of the
 * source is told to `options.onError` and ends the response.
 */
export async function writeSse<T>(
  res: ServerResponse,
  source: SseSource<T>,
  closed: AbortSignal,
  options: SseOptions,
): Promise<SseEnd> {
  res.writeHead(200, sseHeaders(options.headers));
  res.flushHeaders();
  const keepAlive = setInterval(() => {
    // A comment only while the socket keeps up: it is there to keep the connection open.
    if (!res.writableNeedDrain && !res.writableEnded) res.write(': keep-alive\n\n');
  }, options.keepAliveMs);
  keepAlive.unref();
  // Frames held for the flush window (`flushMs`), and when frames were last written.
  let held = '';
  let timer: NodeJS.Timeout | null = null;
  let wroteAt = -Infinity;
  const flush = (): void => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (held === '' || res.writableEnded) return;
    wroteAt = performance.now();
    res.write(held);
    held = '';
  };
  try {
    for await (const page of source.pages) {
      if (closed.aborted) return 'disconnected';
      // Frames go out a page or more at a time (a write is a syscall). The drop policy
      // looks at the socket before each frame: backed up, a droppable frame is dropped
      // and any other waits for `drain`. (Held frames are never behind a drain: the
      // socket only backs up on a write, and a write takes every held frame.)
      for (const item of page) {
        if (res.writableNeedDrain) {
          const type = source.type(item);
          if (DROPPABLE.has(type)) {
            options.onDrop?.(type);
            continue;
          }
          if (!(await drained(res, closed))) return 'disconnected';
        }
        held += source.frame(item);
        if (held.length >= CHUNK_CHARS) flush();
      }
      const tail = page.at(-1);
      const wait = options.flushMs - (performance.now() - wroteAt);
      if (wait <= 0 || (tail !== undefined && source.last(tail))) flush();
      else timer ??= setTimeout(flush, wait);
    }
    flush();
    return closed.aborted ? 'disconnected' : 'ended';
  } catch (err) {
    options.onError?.(err);
    return 'failed';
  } finally {
    if (timer) clearTimeout(timer);
    clearInterval(keepAlive);
    if (!res.writableEnded) {
      if (held !== '' && !closed.aborted) res.write(held);
      res.end();
    }
  }
}

/**
 * Streams step `stepId`'s events after `afterSeq` to `res` as SSE (see {@link writeSse})
 * until the step's last event, or until `closed` aborts.
 */
export function serveSse(
  res: ServerResponse,
  follow: FollowLog,
  stepId: string,
  afterSeq: number,
  closed: AbortSignal,
  options: SseOptions,
): Promise<SseEnd> {
  return writeSse(
    res,
    {
      pages: follow(stepId, { afterSeq, signal: closed }),
      frame: sseFrame,
      type: (event) => event.type,
      last: (event) => LAST.has(event.type),
    },
    closed,
    options,
  );
}

/**
 * The open streams of a server, so that its close can let them write their last event and
 * then cut the ones still open: a client that stopped reading would otherwise hold the HTTP
 * server's close forever (Node's `server.close()` waits for active connections, and Fastify
 * only closes idle ones).
 */
export class OpenStreams {
  readonly #open = new Map<Promise<SseEnd>, ServerResponse>();

  /** Counts `res`'s stream until `done` settles. */
  add(res: ServerResponse, done: Promise<SseEnd>): void {
    this.#open.set(done, res);
    void done.finally(() => this.#open.delete(done));
  }

  /**
   * Waits up to `graceMs` for the open streams to end on their own, then destroys the
   * connections of those left, and resolves once every one has ended.
   */
  async close(graceMs: number): Promise<void> {
    if (this.#open.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(this.#open.keys()),
      new Promise((resolve) => (timer = setTimeout(resolve, graceMs))),
    ]);
    clearTimeout(timer);
    const left = [...this.#open];
    for (const [, res] of left) res.destroy();
    await Promise.allSettled(left.map(([done]) => done));
  }
}
