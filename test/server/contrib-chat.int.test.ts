/**
 * @module The front door over the bridges (`orchestrator` in the options of `axonExpress`,
 * `axonFastify`, `axonHono`): `POST /v1/chat` and `POST /v1/chat/stream` on a real port of
 * each framework, under a mount path, read with a real client (fetch); and the chat-service
 * example, started and asked once each way.
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { startChatService } from '../../examples/chat-service/index.js';
import { defineAgent } from '../../src/actors/define-agent.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { createOrchestrator, type Orchestrator } from '../../src/orchestrator/orchestrator.js';
import type { Response as ChatResponse } from '../../src/orchestrator/responder.js';
import { createRuleRouter } from '../../src/orchestrator/rule-router.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { axonExpress } from '../../src/server/contrib/express.js';
import { axonFastify } from '../../src/server/contrib/fastify.js';
import { axonHono, type AxonHonoEnv } from '../../src/server/contrib/hono.js';
import type { ChatReply } from '../../src/server/contrib/chat-routes.js';
import {
  headerLookup,
  type HeaderLookup,
  type Identity,
} from '../../src/server/contrib/request-context.js';
import { testStore, useTestServers } from '../support/server.js';

/** What each framework's app is given besides the runtime and orchestrator. */
interface ChatAppOptions {
  readonly identify?: (headers: HeaderLookup) => Identity | null;
  readonly cancelOnDisconnect?: boolean;
}

/** A framework's app listening; `url` is the bridge's mount path (`…/api`). */
interface ChatServer {
  readonly url: string;
  close(): Promise<void>;
}

type StartChat = (
  runtime: Runtime,
  orchestrator: Orchestrator,
  options: ChatAppOptions,
) => Promise<ChatServer>;

/** Every runtime here on the project's store (PostgreSQL under `http-on-postgres`). */
const stores = useTestServers('server-contrib-chat');
/** The team's own route every app keeps beside the chat routes: `GET /api/ping`. */
const PING = { pong: true };

