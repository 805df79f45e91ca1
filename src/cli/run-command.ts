/** @module `axon run <example>`: run an example, stream it, print its trace tree. */
import { createRuntime } from '../runtime/runtime.js';
import { createLogger, type Logger } from '../observability/logger.js';
import { renderTraceTree } from '../observability/trace-tree.js';
import { buildTraceTree } from '../store/step-tree.js';
import { seedMetadata } from '../../examples/example.js';
import { EXAMPLE_TOOLS, EXAMPLES } from '../../examples/index.js';
import type { CliIo } from './cli-io.js';

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
  /** Aborting it cancels the run (the CLI wires Ctrl-C to it). */
  readonly signal?: AbortSignal;
}

/**
 * Runs an example; resolves the process exit code: 0 on success, 1 when the run failed or
 * the example is unknown, 2 when `AXON_LOG_LEVEL` is not a level.
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
    logger = createLogger();
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    io.stderr.write(`axon: ${err.message}\n`);
    return 2;
  }
  const example = build({
    ...(options.tokenDelayMs === undefined ? {} : { tokenDelayMs: options.tokenDelayMs }),
  });
  const runtime = createRuntime({
    agents: example.agents,
    tools: [...example.tools, ...EXAMPLE_TOOLS],
    logger,
  });
  const message = options.message ?? example.input;
  const ctx = runtime.createContext({
    ...(options.seed === undefined ? {} : { metadata: seedMetadata(options.seed) }),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const out = io.stdout;
  if (!options.json)
    out.write(`axon run ${example.name}: ${example.description}\n> ${message}\n\n`);
  const stream = runtime.stream(example.entry, message, ctx);
  let midLine = false;
  for await (const { path, event } of stream) {
    if (options.json) {
      out.write(`${JSON.stringify({ path, ...event })}\n`);
    } else if (event.type === 'token') {
      out.write(event.t);
      midLine = true;
    } else if (event.type === 'narration') {
      out.write(`${midLine ? '\n' : ''}  · ${path.join(' > ')}: ${event.text}\n`);
      midLine = false;
    }
  }
  const result = await stream.result;
  if (options.json) {
    out.write(
      `${JSON.stringify({ result: { ...result, error: result.error ? { code: result.error.code, message: result.error.message } : null } })}\n`,
    );
  } else {
    if (midLine) out.write('\n');
    const detail = result.error ? ` ${result.error.code}: ${result.error.message}` : '';
    out.write(
      `\nstatus: ${result.status}${detail} (${result.durationMs.toLocaleString('en-US')} ms, ${result.usage.totalTokens} tokens)\n`,
    );
    if (options.trace !== false) {
      const steps = await runtime.store.listSteps(result.runId);
      out.write(`\ntrace:\n${renderTraceTree(buildTraceTree(steps), { traceId: ctx.traceId })}\n`);
    }
  }
  await runtime.close();
  return result.status === 'success' ? 0 : 1;
}
