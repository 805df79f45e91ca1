/**
 * @module What crosses between the host and its worker threads. Each thread runs one
 * long-lived pool task, its **session**, and has one persistent **link** to the host (a
 * `MessagePort` handed over with the session): steps go out on it, and their tokens, events,
 * credit, host calls and results come back on it, tagged with the step id. A step costs no
 * pool task and no port of its own. Cancels go to all threads on the pool's control
 * `BroadcastChannel` (they are rare). Everything here is structured-cloneable.
 */
import type { MessagePort } from 'node:worker_threads';
import type { ContextNarrowing } from '../../context/exec-context.js';
import type { SinkEvent } from '../../context/stream-sink.js';
import type { WireContext } from '../../context/wire-context.js';
import type { ErrorPayload } from '../../errors/to-error-payload.js';
import type { ChatResult } from '../../engines/chat-tokens.js';
import type { FsResult } from '../../policy/fs-broker.js';
import type { FactRecord } from '../../store/records.js';
import type { ToolStatus } from '../../tools/tool-result.js';
import type { AgentRuntime } from '../../actors/agent-runtime.js';
import type { ChatCall, ChatCallOptions } from '../../engines/chat-call.js';
import type { AgentInput, AgentOutcome, AgentStatus } from '../../actors/agent-result.js';

/** One step's work, sent to a thread's session on its link. */
export interface WorkerTask {
  /** The agent's name: for errors and logs, and the handler a handler source gives. */
  readonly agent: string;
  /**
   * `tool`: the export is a tool's handler (or a tool definition with one), called with
   * `input.args` and the context; default `agent`.
   */
  readonly kind?: 'agent' | 'tool';
  readonly module: string;
  readonly export: string;
  readonly input: AgentInput;
  readonly ctx: WireContext;
  readonly stepId: string;
  /** Items the host accepts before the worker must wait for more credit. */
  readonly credit: number;
}

/**
 * A thread's session: the one long-running pool task a thread runs. It takes steps on its
 * link (transferred with it) until the host closes the link.
 */
export interface SessionTask {
  readonly link: MessagePort;
  /** The pool's control channel name (cancels). */
  readonly control: string;
}

/** An item of the step's stream, as the worker sends it. */
export type StreamItem = string | SinkEvent;

/** Worker → host on a link. */
export type LinkUp =
  /** A step's items in order; each took one unit of its credit. */
  | { readonly t: 'items'; readonly step: string; readonly items: readonly StreamItem[] }
  /** How a step ended (after all its items, on the same link). */
  | { readonly t: 'result'; readonly step: string; readonly outcome: WorkerOutcome }
  /** A step the host took back before it started (see `revoke`): it will not run here. */
  | { readonly t: 'revoked'; readonly step: string }
  /** A comlink message (the thread's calls to the host). */
  | { readonly t: 'rpc'; readonly data: unknown }
  /**
   * A call to the host on a line link (a container's), where comlink is not used: one of
   * {@link HostCalls}' methods by name, answered by a `reply` with the same id.
   */
  | {
      readonly t: 'call';
      readonly id: number;
      readonly method: keyof HostCalls;
      readonly args: readonly unknown[];
    };

/** Host → worker on a link. */
export type LinkDown =
  | { readonly t: 'step'; readonly task: WorkerTask }
  /**
   * Give a step sent ahead back if it has not started (another thread is free): answered by
   * `revoked`, or by nothing when it started already (its result comes as usual).
   */
  | { readonly t: 'revoke'; readonly step: string }
  | { readonly t: 'credit'; readonly step: string; readonly n: number }
  | { readonly t: 'rpc'; readonly data: unknown }
  /** A line link's answer to a `call`. */
  | { readonly t: 'reply'; readonly id: number; readonly reply: HostReply<unknown> }
  /** A cancel on a line link (threads hear theirs on the control channel). */
  | ControlMessage;

/** Host → every thread on the control channel. */
export interface ControlMessage {
  readonly t: 'cancel';
  readonly step: string;
  readonly reason: ErrorPayload;
}

/** How a worker task ended. */
export type WorkerOutcome = (
  | { readonly ok: true; readonly output: unknown }
  /** The handler returned `needsData(…)`, `needsCredentials(…)` or `wrongHandler(…)`. */
  | {
      readonly ok: true;
      readonly outcome: {
        readonly status: AgentOutcome['status'];
        readonly message: string;
        readonly data: Readonly<Record<string, unknown>> | null;
      };
    }
  | { readonly ok: false; readonly error: ErrorPayload }
) & {
  /** Items the step sent on the link: the host has the whole stream once it saw that many. */
  readonly sent: number;
  /** Droppable events the worker let go for want of credit (STREAM-2003). */
  readonly dropped: number;
};

/** An agent result as it crosses back to a worker: its error as a payload. */
export interface WireAgentResult {
  readonly status: AgentStatus;
  readonly output: unknown;
  readonly data: Readonly<Record<string, unknown>> | null;
  readonly error: ErrorPayload | null;
  readonly handler: string;
  readonly runId: string;
  readonly stepId: string;
  readonly usage: {
    readonly promptTokens: number;
    readonly completionTokens: number;
    readonly totalTokens: number;
    readonly costUsd: number;
  };
  readonly durationMs: number;
}

/** A tool result as it crosses back to a worker. */
export interface WireToolResult {
  readonly status: ToolStatus;
  readonly tool: string;
  readonly output: unknown;
  readonly error: ErrorPayload | null;
  readonly durationMs: number;
  readonly stepId: string | null;
}

/**
 * The host's side of a worker step's `runtime`, one per link: calls made on the calling
 * step's own context on the host (which holds its ledger and cancel), narrowed as asked.
 */
export interface HostCalls {
  delegate(
    step: string,
    agent: string,
    input: string | AgentInput,
    narrowing: ContextNarrowing | undefined,
  ): Promise<HostReply<WireAgentResult>>;
  callTool(step: string, name: string, args: unknown): Promise<HostReply<WireToolResult>>;
  /** An engine call on the step's host context; its tokens go into the step on the host. */
  chat(step: string, call: ChatCall, options: ChatCallOptions): Promise<HostReply<ChatResult>>;
  /** A fact of the step's run, stored and published on the host. */
  fact(step: string, fact: Parameters<AgentRuntime['emitFact']>[0]): Promise<HostReply<FactRecord>>;
  /** A file operation of the step's run, through the host's FS broker. */
  fs(step: string, request: Parameters<AgentRuntime['fs']>[0]): Promise<HostReply<FsResult>>;
  /** A memory call (`recall`, `store`, `consolidate`) on the host's memory, in the step's context. */
  memory(step: string, op: MemoryOp, arg: unknown): Promise<HostReply<unknown>>;
}

/** The memory calls a worker makes to its host. */
export type MemoryOp = 'recall' | 'store' | 'consolidate';

/**
 * A host call's answer, or what it threw as a payload (comlink would lose the error's
 * class), so the worker can throw the same typed error the handler would see inline.
 */
export type HostReply<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: ErrorPayload };