function nodeServer(server: ServerType | ReturnType<ReturnType<typeof express>['listen']>) {
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/api`,
    close: () =>
      new Promise<void>((resolve) => {
        if ('closeAllConnections' in server) server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}

const startExpress: StartChat = async (runtime, orchestrator, { identify, ...rest }) => {
  const app = express();
  app.use(
    '/api',
    axonExpress(runtime, {
      orchestrator,
      ...rest,
      ...(identify
        ? { identify: (req) => identify(headerLookup(req.headers)) }
        : { anonymous: 'allow' as const }),
    }),
  );
  app.get('/api/ping', (_req, res) => {
    res.json(PING);
  });
  const server = await new Promise<ReturnType<typeof app.listen>>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => {
      resolve(s);
    });
  });
  return nodeServer(server);
};

const startFastify: StartChat = async (runtime, orchestrator, { identify, ...rest }) => {
  const app = Fastify({ logger: false, forceCloseConnections: true });
  // The plugin skips encapsulation, so its prefix is the instance's it is registered on.
  await app.register(
    async (api) => {
      await api.register(
        axonFastify(runtime, {
          orchestrator,
          ...rest,
          ...(identify
            ? { identify: (request) => identify(headerLookup(request.headers)) }
            : { anonymous: 'allow' as const }),
        }),
      );
      api.get('/ping', () => PING);
    },
    { prefix: '/api' },
  );
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { url: `${url}/api`, close: () => app.close() };
};

const startHono: StartChat = async (runtime, orchestrator, { identify, ...rest }) => {
  const app = new Hono<AxonHonoEnv>();
  app.use(
    '/api/*',
    axonHono(runtime, {
      orchestrator,
      ...rest,
      ...(identify
        ? { identify: (c) => identify((name) => c.req.header(name)) }
        : { anonymous: 'allow' as const }),
    }),
  );
  app.get('/api/ping', (c) => c.json(PING));
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => {
      resolve(s);
    });
  });
  return nodeServer(server);
};

/** One SSE frame as sent: its event, id and parsed data. */
interface Frame {
  readonly event: string;
  readonly id: string;
  readonly data: {
    type: string;
    index: number;
    text: string;
    response?: ChatResponse;
    error?: { code: string };
  };
}

/** The frames of an SSE body. */
function parseFrames(text: string): Frame[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '' && !block.startsWith(':'))
    .map((block) => {
      const fields = new Map<string, string>();
      for (const line of block.split('\n')) {
        const at = line.indexOf(': ');
        fields.set(line.slice(0, at), line.slice(at + 2));
      }
      return {
        event: fields.get('event') ?? '',
        id: fields.get('id') ?? '',
        data: JSON.parse(fields.get('data') ?? 'null') as Frame['data'],
      };
    });
}

/** Resolves with the next value `resolve` is called with. */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve: (value: T) => void = () => undefined;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const BRIDGES: readonly (readonly [string, StartChat])[] = [
  ['express', startExpress],
  ['fastify', startFastify],
  ['hono', startHono],
];

describe.each(BRIDGES)('%s bridge: the front door', (_name, start) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn();
  });

  /** A runtime with the test agents, its orchestrator, and the app serving both. */
  async function serveChat(options: ChatAppOptions = {}) {
    const cancelled = deferred<unknown>();
    const streamedFirst = deferred<undefined>();
    const agents = [
      defineAgent({ name: 'echo', handler: (input) => `echo: ${input.message}` }),
      defineAgent({
        name: 'whoami',
        handler: (_input, ctx) => `user=${ctx.userId} session=${ctx.sessionId}`,
      }),
      defineAgent({
        name: 'streamer',
        async *handler() {
          for (const t of ['Hel', 'lo', ', wor', 'ld']) yield t;
          return 'Hello, world';
        },
      }),
      // Streams one token, then waits until its context is cancelled, and says so.
      defineAgent({
        name: 'blocker',
        timeoutMs: 600_000,
        async *handler(_input, ctx) {
          yield 'first';
          streamedFirst.resolve(undefined);
          const reason = await new Promise<unknown>((resolve) => {
            ctx.onCancel(resolve);
          });
          cancelled.resolve(reason);
          return 'stopped';
        },
      }),
    ];
    let answers = 0;
    agents.push(
      defineAgent({
        name: 'asker',
        handler: async (input, ctx, rt) =>
          (
            await rt.chat(
              { engine: 'counting', messages: [{ role: 'user', content: input.message }] },
              ctx,
            )
          ).text,
      }),
    );
    const runtime = stores.runtime({
      agents,
      engines: [
        createScriptedEngine({
          name: 'counting',
          tokenDelayMs: 0,
          script: () => `answer ${++answers}`,
        }),
      ],
    });
    const orchestrator = createOrchestrator({
      runtime,
      memory: false,
      router: createRuleRouter({
        rules: [
          { pattern: /^echo\b/, handler: 'echo' },
          { pattern: /^whoami\b/, handler: 'whoami' },
          { pattern: /^stream\b/, handler: 'streamer' },
          { pattern: /^block\b/, handler: 'blocker' },
          { pattern: /^ask\b/, handler: 'asker' },
        ],
      }),
    });
    const server = await start(runtime, orchestrator, options);
    cleanups.push(() => runtime.close());
    cleanups.push(() => server.close());
    const post = (path: string, body: unknown, init: RequestInit = {}) =>
      fetch(`${server.url}${path}`, {
        method: 'POST',
        ...init,
        headers: {
          'content-type': 'application/json',
          ...(init.headers as Record<string, string> | undefined),
        },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    return {
      url: server.url,
      post,
      cancelled: cancelled.promise,
      streamedFirst,
      runtime,
      answers: () => answers,
    };
  }

  it('POST /v1/chat answers with the routed handler’s text, route and status', async () => {
    const { post } = await serveChat();
    const res = await post('/v1/chat', { message: 'echo hi there' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-correlation-id')).toBeTruthy();
    const body = (await res.json()) as ChatReply;
    expect(body).toMatchObject({
      text: 'echo: echo hi there',
      channel: 'default',
      media: [],
      route: { intent: 'echo', confidence: 1, handler: 'echo' },
      status: 'success',
    });
  });

  it('POST /v1/chat formats for the channel given, and answers an unroutable message', async () => {
    const { post } = await serveChat();
    const short = {
      name: 'sms',
      supportsMarkdown: false,
      supportsMedia: false,
      maxLength: 10,
    };
    const res = await post('/v1/chat', { message: 'echo a long message', channel: short });
    const body = (await res.json()) as ChatReply;
    expect(body.channel).toBe('sms');
    expect(Array.from(body.text).length).toBeLessThanOrEqual(10);
    const lost = (await (
      await post('/v1/chat', { message: 'nothing matches' })
    ).json()) as ChatReply;
    expect(lost.status).toBe('wrong_handler');
    expect(lost.route).toMatchObject({ intent: 'unknown', handler: null });
  });

  it("runs the message as the caller, in the body's session_id", async () => {
    const { post } = await serveChat({
      identify: (headers) => {
        const user = headers('x-user');
        return user === undefined ? null : { userId: user };
      },
    });
    const session = `s-${randomUUID()}`;
    const res = await post(
      '/v1/chat',
      { message: 'whoami', session_id: session },
      { headers: { 'x-user': 'ada' } },
    );
    expect(((await res.json()) as ChatReply).text).toBe(`user=ada session=${session}`);
    const anonymous = await post('/v1/chat', { message: 'whoami' });
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as { error: { code: string } }).error.code).toBe(
      'UNAUTHORIZED',
    );
  });

  it('handles a message inside a run: its model call recorded, then replayed without asking the model', async () => {
    const { post, runtime, answers } = await serveChat();
    const { flow } = await runtime.createFlow({ name: 'chat', ast: { id: randomUUID() } });
    const recorded = await runtime.createRun(flow.flow_id);
    const run = { run_id: recorded.run_id, client_token: 'c-1' };
    const first = (await (
      await post('/v1/chat', { message: 'ask once', run })
    ).json()) as ChatReply;
    expect(first).toMatchObject({ text: 'answer 1', status: 'success' });
    const replay = await runtime.createRun(flow.flow_id, {
      mode: 'replay',
      replay_of: recorded.run_id,
    });
    const again = (await (
      await post('/v1/chat', {
        message: 'ask once',
        run: { run_id: replay.run_id, client_token: 'c-1' },
      })
    ).json()) as ChatReply;
    expect(again).toMatchObject({ text: 'answer 1', status: 'success' });
    expect(answers()).toBe(1);
    // An unknown run is the request's failure, formatted; a bad run field is a 400.
    const unknown = (await (
      await post('/v1/chat', { message: 'ask', run: { run_id: 'run_nope', client_token: 'c' } })
    ).json()) as ChatReply;
    expect(unknown).toMatchObject({ status: null, route: null, metadata: { status: 'error' } });
    expect(unknown.text).toMatch(/run_nope/);
    expect(answers()).toBe(1);
    expect((await post('/v1/chat', { message: 'ask', run: { run_id: 'r' } })).status).toBe(400);
  });

  it('leaves the team’s own routes under the mount path alone', async () => {
    const { url } = await serveChat();
    const res = await fetch(`${url}/ping`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(PING);
  });

  it('POST /v1/chat/stream sends chunk frames, then a done frame with the whole response', async () => {
    const { post } = await serveChat();
    const res = await post('/v1/chat/stream', { message: 'stream it' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = parseFrames(await res.text());
    const chunks = frames.filter((f) => f.event === 'chunk');
    const last = frames.at(-1);
    expect(chunks.map((f) => f.data.text)).toEqual(['Hel', 'lo', ', wor', 'ld']);
    expect(chunks.map((f) => f.id)).toEqual(['0', '1', '2', '3']);
    expect(last?.event).toBe('done');
    expect(last?.data).toMatchObject({ type: 'done', index: 4, text: '' });
    expect(last?.data.response?.text).toBe(chunks.map((f) => f.data.text).join(''));
    expect(frames.filter((f) => f.event === 'done')).toHaveLength(1);
  });

  it.each([
    ['/v1/chat', { session_id: 's' }, 'message'],
    ['/v1/chat', { message: 42 }, 'message'],
    ['/v1/chat/stream', { message: ['no'] }, 'message'],
    ['/v1/chat/stream', { message: 'hi', channel: { name: 'x' } }, 'channel.supportsMarkdown'],
    ['/v1/chat', { message: 'hi', extra: true }, 'extra'],
  ])('%s with %j is 400 INVALID_PARAMS naming %s', async (path, body, field) => {
    const { post } = await serveChat();
    const res = await post(path, body, { headers: { 'x-correlation-id': 'bad-body-1' } });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const error = (await res.json()) as {
      error: { code: string; message: string; details: { issues: { path: unknown[] }[] } };
      correlation_id: string;
    };
    expect(error.error.code).toBe('INVALID_PARAMS');
    expect(error.error.message).toContain(field);
    expect(error.correlation_id).toBe('bad-body-1');
  });

  it('refuses malformed JSON with 400 and a body that is not JSON with 415', async () => {
    const { post } = await serveChat();
    const malformed = await post('/v1/chat', '{"message": ');
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: { code: string } }).error.code).toBe(
      'INVALID_PARAMS',
    );
    const form = await post('/v1/chat', 'message=hi', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(415);
  });

  it('refuses a body past the limit with 413', async () => {
    const { post } = await serveChat();
    const res = await post('/v1/chat', { message: 'x'.repeat(1_100_000) });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
      'PAYLOAD_TOO_LARGE',
    );
  });

  it('cancels the invocation when the client aborts the stream mid-way', async () => {
    // Not the bridge's own cancel on disconnect: the chat stream must cancel by itself.
    const { post, cancelled, streamedFirst } = await serveChat({ cancelOnDisconnect: false });
    const abort = new AbortController();
    const res = await post('/v1/chat/stream', { message: 'block here' }, { signal: abort.signal });
    expect(res.status).toBe(200);
    // Read until the first frame is whole, then hang up.
    const body = res.body;
    if (body === null) throw new Error('no body');
    const decoder = new TextDecoder();
    let text = '';
    for await (const part of body) {
      text += decoder.decode(part as Uint8Array, { stream: true });
      if (text.includes('\n\n')) break;
    }
    expect(parseFrames(text)[0]?.data.text).toBe('first');
    await streamedFirst.promise;
    abort.abort();
    const reason = await cancelled;
    expect(reason).toMatchObject({ code: 'CANCELLED' });
  });
});

describe('examples/chat-service', () => {
  it('answers one chat and streams another to a real client', async () => {
    const store = testStore(join(stores.folder(), 'axon.db'));
    const service = await startChatService({ port: 0, tokenDelayMs: 0, store });
    try {
      const ask = (path: string, message: string) =>
        fetch(`${service.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ message }),
        });
      const chat = (await (await ask('/v1/chat', 'weather in Paris?')).json()) as ChatReply;
      expect(chat).toMatchObject({
        text: 'The weather in Paris: light rain, 14 °C.',
        route: { handler: 'weather' },
        status: 'success',
      });
      const res = await ask('/v1/chat/stream', 'plan a day in Lisbon');
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const frames = parseFrames(await res.text());
      const chunks = frames.filter((f) => f.event === 'chunk').map((f) => f.data.text);
      const done = frames.at(-1);
      expect(chunks.length).toBeGreaterThan(5);
      expect(done?.event).toBe('done');
      expect(done?.data.response?.text).toBe(chunks.join(''));
      expect(done?.data.response?.text).toMatch(/^Here is a day in Lisbon:/);
      expect(done?.data.response?.metadata).toMatchObject({ handler: 'planner' });
    } finally {
      await service.close();
    }
  });
});
