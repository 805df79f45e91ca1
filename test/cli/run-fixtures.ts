/**
 * @module Runs for the tests of `axon runs` and `axon trace`, made by a real runtime on a
 * real SQLite store in a scratch data dir — the file `axon serve --data-dir` writes:
 * `lead` delegates to `helper`, which calls the tool `lookup` (a tree three deep); `broken`
 * fails; `waiter` stays running until the test lets it go. The engine is the scripted one,
 * priced so that cost shows.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import { chatTokens } from '../../src/engines/chat-tokens.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { createLogger } from '../../src/observability/logger.js';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.js';
import type { RunRecord, StepRecord } from '../../src/store/records.js';
import { sqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { defineTool } from '../../src/tools/define-tool.js';
import type { CliIo } from '../../src/cli/cli-io.js';
import { runCli } from '../../src/cli/cli.js';

/** Dollars per million tokens: enough that a four-token answer costs a cent. */
const PRICES = {
  version: 'cli-test-prices',
  models: { scripted: { inputPerMTok: 1_000, outputPerMTok: 2_000 } },
};

/** The runtime's agents and tools, and the gate that holds `waiter`. */
function agents() {
  const engine = createScriptedEngine({
    tokenDelayMs: 0,
    priceTable: PRICES,
    script: () => 'one two three four',
  });
  const lookup = defineTool({
    name: 'lookup',
    description: 'Upper-cases a word.',
    input: z.object({ q: z.string() }),
    handler: ({ q }) => q.toUpperCase(),
  });
  const helper = defineAgent({
    name: 'helper',
    async *handler(input, ctx, runtime) {
      await runtime.callTool('lookup', { q: input.message }, ctx);
      const reply = yield* chatTokens(
        engine,
        { messages: [{ role: 'user', content: input.message }] },
        ctx,
      );
      return reply.text;
    },
  });
  const lead = defineAgent({
    name: 'lead',
    async *handler(input, ctx, runtime) {
      const help = await runtime.delegate('helper', 'help me', ctx);
      if (help.status !== 'success') throw new Error('helper failed');
      const reply = yield* chatTokens(
        engine,
        { messages: [{ role: 'user', content: `lead ${input.message}` }] },
        ctx,
      );
      return reply.text;
    },
  });
  const broken = defineAgent({
    name: 'broken',
    handler: () => {
      throw new Error('the disk is on fire');
    },
  });
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const waiter = defineAgent({
    name: 'waiter',
    handler: async () => {
      await gate;
      return 'done';
    },
  });
  return { agents: [lead, helper, broken, waiter], tools: [lookup], release };
}

/** A data dir with a runtime writing to it. */
export interface DataDir {
  /** The data dir (`--data-dir`). */
  readonly dir: string;
  readonly runtime: Runtime;
  /** Lets the `waiter` agent's invocation end. */
  release(): void;
  /** The stored run `runId`. */
  run(runId: string): Promise<RunRecord>;
  /** The stored steps of `runId`, in creation order. */
  steps(runId: string): Promise<StepRecord[]>;
  /** Closes the runtime (and its store) and removes the folder. */
  dispose(): Promise<void>;
}

/** A scratch data dir with a runtime on `<dir>/axon.db`, as `axon serve` keeps it. */
export function createDataDir(): DataDir {
  const dir = mkdtempSync(join(tmpdir(), `axon-cli-runs-${randomUUID().slice(0, 8)}-`));
  const made = agents();
  const runtime = createRuntime({
    store: sqliteStore(join(dir, 'axon.db')),
    agents: made.agents,
    tools: made.tools,
    logger: createLogger({ level: 'silent' }),
  });
  let disposed = false;
  return {
    dir,
    runtime,
    release: made.release,
    async run(runId) {
      const run = await runtime.store.getRun(runId);
      if (!run) throw new Error(`no run ${runId}`);
      return run;
    },
    steps: (runId) => runtime.store.listSteps(runId),
    async dispose() {
      if (disposed) return;
      disposed = true;
      made.release();
      await runtime.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Invokes `agent` as a run of its own; resolves the run's id once it is stored. */
export async function invokeRun(data: DataDir, agent: string, message: string): Promise<string> {
  return (await data.runtime.invoke(agent, message)).runId;
}

/** What a command printed and its exit code. */
export interface CliExit {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options of {@link axon}. */
export interface AxonOptions {
  /** The environment the CLI sees (default: none at all). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Whether stdout is a terminal (default not, as a pipe). */
  readonly tty?: boolean;
  /** Whether stderr is a terminal (default not). */
  readonly stderrTty?: boolean;
  /** Aborted as Ctrl-C would. */
  readonly signal?: AbortSignal;
}

/** Runs `axon argv` in-process with captured output. */
export async function axon(argv: readonly string[], options: AxonOptions = {}): Promise<CliExit> {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = {
    stdout: { write: (t: string) => out.push(t), isTTY: options.tty ?? false, columns: 120 },
    stderr: { write: (t: string) => err.push(t), isTTY: options.stderrTty ?? false },
    env: options.env ?? {},
  };
  const code = await runCli(argv, io, '0.0.0-test', options.signal);
  return { code, stdout: out.join(''), stderr: err.join('') };
}

/** The rows of a printed table, each split on its column gaps (two spaces or more). */
export function tableRows(stdout: string): string[][] {
  return stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => line.trim().split(/ {2,}/));
}
