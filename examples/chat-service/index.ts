/**
 * @module The chat-service example: the front door over HTTP. Two agents — `weather`, a plain
 * handler, and `planner`, whose answer streams from the scripted engine — a rule router
 * between them, an orchestrator over the runtime, served by the Hono bridge on
 * `@hono/node-server`: `POST /v1/chat` and `POST /v1/chat/stream` (docs/front-door-http.md).
 *
 * Run it: `PORT=3000 npx tsx examples/chat-service/index.ts`, then
 * `curl -s localhost:3000/v1/chat -H 'content-type: application/json' -d '{"message":"weather in Paris?"}'`.
 */
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { ChatRequest } from '../../src/engines/chat-request.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { createLogger } from '../../src/observability/logger.js';
import { createOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { createRuleRouter } from '../../src/orchestrator/rule-router.js';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { axonHono, type AxonHonoEnv } from '../../src/server/contrib/hono.js';
import type { RunStore } from '../../src/store/run-store.js';

/** Options of {@link startChatService}. */
export interface ChatServiceOptions {
  /** The port to listen on; 0 for any free one. Default `PORT` or 3000. */
  readonly port?: number;
  /** The address to listen on; default `127.0.0.1`. */
  readonly host?: string;
  /** Delay per streamed token, ms; default 5. */
  readonly tokenDelayMs?: number;
  /** Where the runtime keeps its runs; default in memory. */
  readonly store?: RunStore;
}

/** A running chat service. */
export interface ChatService {
  /** Its base URL, `http://host:port`. */
  readonly url: string;
  /** The runtime behind it. */
  readonly runtime: Runtime;
  /** Stops listening (open connections are cut), then closes the runtime. */
  close(): Promise<void>;
}

/** The engine the planner writes with: the name of the engine `planner` calls. */
export const PLANNER_ENGINE = 'chat-service';

const FORECASTS: Readonly<Record<string, string>> = {
  paris: 'light rain, 14 °C',
  berlin: 'cloudy, 11 °C',
  lisbon: 'sunny, 22 °C',
  tokyo: 'clear, 18 °C',
};

/** The city a message names (of those the example knows), else Berlin. */
export function cityOf(message: string): string {
  const lower = message.toLowerCase();
  const known = Object.keys(FORECASTS).find((c) => lower.includes(c)) ?? 'berlin';
  return known.charAt(0).toUpperCase() + known.slice(1);
}

/** The weather agent's answer for `message`: deterministic, no engine. */
export function forecastFor(message: string): string {
  const city = cityOf(message);
  return `The weather in ${city}: ${FORECASTS[city.toLowerCase()] ?? 'unknown'}.`;
}

/** The runtime of the example: its engine and its two agents. */
export function chatServiceRuntime(
  options: Pick<ChatServiceOptions, 'tokenDelayMs' | 'store'> = {},
): Runtime {
  const engine = createScriptedEngine({
    name: PLANNER_ENGINE,
    tokenDelayMs: options.tokenDelayMs ?? 5,
    // The planner's prompt ends with the user's message; the script answers from it.
    script: (request: ChatRequest) => {
      const city = cityOf(request.messages.at(-1)?.content ?? '');
      return (
        `Here is a day in ${city}: a walk through the old town in the morning, ` +
        `lunch by the river, a museum in the afternoon, and dinner somewhere quiet.`
      );
    },
  });
  const weather = defineAgent({
    name: 'weather',
    description: 'Says the weather in a city.',
    handler: (input) => forecastFor(input.message),
  });
  const planner = defineAgent({
    name: 'planner',
    description: 'Plans a day out; its answer streams from the engine.',
    timeoutMs: 60_000,
    // A plain handler: `runtime.chat` streams the engine's tokens into the step as they come.
    handler: async (input, ctx, runtime) => {
      const answer = await runtime.chat(
        {
          engine: PLANNER_ENGINE,
          messages: [
            { role: 'system', content: 'You plan a day out, in one or two sentences.' },
            { role: 'user', content: input.message },
          ],
          params: { max_tokens: 64 },
        },
        ctx,
      );
      return answer.text;
    },
  });
  return createRuntime({
    agents: [weather, planner],
    engines: [engine],
    logger: createLogger({ level: process.env['LOG_LEVEL'] ?? 'warn' }),
    ...(options.store ? { store: options.store } : {}),
  });
}

/**
 * Starts the service: the runtime, the router (`weather`, `forecast`, `rain` go to `weather`;
 * anything else to `planner`), the orchestrator, and the Hono app listening on `port`.
 *
 * @example
 * const service = await startChatService({ port: 0 });
 * const res = await fetch(`${service.url}/v1/chat`, {
 *   method: 'POST',
 *   headers: { 'content-type': 'application/json' },
 *   body: JSON.stringify({ message: 'weather in Paris?' }),
 * });
 * await service.close();
 */
export async function startChatService(options: ChatServiceOptions = {}): Promise<ChatService> {
  const port = options.port ?? portFromEnv();
  if (!(Number.isInteger(port) && port >= 0 && port <= 65_535)) {
    throw new RangeError(`startChatService: port must be an integer 0..65535, got ${port}`);
  }
  const host = options.host ?? '127.0.0.1';
  const runtime = chatServiceRuntime(options);
  const orchestrator = createOrchestrator({
    runtime,
    router: createRuleRouter({
      rules: [{ pattern: /\b(weather|forecast|rain|sunny)\b/i, handler: 'weather' }],
      defaultHandler: 'planner',
    }),
    // Memory would need a session per caller; this example keeps each message on its own.
    memory: false,
  });
  const app = new Hono<AxonHonoEnv>();
  // A demo on loopback: every caller is `anonymous` (read and write), said by name. A real
  // service gives `keys` or its own `identify` instead.
  app.use(axonHono(runtime, { orchestrator, anonymous: 'allow' }));
  app.get('/health', (c) => c.json({ ok: true }));
  let server: ServerType;
  try {
    server = await new Promise<ServerType>((resolve, reject) => {
      const s = serve({ fetch: app.fetch, hostname: host, port }, () => {
        resolve(s);
      });
      s.once('error', reject);
    });
  } catch (err) {
    await runtime.close();
    throw err;
  }
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${bound}`,
    runtime,
    close: async () => {
      await new Promise<void>((resolve) => {
        if ('closeAllConnections' in server) server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      });
      await runtime.close();
    },
  };
}

function portFromEnv(): number {
  const given = process.env['PORT'];
  return given === undefined || given === '' ? 3000 : Number(given);
}

// Run directly (`npx tsx examples/chat-service/index.ts`): serve until SIGINT / SIGTERM.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const service = await startChatService();
  process.stdout.write(`chat service: listening on ${service.url}\n`);
  const stop = (): void => {
    void service.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
