/**
 * @module Worker placement, the host side: runs a worker agent's step on the pool, feeds the
 * tokens and events its thread sends into the step actor (credit goes back as they are
 * logged), serves the thread's `delegate` and tool calls on the step's own context, and
 * cancels cooperatively first, then by terminating the thread.
 */
import { EventEmitter } from 'node:events';
import type { ContextNarrowing, ExecContext } from '../../context/exec-context.js';
import type { SinkEscalation } from '../../context/stream-sink.js';
import { fromErrorPayload } from '../../errors/remote-error.js';
import { toErrorPayload } from '../../errors/to-error-payload.js';
import { CancelledError } from '../../errors/cancelled-error.js';
import { PoolUnavailableError } from '../../errors/pool-unavailable-error.js';
import { QueueFullError } from '../../errors/queue-full-error.js';
import { WorkerResetError } from '../../errors/worker-reset-error.js';
import type { ChatResult } from '../../engines/chat-tokens.js';
import type { FsResult } from '../../policy/fs-broker.js';
import type { FactRecord } from '../../store/records.js';
import type { ToolResult } from '../../tools/tool-result.js';
import type { ChatCall, ChatCallOptions } from '../../engines/chat-call.js';
import type { AgentRuntime, WorkerAgentDefinition } from '../../actors/agent-runtime.js';
import { agentOutcome, type AgentInput, type AgentResult } from '../../actors/agent-result.js';
import type { StepActor } from '../../actors/step-actor.js';
import { neverStarted, type StepEndpoint, type WorkerPool } from './worker-pool.js';
import type {
  HostReply,
  MemoryOp,
  StreamItem,
  WireAgentResult,
  WireToolResult,
  WorkerOutcome,
} from './worker-protocol.js';
import type { MemoryEvent, RecallOptions } from '../../memory/memory-types.js';

/** Items a worker may send before the host has logged them (the step's buffer bound). */
export const WORKER_STREAM_CREDIT = 256;

function toWireAgentResult(r: AgentResult): WireAgentResult {
  return { ...r, error: r.error ? toErrorPayload(r.error) : null };
}

function toWireToolResult(r: ToolResult): WireToolResult {
  return { ...r, error: r.error ? toErrorPayload(r.error) : null };
}

