/**
 * @module Roles (seed 001): an adapter (the capability) with a system prompt and an output
 * schema (the scenario). A role runs its adapter on a thread and extracts typed data from
 * the answer.
 */
import { z } from 'zod';
import type { ExecContext } from '../context/exec-context.js';
import { extract, mergeExtractConfig, type ExtractConfig } from './extract.js';
import type { ProcessBehaviour } from './process-behaviour.js';
import { threadPrompt, type AgentFn, type ThreadContext } from './thread-context.js';

/** What a role's run produced: the raw answer and the data extracted from it. */
export interface RoleOutput<T> {
  readonly raw: string;
  readonly meta: T;
}

/** A role. */
export interface Role<T> {
  readonly prompt: string;
  readonly schema: z.ZodType<T>;
  /** The extract settings in force: the global ones with the role's over them. */
  readonly extractConfig: ExtractConfig;
  /** Runs the adapter on `thread`, then extracts (with one corrected retry, if configured). */
  run(
    thread: ThreadContext,
    options?: {
      /** Cancels the adapter's call; default the context's signal. */
      readonly signal?: AbortSignal;
      /**
       * The context whose budget the correcting engine call is charged to; with an adapter
       * that streams (a CLI adapter), its output streams into this context's step too.
       */
      readonly ctx?: ExecContext;
    },
  ): Promise<RoleOutput<T>>;
}

/**
 * Makes a role: `adapter` (an `AgentFn`, or an adapter that has one) prompted with `prompt`,
 * its answers read with `schema`. `extractConfig` overrides `globalConfig` field by field.
 *
 * @example
 * const coder = createRole(cursorAdapter, 'You write code.', z.object({ files: z.array(z.string()) }), { engine });
 * const { meta } = await coder.run({ threadId: 't1', start: 'Add a README', steps: [] });
 */
export function createRole<T>(
  adapter: AgentFn | { readonly agentFn: AgentFn },
  prompt: string,
  schema: z.ZodType<T>,
  extractConfig: ExtractConfig = {},
  globalConfig: ExtractConfig = {},
): Role<T> {
  const agentFn = typeof adapter === 'function' ? adapter : adapter.agentFn;
  // An adapter that streams (a CLI adapter) streams into the context's step when given one.
  const streaming =
    typeof adapter === 'function' ? null : ((adapter as Partial<ProcessBehaviour>).run ?? null);
  if (typeof agentFn !== 'function') {
    throw new TypeError('createRole: adapter must be an AgentFn or have one (agentFn)');
  }
  const config = mergeExtractConfig(globalConfig, extractConfig);
  return {
    prompt,
    schema,
    extractConfig: config,
    async run(thread, options = {}) {
      const raw =
        streaming && options.ctx
          ? await streamed(streaming.bind(adapter), threadPrompt(thread, prompt), options.ctx)
          : await agentFn(thread, prompt, signalOf(options));
      const meta = await extract(raw, schema, {
        ...config,
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.ctx ? { ctx: options.ctx } : {}),
      });
      return { raw, meta };
    },
  };
}

/** The signal a role's adapter is cancelled by: the one given, else its context's (made only now). */
function signalOf(options: { readonly signal?: AbortSignal; readonly ctx?: ExecContext }): {
  signal?: AbortSignal;
} {
  const signal = options.signal ?? options.ctx?.signal;
  return signal ? { signal } : {};
}

/** Runs a streaming adapter on `prompt`, its tokens pushed into `ctx`'s step; its whole text. */
async function streamed(
  run: ProcessBehaviour['run'],
  prompt: string,
  ctx: ExecContext,
): Promise<string> {
  const tokens = run({ message: prompt }, ctx);
  for (;;) {
    const r = await tokens.next();
    if (r.done) {
      const result = r.value;
      if (result.status !== 'success') {
        throw new Error(`the adapter answered ${result.status}: ${result.message}`);
      }
      return typeof result.output === 'string' ? result.output : JSON.stringify(result.output);
    }
    ctx.stream.push(r.value);
    const wait = ctx.stream.ready();
    if (wait) await wait;
  }
}

/**
 * A role whose output is its answer's text, as is (no schema, no extract): a command-line
 * tool whose output is for the next role to read, say. Streams as {@link createRole} does.
 */
export function textRole(
  adapter: AgentFn | { readonly agentFn: AgentFn },
  prompt: string,
): Role<string> {
  const agentFn = typeof adapter === 'function' ? adapter : adapter.agentFn;
  if (typeof agentFn !== 'function') {
    throw new TypeError('textRole: adapter must be an AgentFn or have one (agentFn)');
  }
  const streaming =
    typeof adapter === 'function' ? null : ((adapter as Partial<ProcessBehaviour>).run ?? null);
  return {
    prompt,
    schema: z.string(),
    extractConfig: {},
    async run(thread, options = {}) {
      const raw =
        streaming && options.ctx
          ? await streamed(streaming.bind(adapter), threadPrompt(thread, prompt), options.ctx)
          : await agentFn(thread, prompt, signalOf(options));
      return { raw, meta: raw };
    },
  };
}
