/**
 * @module `axon serve`'s A2A routes on Fastify, over the SDK's transport-agnostic JSON-RPC
 * handlers (no second web framework): `GET /.well-known/agent-card.json`, the agent card —
 * public, as A2A discovery needs, 1.0's shape for a client asking `A2A-Version: 1.0`, 0.3's
 * (a top-level `url`) for one asking 0.3 or nothing — and `POST /a2a`, the JSON-RPC
 * endpoint, behind the API's keys (`write`): 1.0's methods (`SendMessage`,
 * `SendStreamingMessage`, `GetTask`, `CancelTask`, …) with `A2A-Version: 1.0`, 0.3's
 * (`message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, …) without. A stream is
 * SSE written by the server's one writer (its flush window, keep-alives, drop of nothing,
 * its bound of open streams, cut at a close like every stream).
 */
import type { FastifyInstance } from 'fastify';
import { formatSSEErrorEvent, formatSSEEvent } from '@a2a-js/sdk';
import { A2A_LEGACY_PROTOCOL_VERSION } from '@a2a-js/sdk/compat/v0_3';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { A2A_ERROR_CODE } from '@a2a-js/sdk/errors';
import { JsonRpcTransportHandler, validateVersion } from '@a2a-js/sdk/server';
import type { Logger } from '../../observability/logger.js';
import type { Runtime } from '../../runtime/runtime.js';
import { HttpError } from '../http-errors.js';
import { callerOf } from '../routes.js';
import type { ServerMetrics } from '../server-metrics.js';
import { whileOpen, writeSse, type OpenStreams } from '../sse.js';
import { takeStreamSlot, type StreamSlots } from '../stream-slots.js';
import { a2aCard, a2aSkills, cardJson, legacyCardJson } from './a2a-card.js';
import { a2aCallContext } from './a2a-context.js';
import { A2aExecutor } from './a2a-executor.js';
import { checkA2aOptions, type A2aOptions } from './a2a-options.js';
import { A2aRequestHandler } from './a2a-request-handler.js';
import { A2aTaskStore } from './a2a-task-store.js';

/** Where the agent card is (A2A's well-known path). */
export const A2A_CARD_PATH = '/.well-known/agent-card.json';
/** The JSON-RPC endpoint. */
export const A2A_RPC_PATH = '/a2a';
/** The A2A routes anyone may call, keys or not. */
export const A2A_PUBLIC_PATHS: readonly string[] = [A2A_CARD_PATH];

/** The methods that send a message (refused while the server drains), in 1.0 and 0.3. */
const SENDS: ReadonlySet<string> = new Set([
  'SendMessage',
  'SendStreamingMessage',
  'message/send',
  'message/stream',
]);
/** The methods answered with a stream. */
const STREAMS: ReadonlySet<string> = new Set([
  'SendStreamingMessage',
  'SubscribeToTask',
  'message/stream',
  'tasks/resubscribe',
]);

/** What the A2A routes need from the server. */
export interface A2aRouteDeps {
  readonly runtime: Runtime;
  readonly options: A2aOptions | undefined;
  /** The server's version, the card's. */
  readonly version: string;
  /** Whether API keys are configured. */
  readonly keys: boolean;
  readonly draining: () => boolean;
  readonly streams: OpenStreams;
  readonly slots: StreamSlots;
  readonly metrics: ServerMetrics;
  readonly logger: Logger;
  readonly keepAliveMs: number;
  readonly sseFlushMs: number;
}

/** A frame of a stream, and whether it is the stream's last. */
interface Frame {
  readonly text: string;
}

/** A JSON-RPC answer: one response, or a stream of them. */
type Answer = { readonly error?: unknown } | AsyncGenerator<unknown, void, undefined>;

const isStream = (a: Answer): a is AsyncGenerator<unknown, void, undefined> =>
  Symbol.asyncIterator in a;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A JSON-RPC request's id, when it has a valid one. */
function idOf(body: unknown): string | number | null {
  const id = isObject(body) ? body['id'] : null;
  return typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : null;
}

/** Reads the rest of a stream whose client went away, so the SDK keeps the task's events. */
async function readToEnd(
  stream: AsyncGenerator<unknown, void, undefined>,
  logger: Logger,
  method: string,
): Promise<void> {
  try {
    for (let next = await stream.next(); !next.done; next = await stream.next()) {
      // Nobody to write it to; the task store has it.
    }
  } catch (err) {
    logger.warn({ err, method }, 'an A2A stream failed after its client went away');
  }
}

