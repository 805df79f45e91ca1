/**
 * `GET /v1/agents/{name}/{key}/stream` (API.md, "Durable agents"; issue 46) over real HTTP: the
 * events of an actor's messages in the order handled, each frame's data with `message_id`, ids
 * `<n>.<seq>` that `Last-Event-ID` resumes after — within a message and across messages — and
 * a stream that stays open for the messages sent after it opened, with keep-alives between.
 */
import { get, type IncomingHttpHeaders } from 'node:http';
import { describe, expect, it } from 'vitest';
import { followUp, notebook } from '../../examples/index.js';
import {
  expectApiError,
  expectStreamOrder,
  parseSse,
  POLL,
  sseClients,
  useTestServers,
  type SseFrame,
  type TestServer,
} from '../support/server.js';

const servers = useTestServers('server-agent-stream');

const ALICE = 'alice-key-0123456789';
const BOB = 'bob-key-01234567890';

function start(options: { keys?: boolean; keepAliveMs?: number } = {}): Promise<TestServer> {
  return servers.start({
    runtime: { agents: [notebook, followUp] },
    server: {
      ...(options.keepAliveMs === undefined ? {} : { keepAliveMs: options.keepAliveMs }),
      ...(options.keys
        ? {
            keys: [
              { key: ALICE, user_id: 'alice' },
              { key: BOB, user_id: 'bob' },
            ],
          }
        : {}),
    },
  });
}

async function send(
  s: TestServer,
  path: string,
  message: unknown,
  headers: Record<string, string> = {},
): Promise<string> {
  const res = await s.api('POST', `/v1/agents/${path}/messages`, { message }, headers);
  expect(res.status, res.text).toBe(202);
  return (res.body as { message_id: string }).message_id;
}

/** The frames of the `n`-th message of `frames`, checked: order, seqs, ids and message_id. */
function messageFrames(frames: readonly SseFrame[], n: number, messageId: string): SseFrame[] {
  const mine = frames.filter((f) => f.id?.startsWith(`${n}.`));
  expectStreamOrder(mine.map((f) => f.event ?? ''));
  mine.forEach((f, i) => {
    expect(f.id).toBe(`${n}.${i + 1}`);
    expect(f.data).toMatchObject({ seq: i + 1, step_id: messageId, message_id: messageId });
  });
  return mine;
}

/** A stream being read over its own connection, which `close` destroys. */
interface Reading {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  text(): string;
  /** Reads until `done(text)` holds (or the stream ends); the text so far. */
  readUntil(done: (text: string) => boolean): Promise<string>;
  /** Closes the connection; resolves once the server has let the stream go (its slot free). */
  close(): Promise<void>;
}

/** Opens `path` on `s` (a connection of its own, so a close cannot leave it to a pool). */
function open(s: TestServer, path: string, headers: Record<string, string> = {}): Promise<Reading> {
  return new Promise((resolve, reject) => {
    const req = get(`${s.url}${path}`, { headers, agent: false }, (res) => {
      res.setEncoding('utf8');
      let text = '';
      let ended = false;
      let wake = (): void => undefined;
      res.on('data', (chunk: string) => {
        text += chunk;
        wake();
      });
      res.on('close', () => {
        ended = true;
        wake();
      });
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        text: () => text,
        async readUntil(done) {
          while (!done(text) && !ended) {
            await new Promise<void>((next) => (wake = next));
          }
          return text;
        },
        close: async () => {
          req.destroy();
          await expect.poll(() => sseClients(s.url), POLL).toBe('0');
        },
      });
    });
    req.on('error', reject);
  });
}

const ends = (text: string): number =>
  parseSse(text).frames.filter((f) => f.event === 'end').length;

