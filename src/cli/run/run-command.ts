/**
 * @module `axon run <example>`: send an example's message through the front door (policy,
 * memory, router, the example's agents, responder), stream it, print its trace tree.
 */
import { randomUUID } from 'node:crypto';
import { join, relative, resolve } from 'node:path';
import { createOrchestrator } from '../../orchestrator/orchestrator.js';
import { createEmbeddingRouter } from '../../orchestrator/embedding-router.js';
import { createMemoryRegistry } from '../../orchestrator/memory-registry.js';
import { registryHandlers } from '../../orchestrator/registry-handlers.js';
import type { Router } from '../../orchestrator/route-result.js';
import { createRuleRouter } from '../../orchestrator/rule-router.js';
import type { Registry } from '../../orchestrator/registry.js';
import { createRuntime } from '../../runtime/runtime.js';
import { loadPriceTable, type PriceTable } from '../../engines/price-table.js';
import { toAxonError } from '../../errors/to-error-payload.js';
import type { Logger } from '../../observability/logger.js';
import { createCliLogger } from '../cli-logger.js';
import { renderTraceTree } from '../../observability/trace-tree.js';
import { DEFAULT_SEED, seedMetadata, type Example } from '../../../examples/example.js';
import { EXAMPLE_TOOLS, EXAMPLES } from '../../../examples/index.js';
import { STORE_FILE, type RunRouter } from '../cli-defaults.js';
import { sqliteStore } from '../../store/sqlite/sqlite-store.js';
import type { CliIo } from '../cli-io.js';
import { frontDoorTree } from './front-door-trace.js';

/** Options of {@link runCommand}. */
export interface RunCommandOptions {
  readonly example: string;
  readonly message?: string | undefined;
  /** The run's seed; the example's agents and tools read it from the context (default 42). */
  readonly seed?: number | undefined;
  readonly tokenDelayMs?: number | undefined;
  /** Print every event as a JSON line instead of text. */
  readonly json?: boolean;
  /** Print the trace tree after the run; default true. */
  readonly trace?: boolean;
  /** How the message is routed; default `rules`. */
  readonly router?: RunRouter | undefined;
  /**
   * The data dir whose SQLite store (`axon.db`) the run is written to, where `axon runs list`,
   * `axon trace` and the UI of an `axon serve` on it find it; relative to the working dir.
   * Without it the run is kept in memory only.
   */
  readonly dataDir?: string | undefined;
  /** Aborting it cancels the run (the CLI wires Ctrl-C to it). */
  readonly signal?: AbortSignal;
}

/**
 * Runs an example; resolves the process exit code: 0 on success, 1 when the run failed or
 * the example is unknown, 2 when `AXON_LOG_LEVEL` is not a level or `AXON_PRICE_TABLE` not a
 * price table.
 */