/** What killed a thread, as piscina reports it (an Error, or an error-like event). */
function describeDeath(err: unknown): string {
  if (err instanceof Error) return err.message;
  const message = (err as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : JSON.stringify(err);
}

/** An `escalation` on `step` if it is still open (a cancelled step takes no more events). */
function escalate(
  step: StepActor,
  escalation: { readonly reason: string; readonly target: string },
): void {
  if (!step.isFinal) step.escalate(escalation);
}

async function reply<T>(call: () => Promise<T>): Promise<HostReply<T>> {
  try {
    return { ok: true, value: await call() };
  } catch (err) {
    return { ok: false, error: toErrorPayload(err) };
  }
}

/** The host's side of one worker (or container) step: where its items and calls land. */
export class HostSide implements StepEndpoint {
  readonly #step: StepActor;
  readonly #ctx: ExecContext;
  readonly #runtime: AgentRuntime;

  constructor(step: StepActor, ctx: ExecContext, runtime: AgentRuntime) {
    this.#step = step;
    this.#ctx = ctx;
    this.#runtime = runtime;
  }

  onItems(items: readonly StreamItem[]): Promise<void> {
    const step = this.#step;
    for (const item of items) {
      // After a cancel or timeout the step refuses everything (STREAM-2001): drop it.
      if (!step.isOpen) break;
      if (typeof item === 'string') step.tokens([item]);
      else if (item.type === 'escalation') step.sink.escalate(item as unknown as SinkEscalation);
      else step.emit(item);
    }
    // Credit goes back once the items are in the log, so the host holds at most
    // WORKER_STREAM_CREDIT of them.
    return step.drain().catch(() => undefined);
  }

  delegate(
    name: string,
    message: string | AgentInput,
    narrowing: ContextNarrowing | undefined,
  ): Promise<HostReply<WireAgentResult>> {
    return reply(async () =>
      toWireAgentResult(await this.#runtime.delegate(name, message, this.#ctx, narrowing)),
    );
  }

  callTool(name: string, args: unknown): Promise<HostReply<WireToolResult>> {
    return reply(async () => toWireToolResult(await this.#runtime.callTool(name, args, this.#ctx)));
  }

  chat(call: ChatCall, options: ChatCallOptions): Promise<HostReply<ChatResult>> {
    return reply(() => this.#runtime.chat(call, this.#ctx, options));
  }

  fact(fact: Parameters<AgentRuntime['emitFact']>[0]): Promise<HostReply<FactRecord>> {
    return reply(() => this.#runtime.emitFact(fact, this.#ctx));
  }

  fs(request: Parameters<AgentRuntime['fs']>[0]): Promise<HostReply<FsResult>> {
    return reply(() => this.#runtime.fs(request, this.#ctx));
  }

  memory(op: MemoryOp, arg: unknown): Promise<HostReply<unknown>> {
    const memory = this.#runtime.memory;
    return reply<unknown>(() => {
      switch (op) {
        case 'recall': {
          const { query, options } = arg as { query: string; options: RecallOptions };
          return memory.recall(query, this.#ctx, options);
        }
        case 'store':
          return memory.store(arg as MemoryEvent, this.#ctx);
        case 'consolidate':
          return memory.consolidate(this.#ctx);
      }
    });
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
  const stepId = step.stepId;
  const endpoint = new HostSide(step, ctx, runtime);
  // The pool's supervisor: wait out a restart backoff; refuse while the pool is degraded.
  const admission = pool.supervisor.admit();
  if (!(admission === true || (admission !== false && (await admission)))) {
    const reason = `pool degraded: ${pool.supervisor.restarts} thread restarts within the restart window`;
    escalate(step, { reason, target: pool.target });
    throw new PoolUnavailableError(`${reason}; agent "${agent.name}" was not run`, {
      details: { pool: pool.target, restarts: pool.supervisor.restarts },
    });
  }
  // Emitting 'abort' terminates the task's thread (piscina); see WorkerPool.runStep.
  const abort = new EventEmitter();
  let grace: NodeJS.Timeout | undefined;
  const offCancel = ctx.onCancel((reason) => {
    pool.cancel(stepId, toErrorPayload(reason));
    grace = setTimeout(() => {
      abort.emit('abort');
    }, pool.cancelGraceMs);
    grace.unref();
  });
  const task = {
    agent: agent.name,
    module: agent.module,
    export: agent.export,
    input,
    ctx: ctx.toWire(),
    stepId,
    credit: WORKER_STREAM_CREDIT,
  };
  try {
    let outcome;
    try {
      outcome = await pool.runStep(task, endpoint, abort);
    } catch (err) {
      if (err instanceof QueueFullError) throw err;
      if (pool.closed) {
        throw new CancelledError(`the runtime closed while agent "${agent.name}" ran`, {
          cause: err,
        });
      }
      // Cancelled while it waited for a thread: the step has ended already; nothing died.
      if (neverStarted(err)) throw new CancelledError(`agent "${agent.name}" was cancelled`);
      // The thread died (or was terminated after a cancel) and piscina replaced it.
      const verdict = pool.supervisor.restarted();
      if (verdict.kind === 'degraded') {
        escalate(step, {
          reason: `restart intensity exceeded: ${verdict.restarts} thread restarts within ${verdict.withinMs} ms; pool degraded`,
          target: pool.target,
        });
      }
      throw new WorkerResetError(
        `the worker thread running agent "${agent.name}" died: ${describeDeath(err)}`,
        { cause: err, details: { agent: agent.name } },
      );
    }
    pool.supervisor.healthy();
    if (outcome.dropped > 0) {
      // STREAM-2003: metrics and narration the thread let go for want of credit, counted.
      ctx.span?.setAttribute('axon.stream.dropped', outcome.dropped);
      ctx.logger.warn(
        { dropped: outcome.dropped, agent: agent.name },
        'worker step dropped metrics/narration events: its host was behind',
      );
    }
    return outcomeValue(outcome);
  } finally {
    offCancel();
    clearTimeout(grace);
  }
}

/** A worker or container step's outcome as the handler's: its output, special outcome or error. */
export function outcomeValue(outcome: WorkerOutcome): unknown {
  if (!outcome.ok) throw fromErrorPayload(outcome.error);
  if ('outcome' in outcome) {
    const { status, message, data } = outcome.outcome;
    return agentOutcome(status, message, data ?? undefined);
  }
  return outcome.output;
}
