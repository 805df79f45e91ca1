/**
 * @module Waiting for a step's end on a server (`axon agents send --wait --url`): its SSE
 * stream (`GET /v1/steps/{id}/stream`) read until its `end` or `error` frame, then its record.
 * A durable agent's message may wait for days (a sleep, a human's answer): the stream stays
 * open meanwhile, and one that closes before the end — a draining server, a dropped
 * connection — is opened again after the last frame read (`Last-Event-ID`). Only a server
 * that cannot be reached several times in a row gives up.
 */
import { CliError } from '../cli-error.js';
import type { ServerClient } from './server-client.js';

/** Step statuses that are an end. */
const ENDED: ReadonlySet<string> = new Set(['succeeded', 'failed', 'cancelled']);
/** Connections that fail in a row before it gives up. */
const MAX_FAILURES = 5;
/** The wait before reopening, n times this (at most {@link MAX_RETRY_MS}). */
const RETRY_MS = 200;
const MAX_RETRY_MS = 5_000;

/** Resolves after `ms`, or at once when `signal` aborts. */
function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/**
 * Reads the stream of step `stepId` once: `ended` once an `end` or `error` frame came,
 * `closed` when it closed before. `lastId` is kept up to date with the frames read.
 */
async function readStream(
  client: ServerClient,
  stepId: string,
  at: { lastId: string | null },
  signal: AbortSignal | undefined,
): Promise<'ended' | 'closed'> {
  const what = 'GET /v1/steps/{id}/stream';
  const res = await fetch(client.url(`v1/steps/${encodeURIComponent(stepId)}/stream`), {
    headers: client.headers({
      accept: 'text/event-stream',
      ...(at.lastId === null ? {} : { 'last-event-id': at.lastId }),
    }),
    ...(signal ? { signal } : {}),
  });
  if (!res.ok || !res.body) {
    const body = await res.text().catch(() => '');
    throw client.failure(
      res,
      body,
      what,
      () => new CliError('NOT_FOUND', `no message "${stepId}" at ${client.shown}`),
    );
  }
  const decoder = new TextDecoder();
  let buffered = '';
  try {
    for await (const chunk of res.body) {
      buffered += decoder.decode(chunk as Uint8Array, { stream: true });
      let cut: number;
      while ((cut = buffered.indexOf('\n\n')) >= 0) {
        const frame = buffered.slice(0, cut);
        buffered = buffered.slice(cut + 2);
        let event = '';
        for (const line of frame.split('\n')) {
          if (line.startsWith('event: ')) event = line.slice(7);
          else if (line.startsWith('id: ')) at.lastId = line.slice(4);
        }
        if (event === 'end' || event === 'error') return 'ended';
      }
    }
  } catch (err) {
    // Dropped mid-stream: read the record, and open it again if need be.
    if (signal?.aborted) throw client.unreachable(err, null);
  }
  return 'closed';
}

/**
 * Follows step `stepId` to its end and resolves its record as `read` gives it (`GET
 * /v1/steps/{id}`). `UNREACHABLE` when the server cannot be reached {@link MAX_FAILURES}
 * times in a row (or `signal` aborts).
 */
export async function followToEnd<T extends { readonly status: string }>(
  client: ServerClient,
  stepId: string,
  read: () => Promise<T>,
  signal: AbortSignal | undefined,
): Promise<T> {
  const at: { lastId: string | null } = { lastId: null };
  let failures = 0;
  let closes = 0;
  for (;;) {
    try {
      await readStream(client, stepId, at, signal);
      failures = 0;
    } catch (err) {
      if (err instanceof CliError) throw err;
      if (signal?.aborted || ++failures >= MAX_FAILURES) throw client.unreachable(err, null);
      await delay(RETRY_MS * failures, signal);
      continue;
    }
    // Ended, or closed before: the record says which.
    const step = await read();
    if (ENDED.has(step.status)) return step;
    closes += 1;
    await delay(Math.min(RETRY_MS * closes, MAX_RETRY_MS), signal);
  }
}