export async function runCommand(options: RunCommandOptions, io: CliIo): Promise<number> {
  const build = EXAMPLES[options.example];
  if (!build) {
    io.stderr.write(
      `axon: unknown example "${options.example}". Examples: ${Object.keys(EXAMPLES).join(', ')}\n`,
    );
    return 1;
  }
  // Made here rather than by createRuntime so that a bad AXON_LOG_LEVEL is a usage error
  // of one line, not a stack trace from inside the runtime.
  let logger: Logger;
  try {
    logger = createCliLogger(io.stderr, process.env);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    io.stderr.write(`axon: ${err.message}\n`);
    return 2;
  }
  // AXON_PRICE_TABLE prices the runtime's engines and the example's own alike; read here,
  // once, so that a file that is not a price table is a line too.
  let priceTable: PriceTable | undefined;
  const pricesFile = process.env['AXON_PRICE_TABLE'];
  try {
    priceTable = pricesFile ? loadPriceTable(pricesFile) : undefined;
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    io.stderr.write(`axon: AXON_PRICE_TABLE: ${err.message}\n`);
    return 2;
  }
  const example = build({
    ...(options.tokenDelayMs === undefined ? {} : { tokenDelayMs: options.tokenDelayMs }),
    ...(priceTable === undefined ? {} : { priceTable }),
  });
  const dir = options.dataDir === undefined ? undefined : resolve(options.dataDir);
  const runtime = createRuntime({
    agents: example.agents,
    tools: [...example.tools, ...EXAMPLE_TOOLS],
    logger,
    ...(priceTable === undefined ? {} : { priceTable }),
    ...(dir === undefined ? {} : { store: sqliteStore(join(dir, STORE_FILE)) }),
  });
  const message = options.message ?? example.input;
  const registry = createMemoryRegistry();
  const door = createOrchestrator({
    runtime,
    router: routerFor(example, options.router ?? 'rules', registry),
    registry,
  });
  // One user and one conversation per run of the command: memory has somewhere to go.
  const ctx = runtime.createContext({
    userId: 'cli',
    sessionId: randomUUID(),
    // Named even when it is the default, so that the run records the seed it ran with.
    metadata: seedMetadata(options.seed ?? DEFAULT_SEED),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const out = io.stdout;
  if (!options.json)
    out.write(`axon run ${example.name}: ${example.description}\n> ${message}\n\n`);
  // Set by the event observer below: whether the last thing printed was a token.
  const printed = { midLine: false };
  const handled = await door.handle(message, {
    ctx,
    onEvent: ({ path, event }) => {
      if (options.json) {
        out.write(`${JSON.stringify({ path, ...event })}\n`);
      } else if (event.type === 'token') {
        out.write(event.t);
        printed.midLine = true;
      } else if (event.type === 'narration') {
        out.write(`${printed.midLine ? '\n' : ''}  · ${path.join(' > ')}: ${event.text}\n`);
        printed.midLine = false;
      }
    },
  });
  const result = handled.result;
  const error = result?.error ?? (handled.error === null ? null : toAxonError(handled.error));
  const status = result?.status ?? 'error';
  const route = handled.route;
  if (options.json) {
    out.write(
      `${JSON.stringify({
        route: route && { intent: route.intent, confidence: route.confidence },
        result: {
          ...result,
          status,
          error: error ? { code: error.code, message: error.message } : null,
        },
      })}\n`,
    );
  } else {
    // A handler that streamed nothing (or was never reached) still has an answer.
    if (!printed.midLine && handled.response.text !== '') out.write(handled.response.text);
    out.write('\n');
    const detail = error ? ` ${error.code}: ${error.message}` : '';
    const ms = (result?.durationMs ?? 0).toLocaleString('en-US');
    out.write(
      `\nstatus: ${status}${detail} (${ms} ms, ${result?.usage.totalTokens ?? 0} tokens)\n`,
    );
    if (dir !== undefined && result?.runId) {
      const rel = relative(process.cwd(), dir);
      const shown = rel === '' ? '.' : rel.startsWith('..') ? dir : rel;
      const at = shown === '.axon' ? '' : ` --data-dir ${shown}`;
      out.write(`kept in ${shown}: axon trace ${result.runId}${at}\n`);
    }
    if (options.trace !== false) {
      const steps = result?.runId ? await runtime.store.listSteps(result.runId) : [];
      out.write(
        `\ntrace:\n${renderTraceTree([frontDoorTree(handled, steps)], { traceId: ctx.traceId })}\n`,
      );
    }
  }
  await runtime.close();
  return status === 'success' ? 0 : 1;
}

/** The router `axon run` uses for `example`. */
function routerFor(example: Example, kind: RunRouter, registry: Registry): Router {
  if (kind === 'embedding') {
    // The embedded embedder hashes words and word pieces: a short message shares few with a
    // description, so the bar is lower than the router's default 0.3.
    return createEmbeddingRouter({ handlers: registryHandlers(registry), threshold: 0.1 });
  }
  return createRuleRouter({ rules: example.routes, defaultHandler: example.entry });
}
