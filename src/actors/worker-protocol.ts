/**
 * @module What crosses between the host and a worker thread for one step: the task, the
 * messages on its event port, the host calls the worker may make, and the task's result.
 * Everything here is structured-cloneable.
 */
import type { MessagePort } from 'node:worker_threads';
import type { ContextNarrowing } from '../context/exec-context.js';
import type { SinkEvent } from '../context/stream-sink.js';
import type { WireContext } from '../context/wire-context.js';
import type { ErrorPayload } from '../errors/to-error-payload.js';
import type { ToolStatus } from '../tools/tool-result.js';
import type { AgentInput, AgentOutcome, AgentStatus } from './agent-result.js';

/** One step's work, posted to the pool. The two ports are transferred with it. */
export interface WorkerTask {
  /** The agent's name (for errors and logs). */
  readonly agent: string;
  readonly module: string;
  readonly export: string;
  readonly input: AgentInput;
  readonly ctx: WireContext;
  /** Worker → host: tokens, events and `done`; host → worker: credit and cancel. */
  readonly events: MessagePort;
  /** The worker's calls back to the host (comlink), see {@link HostCalls}. */
  readonly calls: MessagePort;
  /** Items the host accepts before the worker must wait for more credit. */
  readonly credit: number;
}

/** An item of the step's stream, as the worker sends it. */
export type StreamItem = string | SinkEvent;

/** Worker → host on the event port. */
export type WorkerMessage =
  /** Items in order; each took one unit of credit. */
  | { readonly t: 'items'; readonly items: readonly StreamItem[] }
  /** Nothing more will be sent; `dropped` counts droppable events the worker let go. */
  | { readonly t: 'done'; readonly dropped: number };

/** Host → worker on the event port. */
export type HostMessage =
  | { readonly t: 'credit'; readonly n: number }
  | { readonly t: 'cancel'; readonly reason: ErrorPayload };

/** How a worker task ended. */
export type WorkerOutcome =
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
  | { readonly ok: false; readonly error: ErrorPayload };

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
 * The host's side of a worker step's `runtime`: calls made on the step's own context (the
 * host holds its ledger and cancel), narrowed as asked.
 */
export interface HostCalls {
  delegate(
    agent: string,
    input: string | AgentInput,
    narrowing: ContextNarrowing | undefined,
  ): Promise<HostReply<WireAgentResult>>;
  callTool(name: string, args: unknown): Promise<HostReply<WireToolResult>>;
}

/**
 * A host call's answer, or what it threw as a payload (comlink would lose the error's
 * class), so the worker can throw the same typed error the handler would see inline.
 */
export type HostReply<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: ErrorPayload };
