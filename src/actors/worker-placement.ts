/**
 * @module Worker placement, the host side: runs a worker agent's step on the pool, feeds the
 * tokens and events its thread sends into the step actor (granting credit back as they are
 * logged), serves the thread's `delegate` and tool calls on the step's own context, and
 * cancels cooperatively first, then by terminating the thread.
 */
import { MessageChannel } from 'node:worker_threads';
import * as Comlink from 'comlink';
import type { ContextNarrowing, ExecContext } from '../context/exec-context.js';
import { fromErrorPayload } from '../errors/remote-error.js';
import { toErrorPayload } from '../errors/to-error-payload.js';
import { WorkerResetError } from '../errors/worker-reset-error.js';
import type { ToolResult } from '../tools/tool-result.js';
import type { AgentRuntime, WorkerAgentDefinition } from './agent-runtime.js';
import { agentOutcome, type AgentInput, type AgentResult } from './agent-result.js';
import type { StepActor } from './step-actor.js';
import type { WorkerPool } from './worker-pool.js';
import type {
  HostCalls,
  HostMessage,
  HostReply,
  WireAgentResult,
  WireToolResult,
  WorkerMessage,
  WorkerTask,
} from './worker-protocol.js';

/** Items a worker may send before the host has logged them (the step's buffer bound). */
export const WORKER_STREAM_CREDIT = 256;

function toWireAgentResult(r: AgentResult): WireAgentResult {
  return { ...r, error: r.error ? toErrorPayload(r.error) : null };
}

function toWireToolResult(r: ToolResult): WireToolResult {
  return { ...r, error: r.error ? toErrorPayload(r.error) : null };
}

async function reply<T>(call: () => Promise<T>): Promise<HostReply<T>> {
  try {
    return { ok: true, value: await call() };
  } catch (err) {
    return { ok: false, error: toErrorPayload(err) };
  }
}

/**
 * Runs `agent`'s step on `pool`. Resolves the handler's output (or its special outcome);
 * rejects with the handler's error, or with {@link WorkerResetError} when the thread died.
 */
export async function executeInWorker(
  agent: WorkerAgentDefinition,
  input: AgentInput,
  ctx: ExecContext,
  step: StepActor,
  runtime: AgentRuntime,
  pool: WorkerPool,
): Promise<unknown> {
  const events = new MessageChannel();
  const calls = new MessageChannel();
  const hostCalls: HostCalls = {
    delegate: (name: string, message: string | AgentInput, narrowing?: ContextNarrowing) =>
      reply(async () => toWireAgentResult(await runtime.delegate(name, message, ctx, narrowing))),
    callTool: (name: string, args: unknown) =>
      reply(async () => toWireToolResult(await runtime.callTool(name, args, ctx))),
  };
  Comlink.expose(hostCalls, calls.port1);

  const post = (message: HostMessage): void => {
    events.port1.postMessage(message);
  };
  // Resolves when the thread has sent its last item.
  const streamDone = new Promise<void>((resolve) => {
    events.port1.on('message', (message: WorkerMessage) => {
      if (message.t === 'done') {
        resolve();
        return;
      }
      for (const item of message.items) {
        // After a cancel or timeout the step refuses everything (STREAM-2001): drop it.
        if (!step.isOpen) break;
        if (typeof item === 'string') step.tokens([item]);
        else step.emit(item);
      }
      // Credit comes back once the items are in the log, so the host holds at most
      // WORKER_STREAM_CREDIT of them.
      step.drain().then(
        () => {
          post({ t: 'credit', n: message.items.length });
        },
        () => undefined,
      );
    });
  });

  const abort = new AbortController();
  let grace: NodeJS.Timeout | undefined;
  const offCancel = ctx.onCancel((reason) => {
    post({ t: 'cancel', reason: toErrorPayload(reason) });
    grace = setTimeout(() => {
      abort.abort();
    }, pool.cancelGraceMs);
    grace.unref();
  });
  const task: WorkerTask = {
    agent: agent.name,
    module: agent.module,
    export: agent.export,
    input,
    ctx: ctx.toWire(),
    events: events.port2,
    calls: calls.port2,
    credit: WORKER_STREAM_CREDIT,
  };
  try {
    let outcome;
    try {
      outcome = await pool.run(task, abort.signal);
    } catch (err) {
      throw new WorkerResetError(
        `the worker thread running agent "${agent.name}" died: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err, details: { agent: agent.name } },
      );
    }
    if (!outcome.ok) throw fromErrorPayload(outcome.error);
    // The result and the stream travel on different ports: wait for the stream's end.
    await streamDone;
    if ('outcome' in outcome) {
      const { status, message, data } = outcome.outcome;
      return agentOutcome(status, message, data ?? undefined);
    }
    return outcome.output;
  } finally {
    offCancel();
    clearTimeout(grace);
    events.port1.close();
    calls.port1.close();
  }
}