describe('GET /v1/agents/{name}/{key}/stream', () => {
  it("sends every message's events in the order handled (ids <n>.<seq>, data with message_id), then stays open for the next", async () => {
    const s = await start({ keepAliveMs: 50 });
    const ids = [];
    for (const text of ['one', 'two']) ids.push(await send(s, 'notebook/n', { text }));
    const reading = await open(s, `/v1/agents/notebook/n/stream`, {});
    expect(reading.status).toBe(200);
    expect(reading.headers['content-type']).toMatch(/^text\/event-stream/);
    await reading.readUntil((t) => ends(t) === 2);
    // The stream is still open: a message sent now comes on it.
    ids.push(await send(s, 'notebook/n', { text: 'three' }));
    const text = await reading.readUntil((t) => ends(t) === 3 && t.includes(': keep-alive'));
    const { frames, comments } = parseSse(text);
    expect(comments.length).toBeGreaterThan(0);
    const outputs = ids.map((id, i) => {
      const mine = messageFrames(frames, i + 1, id);
      return mine.at(-1)?.data['output'];
    });
    expect(outputs).toEqual([{ count: 1 }, { count: 2 }, { count: 3 }]);
    // In order: every frame of message 1 before any of message 2, and so on.
    const order = frames.map((f) => Number(f.id?.split('.')[0]));
    expect(order).toEqual([...order].sort((a, b) => a - b));
    await reading.close();
  });

  it('Last-Event-ID resumes after its frame: inside a message, and past a message it ended', async () => {
    const s = await start();
    const first = await send(s, 'notebook/r', { text: 'a' });
    const second = await send(s, 'notebook/r', { text: 'b' });
    const whole = await open(s, `/v1/agents/notebook/r/stream`);
    const all = parseSse(await whole.readUntil((t) => ends(t) === 2)).frames;
    await whole.close();
    const firstFrames = messageFrames(all, 1, first);
    messageFrames(all, 2, second);

    const resumed = async (
      lastEventId: string,
      query = false,
      endsWanted = 1,
    ): Promise<SseFrame[]> => {
      const path = `/v1/agents/notebook/r/stream${query ? `?last_event_id=${lastEventId}` : ''}`;
      const r = await open(s, path, query ? {} : { 'last-event-id': lastEventId });
      expect(r.status).toBe(200);
      const frames = parseSse(await r.readUntil((t) => ends(t) >= endsWanted)).frames;
      await r.close();
      return frames;
    };
    // After the first frame of message 1: its second frame on.
    const inside = await resumed('1.1', false, 2);
    expect(inside.map((f) => f.id)).toEqual(all.slice(1).map((f) => f.id));
    // After message 1's last frame: message 2 from its first.
    const past = await resumed(`1.${firstFrames.length}`);
    expect(past[0]?.id).toBe('2.1');
    messageFrames(past, 2, second);
    expect(past.every((f) => f.id?.startsWith('2.'))).toBe(true);
    expect((await resumed('2.1', true))[0]?.id).toBe('2.2');
    // 0.0: from the start.
    expect((await resumed('0.0', false, 2)).map((f) => f.id)).toEqual(all.map((f) => f.id));
  });

  it('follows a message that waits: its events before the wait, then the rest once it goes on', async () => {
    const s = await start();
    const id = await send(s, 'follow-up/w', { text: 'approved', await: 'approval' });
    const reading = await open(s, `/v1/agents/follow-up/w/stream`);
    await reading.readUntil((t) => parseSse(t).frames.some((f) => f.event === 'started'));
    expect(ends(reading.text())).toBe(0);
    const signal = await s.api('POST', '/v1/events', { name: 'approval', data: { answer: 'yes' } });
    expect(signal.body).toEqual({ woken: 1, refused: [] });
    const frames = parseSse(await reading.readUntil((t) => ends(t) === 1)).frames;
    await reading.close();
    const mine = messageFrames(frames, 1, id);
    expect(mine.at(-1)?.data['output']).toEqual({ logged: 'approved:yes' });
  });

  it('refuses: an actor never messaged, an unknown agent or another user’s actor 404; a malformed Last-Event-ID, or one past the messages, 400', async () => {
    const s = await start({ keys: true });
    const alice = { authorization: `Bearer ${ALICE}` };
    const bob = { authorization: `Bearer ${BOB}` };
    await send(s, 'notebook/mine', { text: 'x' }, alice);
    expectApiError(
      await s.api('GET', '/v1/agents/notebook/never/stream', undefined, alice),
      404,
      'NOT_FOUND',
    );
    expectApiError(
      await s.api('GET', '/v1/agents/nobody/k/stream', undefined, alice),
      404,
      'NOT_FOUND',
    );
    expectApiError(
      await s.api('GET', '/v1/agents/notebook/mine/stream', undefined, bob),
      404,
      'NOT_FOUND',
    );
    expectApiError(
      await s.api('GET', '/v1/agents/notebook/mine/stream?user_id=alice', undefined, bob),
      403,
      'FORBIDDEN',
    );
    for (const id of ['7', 'a.b', '1.2.3', '-1.0']) {
      expectApiError(
        await s.api('GET', '/v1/agents/notebook/mine/stream', undefined, {
          ...alice,
          'last-event-id': id,
        }),
        400,
        'INVALID_PARAMS',
      );
    }
    const past = await s.api('GET', '/v1/agents/notebook/mine/stream', undefined, {
      ...alice,
      'last-event-id': '2.0',
    });
    expectApiError(past, 400, 'INVALID_PARAMS');
    expect((past.body as { error: { details: unknown } }).error.details).toMatchObject({
      messages: 1,
    });
    // HEAD: the stream's headers, no stream.
    const head = await fetch(`${s.url}/v1/agents/notebook/mine/stream`, {
      method: 'HEAD',
      headers: alice,
    });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toMatch(/^text\/event-stream/);
  });
});