/** A header's value, the first when repeated. */
function headerOf(headers: Record<string, string | string[] | undefined>, name: string) {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Registers the A2A routes (see the module) unless `deps.options.enabled` is false. Throws
 * what `checkA2aOptions` throws for options it refuses.
 */
export function registerA2aRoutes(app: FastifyInstance, deps: A2aRouteDeps): void {
  const { runtime, logger } = deps;
  const options = checkA2aOptions(runtime, deps.options);
  if (!options.enabled) return;
  const tasks = new A2aTaskStore(runtime);
  const executor = new A2aExecutor({ runtime, tasks, metrics: deps.metrics, logger });
  // The handler's own card says what it checks (the versions, streaming, no push
  // notifications); the card served is made per request, with the skills of the moment.
  const card = a2aCard({
    skills: [],
    url: options.url ?? A2A_RPC_PATH,
    version: deps.version,
    keys: deps.keys,
  });
  const handler = new A2aRequestHandler(card, {
    runtime,
    tasks,
    executor,
    router: options.router,
    defaultAgent: options.defaultAgent,
  });
  const rpc = new JsonRpcTransportHandler(handler);
  const legacyRpc = new LegacyJsonRpcTransportHandler(handler);

  app.get(A2A_CARD_PATH, (req, reply) => {
    const version = headerOf(req.headers, 'a2a-version');
    const url = options.url ?? `${req.protocol}://${req.host}${A2A_RPC_PATH}`;
    const served = a2aCard({
      skills: a2aSkills(runtime),
      url,
      version: deps.version,
      keys: deps.keys,
    });
    void reply.header('cache-control', 'no-cache').header('vary', 'A2A-Version');
    return (version ?? A2A_LEGACY_PROTOCOL_VERSION) === A2A_LEGACY_PROTOCOL_VERSION
      ? legacyCardJson(served)
      : cardJson(served);
  });

  app.post(A2A_RPC_PATH, async (req, reply) => {
    const version = headerOf(req.headers, 'a2a-version');
    const legacy = (version ?? A2A_LEGACY_PROTOCOL_VERSION) === A2A_LEGACY_PROTOCOL_VERSION;
    const mapError = (err: unknown): { readonly code: number } =>
      legacy
        ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(err)
        : JsonRpcTransportHandler.mapToJSONRPCError(err);
    const body: unknown = req.body;
    const method = isObject(body) && typeof body['method'] === 'string' ? body['method'] : '';
    const id = idOf(body);
    // Outside JSON-RPC, as every route answers them: a server draining takes no new work,
    // and a caller past its bound of open streams is 429.
    if (deps.draining() && SENDS.has(method)) {
      throw new HttpError(503, 'POOL_UNAVAILABLE', 'the server is draining: it takes no new tasks');
    }
    const caller = callerOf(req);
    const release = STREAMS.has(method) ? takeStreamSlot(deps, caller) : null;
    let streaming = false;
    try {
      const context = a2aCallContext({
        caller,
        headers: req.headers,
        version,
        extensions: legacy
          ? (headerOf(req.headers, 'x-a2a-extensions') ?? headerOf(req.headers, 'a2a-extensions'))
          : headerOf(req.headers, 'a2a-extensions'),
      });
      validateVersion(context.requestedVersion, card, 'JSONRPC');
      // The SDK parses a string body itself: only an object is handed on.
      const answer: Answer = await (legacy ? legacyRpc : rpc).handle(
        isObject(body) ? body : {},
        context,
      );
      if (!isStream(answer)) {
        const failed =
          isObject(answer.error) && answer.error['code'] === A2A_ERROR_CODE.INTERNAL_ERROR;
        return await reply.code(failed ? 500 : 200).send(answer);
      }
      // A refusal before the first event (an unknown skill) is an answer, not a stream.
      const stream = answer;
      const first = await stream.next();
      streaming = true;
      reply.hijack();
      const open = whileOpen(reply.raw);
      async function* frames(): AsyncGenerator<readonly Frame[]> {
        let ended = first.done === true;
        try {
          if (!first.done) yield [{ text: formatSSEEvent(first.value) }];
          // Read by hand, not with for-await: a client that goes away must not close the
          // SDK's stream, whose reading is what keeps the task's events in the store.
          while (!ended) {
            const next = await stream.next();
            if (next.done) ended = true;
            else yield [{ text: formatSSEEvent(next.value) }];
          }
        } catch (err) {
          ended = true;
          logger.warn({ err, method }, 'an A2A stream failed');
          yield [{ text: formatSSEErrorEvent({ jsonrpc: '2.0', id, error: mapError(err) }) }];
        } finally {
          // The client went away: the task goes on, and the rest of its events are still
          // read (and kept) to its end.
          if (!ended) void readToEnd(stream, logger, method);
        }
      }
      const done = writeSse(
        reply.raw,
        { pages: frames(), frame: (f) => f.text, type: () => 'a2a', last: () => false },
        open.signal,
        {
          keepAliveMs: deps.keepAliveMs,
          flushMs: deps.sseFlushMs,
          headers: { 'x-correlation-id': String(reply.getHeader('x-correlation-id') ?? '') },
          onError: (err) => {
            logger.error({ err, method }, 'an A2A stream could not be written');
          },
        },
      ).finally(() => {
        open.stop();
        release?.();
      });
      deps.streams.add(reply.raw, done);
      await done;
      return await reply;
    } catch (err) {
      const error = mapError(err);
      if (error.code === A2A_ERROR_CODE.INTERNAL_ERROR) {
        logger.error({ err, method }, 'an A2A request failed');
      }
      return await reply
        .code(error.code === A2A_ERROR_CODE.INTERNAL_ERROR ? 500 : 200)
        .send({ jsonrpc: '2.0', id, error });
    } finally {
      if (!streaming) release?.();
    }
  });
}
