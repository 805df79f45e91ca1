/**
 * @module The worker-thread side of worker placement: the pool's task handler, a session
 * that runs steps sent on the thread's link. It rebuilds
 * the step's context from its wire form, loads the agent's handler by module and export,
 * runs it with a `runtime` whose calls go back to the host over comlink, and streams its
 * tokens and events to the host under credit-based flow control (STREAM-2003). All of it
 * travels on the thread's one link to the host (see `worker-protocol.ts`).
 */
import type { ConsolidationReport, MemoryContext } from '../../memory/memory-types.js';
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BroadcastChannel } from 'node:worker_threads';
import * as Comlink from 'comlink';
import { ExecContext } from '../../context/exec-context.js';
import type { SinkEvent, StreamSink } from '../../context/stream-sink.js';
import { StreamClosedError } from '../../errors/stream-closed-error.js';
import { InternalError } from '../../errors/internal-error.js';
import { fromErrorPayload } from '../../errors/remote-error.js';
import { toErrorPayload, type ErrorPayload } from '../../errors/to-error-payload.js';
import { createLogger } from '../../observability/logger.js';
import type { ToolResult } from '../../tools/tool-result.js';
import type { AgentHandler, AgentRuntime, AgentTarget } from '../../actors/agent-runtime.js';
import { isAgentOutcome, type AgentResult } from '../../actors/agent-result.js';
import { rpcEndpoint } from './link-endpoint.js';
import { runHandler, type HandlerSink } from '../../actors/run-handler.js';
import type {
  ControlMessage,
  HostCalls,
  HostReply,
  LinkDown,
  LinkUp,
  SessionTask,
  StreamItem,
  WireAgentResult,
  WireToolResult,
  WorkerOutcome,
  WorkerTask,
} from './worker-protocol.js';

/**
 * What a session needs of its link: a thread's `MessagePort`, or a container's line link
 * (`line-link.ts`), which speak the same messages.
 */
export interface LinkPort {
  postMessage(message: LinkUp): void;
  on(event: 'message', listener: (message: LinkDown) => void): unknown;
  on(event: 'close', listener: () => void): unknown;
}

/** Items sent in one message at most. */
const MAX_BATCH = 512;

/** Event types that may be dropped when the host is behind (STREAM-2003). */
const DROPPABLE: ReadonlySet<string> = new Set(['metrics', 'narration']);

/**
 * The step's stream on the worker side. Items go out in batches, each taking one unit of
 * credit; without credit, tokens and facts wait (the producer is held through `ready()`),
 * while metrics and narration are dropped and counted.
 */
class CreditSender implements HandlerSink {
  readonly #port: LinkPort;
  readonly #step: string;
  #credit: number;
  #pending: StreamItem[] = [];
  #scheduled = false;
  #waiters: (() => void)[] = [];
  #closed = false;
  dropped = 0;
  /** Items sent so far. */
  sent = 0;
  /** Why sending failed, if it did; the step then fails with it. */
  failure: InternalError | null = null;

  constructor(port: LinkPort, step: string, credit: number) {
    this.#port = port;
    this.#step = step;
    this.#credit = credit;
  }

  token(text: string): void {
    this.#push(text);
  }

  event(event: SinkEvent): void {
    if (DROPPABLE.has(event.type) && this.#pending.length >= this.#credit) {
      this.dropped++;
      return;
    }
    this.#push(event);
  }

