/**
 * @module CLI agent adapters (seed 001, streaming): a command-line agent run per invocation
 * as a child process, its prompt on stdin or as the last argument, its stdout streamed as
 * token events line by line, and seed 001's error taxonomy for every failure.
 */
import type { ExecContext } from '../context/exec-context.js';
import type { ProcessBehaviour, ProcessInput, ProcessResult } from './process-behaviour.js';
import { spawnStreaming } from './spawn-process.js';
import { threadPrompt, type AgentFn } from './thread-context.js';

/** Options of {@link createCliAdapter}. */
export interface CliAdapterOptions {
  /** The name errors carry (`cursor-agent: exitCode=7 …`); default the command. */
  readonly name?: string;
  /** The executable, looked up on `PATH`. */
  readonly command: string;
  /** Arguments before the prompt. */
  readonly args?: readonly string[];
  /** Where the prompt goes: on stdin (default), or as the last argument. */
  readonly input?: 'stdin' | 'arg';
  /** Default 300 000 ms (seed 001). On timeout the whole process tree is killed. */
  readonly timeoutMs?: number;
  /** Merged over this process's environment. */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** Turns the whole stdout into the output; default the text, trimmed. */
  readonly parse?: (stdout: string) => unknown;
  /** stdout kept for `parse` at most; default 1 MB (the stream of tokens is not cut). */
  readonly maxOutputBytes?: number;
}

/** A CLI agent: a process behaviour, and seed 001's single-shot `AgentFn` over it. */
export interface CliAdapter extends ProcessBehaviour {
  /** Seed 001's protocol: the thread and system prompt in, the whole stdout out. */
  readonly agentFn: AgentFn;
  /** Runs one prompt to its end; resolves the parsed output. */
  complete(prompt: string, options?: { readonly signal?: AbortSignal }): Promise<unknown>;
}

const DEFAULT_TIMEOUT_MS = 300_000;
const DEFAULT_MAX_OUTPUT = 1024 * 1024;

/**
 * Makes a CLI adapter.
 *
 * @example
 * const claude = createCliAdapter({ command: 'claude', args: ['-p'], input: 'arg', timeoutMs: 120_000 });
 * const agent = defineAgent({ name: 'claude', placement: 'process', behaviour: claude });
 */
export function createCliAdapter(options: CliAdapterOptions): CliAdapter {
  if (typeof options.command !== 'string' || options.command === '') {
    throw new TypeError('createCliAdapter: command must be a non-empty string');
  }
  const inputMode = options.input ?? 'stdin';
  if (!['stdin', 'arg'].includes(inputMode)) {
    throw new TypeError(
      `createCliAdapter: input must be "stdin" or "arg", got ${JSON.stringify(inputMode)}`,
    );
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new RangeError(`createCliAdapter: timeoutMs must be a positive number, got ${timeoutMs}`);
  }
  const maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  if (!(Number.isInteger(maxOutputBytes) && maxOutputBytes > 0)) {
    throw new RangeError(
      `createCliAdapter: maxOutputBytes must be a whole number > 0, got ${maxOutputBytes}`,
    );
  }
  const name = options.name ?? options.command;
  const parse = options.parse ?? ((stdout: string) => stdout.trim());

  async function* lines(
    prompt: string,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<string, unknown, undefined> {
    const run = spawnStreaming({
      name,
      command: options.command,
      args: inputMode === 'arg' ? [...(options.args ?? []), prompt] : [...(options.args ?? [])],
      stdin: inputMode === 'stdin' ? prompt : null,
      ...(options.env ? { env: options.env } : {}),
      ...(options.cwd ? { cwd: options.cwd } : {}),
      timeoutMs,
      ...(signal ? { signal } : {}),
      maxStdoutBytes: maxOutputBytes,
    });
    // Whole lines become tokens (each with its newline); a last line without one at the end.
    let pending = '';
    for (;;) {
      const r = await run.next();
      if (r.done) {
        if (pending !== '') yield pending;
        return parse(r.value.stdout);
      }
      pending += r.value;
      let nl = pending.indexOf('\n');
      while (nl !== -1) {
        yield pending.slice(0, nl + 1);
        pending = pending.slice(nl + 1);
        nl = pending.indexOf('\n');
      }
    }
  }

  async function complete(
    prompt: string,
    call: { readonly signal?: AbortSignal } = {},
  ): Promise<unknown> {
    const stream = lines(prompt, call.signal);
    for (;;) {
      const r = await stream.next();
      if (r.done) return r.value;
    }
  }

  return {
    name,
    async *run(
      input: ProcessInput,
      ctx: ExecContext,
    ): AsyncGenerator<string, ProcessResult, undefined> {
      const output = yield* lines(input.message, ctx.signal);
      return { status: 'success', output };
    },
    complete,
    agentFn: async (thread, systemPrompt, call = {}) => {
      const out = await complete(threadPrompt(thread, systemPrompt), call);
      return typeof out === 'string' ? out : JSON.stringify(out);
    },
  };
}