  ready(): Promise<void> | null {
    if (this.#closed || this.#pending.length < this.#credit) return null;
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** The host took `n` items off its buffer. */
  grant(n: number): void {
    this.#credit += n;
    this.#flush();
  }

  /**
   * Sends everything, as credit allows; nothing is sent after. `null` when it is done at once,
   * else the promise of the rest going out as credit comes.
   */
  finish(): Promise<void> | null {
    const settling = this.settle();
    if (!settling) {
      this.close();
      return null; // the usual end: nothing left, no wait
    }
    return settling.then(() => {
      this.close();
    });
  }

  /**
   * Sends everything pending, as credit allows, without closing: `null` when all is out at
   * once, else the promise of it going out as credit comes.
   */
  settle(): Promise<void> | null {
    this.#flush();
    if (this.#closed || this.#pending.length === 0) return null;
    return (async () => {
      while (!this.#closed && this.#pending.length > 0) {
        await new Promise<void>((r) => this.#waiters.push(r));
        this.#flush();
      }
    })();
  }

  /** Stops sending (after a cancel, or at the end) and releases waiting producers. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#pending = [];
    this.#release();
  }

  #push(item: StreamItem): void {
    if (this.#closed)
      throw new StreamClosedError(
        'worker',
        typeof item === 'string' ? 'token' : item.type,
        'closed',
      );
    this.#pending.push(item);
    if (this.#pending.length >= MAX_BATCH) this.#flush();
    else if (!this.#scheduled) {
      this.#scheduled = true;
      // A macrotask, so a burst of items shares one message.
      setImmediate(() => {
        this.#scheduled = false;
        this.#flush();
      });
    }
  }

  #flush(): void {
    if (this.#closed) return;
    const n = Math.min(this.#credit, this.#pending.length);
    if (n > 0) {
      const items = n === this.#pending.length ? this.#pending : this.#pending.slice(0, n);
      this.#pending = n === this.#pending.length ? [] : this.#pending.slice(n);
      this.#credit -= n;
      const message: LinkUp = { t: 'items', step: this.#step, items };
      try {
        this.#port.postMessage(message);
      } catch (err) {
        // An item that cannot cross a thread (a function in an event): the step fails with
        // it; the thread lives on.
        this.failure ??= new InternalError(
          `a token or event of step ${this.#step} cannot cross to the host: ${describe(err)}`,
          { cause: err },
        );
        this.close();
        return;
      }
      this.sent += n;
    }
    if (this.#pending.length < this.#credit) this.#release();
  }

  #release(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }
}

/** `ctx.stream` in a worker: pushes go to the host through the sender. */
function senderSink(sender: CreditSender): StreamSink {
  let closed = false;
  return {
    get closed() {
      return closed;
    },
    push: (text) => {
      sender.token(text);
    },
    emit: (event) => {
      sender.event(event);
    },
    // The host's step escalates; it travels in order with the step's other items.
    escalate: (escalation) => {
      sender.event({ ...escalation, type: 'escalation' });
    },
    ready: () => sender.ready(),
    close: () => {
      closed = true;
    },
  };
}

const handlers = new Map<string, AgentHandler>();

/**
 * The handler named by `module` and `export` for agent `agent`: a function, an agent
 * definition's handler, or what a handler source (`handlerFor`, a workflow) gives for it.
 */
async function loadHandler(module: string, name: string, agent: string): Promise<AgentHandler> {
  const key = `${module}#${name}#${agent}`;
  const cached = handlers.get(key);
  if (cached) return cached;
  const specifier = isAbsolute(module) ? pathToFileURL(module).href : module;
  let mod: Record<string, unknown>;
  try {
    mod = (await import(specifier)) as Record<string, unknown>;
  } catch (err) {
    throw new InternalError(`worker agent: cannot load module ${module}: ${describe(err)}`, {
      cause: err,
    });
  }
  const value = mod[name] as
    { handler?: unknown; handlerFor?: (agent: string) => unknown } | undefined;
  const handler =
    typeof value === 'function'
      ? value
      : typeof value?.handlerFor === 'function'
        ? value.handlerFor(agent)
        : value?.handler;
  if (typeof handler !== 'function') {
    throw new TypeError(
      typeof value?.handlerFor === 'function'
        ? `worker agent: export "${name}" of ${module} has no handler for agent ${agent}`
        : `worker agent: export "${name}" of ${module} is neither a handler nor an agent definition with one`,
    );
  }
  handlers.set(key, handler as AgentHandler);
  return handler as AgentHandler;
}

function agentName(agent: AgentTarget): string {
  return typeof agent === 'string' ? agent : agent.name;
}

/** The value of a host call, or the typed error it threw, thrown here. */
function unwrap<T>(reply: HostReply<T>): T {
  if (reply.ok) return reply.value;
  throw fromErrorPayload(reply.error);
}

function fromWireAgentResult<T>(r: WireAgentResult): AgentResult<T> {
  return { ...r, output: r.output as T | null, error: r.error ? fromErrorPayload(r.error) : null };
}

function fromWireToolResult<T>(r: WireToolResult): ToolResult<T> {
  return { ...r, output: r.output as T | null, error: r.error ? fromErrorPayload(r.error) : null };
}

/** This thread's link to the host, with what travels on it. */
interface Link {
  readonly port: LinkPort;
  /** The host's calls: comlink's on a thread's port, `call` messages on a line link. */
  readonly host: HostCalls;
}

/** The senders of the steps running on this thread, by step id. */
const senders = new Map<string, CreditSender>();
/** The contexts of the steps running on this thread, by step id. */
const running = new Map<string, ExecContext>();
let control: BroadcastChannel | null = null;
/**
 * Steps sent to this thread and not started yet (a session runs one at a time), by id: the
 * latest copy sent (a step taken back may be sent here again).
 */
const waiting = new Map<string, { revoked: boolean }>();
/** Of those, the ones cancelled before they started, with the reason. */
const cancelledWhileWaiting = new Map<string, ErrorPayload>();

/** A cancel from the host: the step stops if it runs here, and never starts if it waits. */
function cancelStep(message: ControlMessage): void {
  senders.get(message.step)?.close();
  running.get(message.step)?.cancel(fromErrorPayload(message.reason));
  // A step still waiting in this thread's pipeline must not start.
  if (waiting.has(message.step)) cancelledWhileWaiting.set(message.step, message.reason);
}

function listenForCancels(name: string): void {
  if (control) return;
  control = new BroadcastChannel(name);
  control.unref();
  control.onmessage = (event: unknown) => {
    cancelStep((event as { data: ControlMessage }).data);
  };
}

/**
 * This thread's session: the pool task it runs for as long as it lives. It takes steps on
 * its link, runs each, and answers with the step's result on the same link (after the step's
 * items). It ends when the host closes the link.
 */
export default function runSession(session: SessionTask): Promise<void> {
  listenForCancels(session.control);
  const host = Comlink.wrap<HostCalls>(rpcEndpoint(session.link));
  return serveSteps(session.link, host).finally(() => {
    host[Comlink.releaseProxy]();
  });
}

/**
 * Serves the steps the host sends on `port`, one after another, until the link closes:
 * a thread's session, or a container's (`container-entry.ts`), whose cancels come on the
 * link itself.
 */
export function serveSteps(port: LinkPort, host: HostCalls): Promise<void> {
  const link: Link = { port, host };
  // Steps run one after another, in the order they came; the host may send the next one
  // before the current one ends, so the thread goes on without sleeping in between.
  let chain: Promise<void> = Promise.resolve();
  return new Promise<void>((resolve) => {
    port.on('message', (message: LinkDown) => {
      if (message.t === 'credit') senders.get(message.step)?.grant(message.n);
      else if (message.t === 'cancel') cancelStep(message);
      else if (message.t === 'revoke') {
        const copy = waiting.get(message.step);
        if (copy && !copy.revoked) {
          copy.revoked = true;
          port.postMessage({ t: 'revoked', step: message.step });
        }
      } else if (message.t === 'step') {
        const task = message.task;
        const copy = { revoked: false };
        waiting.set(task.stepId, copy);
        chain = chain.then(async () => {
          if (waiting.get(task.stepId) === copy) waiting.delete(task.stepId);
          const cancelled = cancelledWhileWaiting.get(task.stepId);
          cancelledWhileWaiting.delete(task.stepId);
          // Taken back by the host: another thread runs it, and sends its result.
          if (copy.revoked) return;
          const outcome: WorkerOutcome = cancelled
            ? { ok: false, error: cancelled, sent: 0, dropped: 0 }
            : await runStep(link, task);
          sendResult(port, task, outcome);
        });
      }
    });
    port.on('close', () => {
      resolve();
    });
  });
}

/**
 * Sends a step's result to the host. An output that cannot cross a thread (a function, a
 * class instance with private state) makes the result an error instead of killing the
 * thread; postMessage refuses it before anything is sent.
 */
function sendResult(port: LinkPort, task: WorkerTask, outcome: WorkerOutcome): void {
  try {
    const message: LinkUp = { t: 'result', step: task.stepId, outcome };
    port.postMessage(message);
  } catch (err) {
    const error = new InternalError(
      `the output of agent "${task.agent}" cannot cross to the host (worker outputs must be structured-cloneable): ${describe(err)}`,
    );
    const failed: LinkUp = {
      t: 'result',
      step: task.stepId,
      outcome: {
        ok: false,
        error: toErrorPayload(error),
        sent: outcome.sent,
        dropped: outcome.dropped,
      },
    };
    port.postMessage(failed);
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Runs one step. Never rejects: a failure of the handler is an error payload, so a session
 * that dies always means the thread itself died.
 */
async function runStep(link: Link, task: WorkerTask): Promise<WorkerOutcome> {
  const step = task.stepId;
  const sender = new CreditSender(link.port, step, task.credit);
  senders.set(step, sender);
  // Calls go out on the step's own context on the host, which holds its ledger and cancel.
  const runtime: AgentRuntime = {
    delegate: async (agent, input, _parentCtx, narrowing) =>
      fromWireAgentResult(
        unwrap(await link.host.delegate(step, agentName(agent), input, narrowing)),
      ),
    callTool: async (name, args) =>
      fromWireToolResult(unwrap(await link.host.callTool(step, name, args))),
    // The host makes the call and streams its tokens into the step: what this thread sent
    // before goes out first, so the step's order holds.
    // Like chat: the host stores and publishes it, after what this thread sent before.
    emitFact: async (fact) => {
      const settling = sender.settle();
      if (settling) await settling;
      return unwrap(await link.host.fact(step, fact));
    },
    // A file operation is a child step on the host, after what this thread sent before.
    fs: async (request) => {
      const settling = sender.settle();
      if (settling) await settling;
      return unwrap(await link.host.fs(step, request));
    },
    memory: {
      recall: async (query, _ctx, options = {}) =>
        unwrap(await link.host.memory(step, 'recall', { query, options })) as MemoryContext,
      store: async (event) => {
        unwrap(await link.host.memory(step, 'store', event));
      },
      consolidate: async () =>
        unwrap(await link.host.memory(step, 'consolidate', null)) as ConsolidationReport,
    },
    chat: async (call, _ctx, options = {}) => {
      const settling = sender.settle();
      if (settling) await settling;
      return unwrap(await link.host.chat(step, call, options));
    },
  };
  const ended = (): { sent: number; dropped: number } => {
    senders.delete(step);
    running.delete(step);
    return { sent: sender.sent, dropped: sender.dropped };
  };
  try {
    const ctx = ExecContext.fromWire(task.ctx, {
      logger: workerLogger(),
      stream: senderSink(sender),
    });
    running.set(step, ctx);
    const loaded =
      handlers.get(`${task.module}#${task.export}#${task.agent}`) ??
      (await loadHandler(task.module, task.export, task.agent));
    // A tool's handler takes its arguments and the context.
    const handler: AgentHandler =
      task.kind === 'tool'
        ? (input, toolCtx) =>
            (loaded as unknown as (args: unknown, c: ExecContext) => unknown)(input.args, toolCtx)
        : loaded;
    const output = await runHandler(handler, task.input, ctx, runtime, sender);
    const finishing = sender.finish();
    if (finishing) await finishing;
    if (sender.failure) throw sender.failure;
    if (isAgentOutcome(output)) {
      const { status, message, data } = output;
      return { ok: true, outcome: { status, message, data }, ...ended() };
    }
    return { ok: true, output, ...ended() };
  } catch (err) {
    sender.close();
    return { ok: false, error: toErrorPayload(err), ...ended() };
  }
}

let logger: ReturnType<typeof createLogger> | undefined;
function workerLogger(): ReturnType<typeof createLogger> {
  return (logger ??= createLogger());
}
