/**
 * @module The contract of a durable agent (issue 46): an agent addressed by a key, each key one
 * actor that keeps its state between messages, handles them one at a time and sleeps in the
 * store when idle. What `defineAgent({ durable })` takes and gives, and what its handler gets:
 * the actor's state, and the durable waits — a sleep, an event, a reminder — that hold no
 * memory while they wait.
 */
import type { z } from 'zod';
import type { ExecContext } from '../context/exec-context.js';
import type { SinkEvent } from '../context/stream-sink.js';
import type { AgentRuntime } from './agent-runtime.js';

/**
 * What a message that finds its actor busy with another does: `queue` waits its turn (at most
 * `maxQueue` wait; past it the message is refused `QUEUE_FULL`); `reject` is refused
 * `CONFLICT`; `interrupt` cancels the message being handled (its step ends `CANCELLED`, its
 * state change not applied) and goes next; `merge` waits, and the messages waiting when the
 * actor takes the next are folded into one by `merge`.
 */
export type MailboxPolicy = 'queue' | 'reject' | 'interrupt' | 'merge';

/** The mailbox of a durable agent's actors. */
export interface MailboxOptions<TInput = unknown> {
  /** Default `queue`. */
  readonly policy?: MailboxPolicy;
  /** Messages waiting at most, besides the one being handled; default 1 000. */
  readonly maxQueue?: number;
  /**
   * For `merge`: the waiting messages, oldest first (two or more), folded into the one
   * message handled in their place. Each folded message's step ends `succeeded` with output
   * `{ merged_into: <step id of the one handled> }`.
   */
  readonly merge?: (messages: readonly TInput[]) => TInput;
}

/** What `durable` in {@link defineAgent} takes. */
export interface DurableSpec<TState, TInput> {
  /** The state's schema: a handler's next state is checked against it before it is written. */
  readonly state: z.ZodType<TState>;
  /** The state of an actor's first message. */
  readonly initial: TState;
  /** The state's version, an integer ≥ 1; raise it with `migrate` when the state's shape changes. */
  readonly version: number;
  /**
   * Brings a state stored at an older version up to `version`, when its actor wakes. Without
   * it (or when it throws), an actor stored at an older version fails its messages with
   * `INVALID_PARAMS` naming the versions, and its stored state is left untouched.
   */
  readonly migrate?: (state: unknown, fromVersion: number) => TState;
  /** How long an actor stays in memory after its last message, in ms; default 60 000. */
  readonly idleMs?: number;
  readonly mailbox?: MailboxOptions<TInput>;
}

/** What a durable agent's handler returns: the actor's next state and the message's output. */
export interface ActorTurn<TState, TOutput = unknown> {
  /** The actor's state after this message; absent, it stays as it was. */
  readonly state?: TState;
  /** The message's output (its step's); absent, `null`. */
  readonly output?: TOutput;
}

/** Options of {@link ActorContext.waitFor}. */
export interface WaitForOptions<TData> {
  /** Fields the event's data must have, each equal to the given value (JSON); absent, any. */
  readonly match?: Readonly<Record<string, unknown>>;
  /** How long to wait, in ms; then `waitFor` resolves `null`. Absent, for ever. */
  readonly timeoutMs?: number;
  /**
   * The data's schema: data that fails it wakes this wait not (the signal's answer names the
   * refusal). Stored as JSON Schema, so it holds no memory while the actor sleeps.
   */
  readonly schema?: z.ZodType<TData>;
}

/** Options of {@link ActorContext.remind}: `at` or `every` (or both: first at `at`). */
export interface RemindOptions<TInput> {
  /** When, as a `Date` or ms since the epoch; absent, `every` from now. */
  readonly at?: Date | number;
  /** Again every this many ms after each firing; absent, once. */
  readonly every?: number;
  /** The message the reminder sends the actor (checked against the agent's `input`). */
  readonly message: TInput;
}

/**
 * What a durable agent's handler gets besides its message. A handler runs again from its start
 * after a wait (as a workflow does in Temporal or Restate): the engine and tool calls it made
 * before are served from its recording, the events it emitted are not emitted twice, and each
 * wait it passed returns at once. So a handler must make the same calls and waits in the same
 * order each time it runs; read time and randomness through `ctx`.
 */
export interface ActorContext<TState, TInput = unknown> {
  /** The durable agent's name. */
  readonly name: string;
  readonly key: string;
  /** The actor's state before this message (a copy: return the next one). */
  readonly state: TState;
  /** The message's id (its step's). */
  readonly messageId: string;
  /** The message's step context: pass it to `runtime.delegate`, `callTool`, `chat`. */
  readonly ctx: ExecContext;
  /**
   * Sleeps `ms` milliseconds (or until a `Date`), durably: the message waits in the store (no
   * memory, no pool slot) and its handler goes on after the wake, in this process or another,
   * after a restart too.
   */
  sleep(duration: number | Date): Promise<void>;
  /**
   * Waits for the event `event` (`runtime.signal`, `POST /v1/events`) of the actor's user
   * whose data fits `match` and `schema`; resolves its data, or `null` once `timeoutMs`
   * passed. Durable as {@link sleep}.
   */
  waitFor<TData = unknown>(event: string, options?: WaitForOptions<TData>): Promise<TData | null>;
  /** Sets the reminder `name` (replacing one of that name): a message to the actor later. */
  remind(name: string, options: RemindOptions<TInput>): Promise<void>;
  /** Removes the reminder `name`; nothing when there is none. */
  cancelReminder(name: string): Promise<void>;
}

/** A durable agent's handler: a function, or an async generator whose strings are tokens. */
export type DurableHandler<TInput, TState, TOutput> = (
  message: TInput,
  actor: ActorContext<TState, TInput>,
  runtime: AgentRuntime,
) =>
  | Promise<ActorTurn<TState, TOutput>>
  | ActorTurn<TState, TOutput>
  | AsyncGenerator<string | SinkEvent, ActorTurn<TState, TOutput>, undefined>;

/** What {@link defineAgent} takes for a durable agent. */
export interface DurableAgentSpec<TInput, TState, TOutput> {
  readonly name: string;
  readonly description?: string;
  /** Each message's schema: a message that fails it is refused before it is accepted. */
  readonly input?: z.ZodType<TInput>;
  readonly durable: DurableSpec<TState, TInput>;
  /** Per-message timeout (a wait's time aside); default 30 000 ms. */
  readonly timeoutMs?: number;
  readonly handler: DurableHandler<TInput, TState, TOutput>;
}

/**
 * A declared durable agent, ready to register with a runtime (inline placement). Its handler
 * and merge are methods, so that a definition of any input, state and output is a
 * `DurableAgentDefinition` (what a runtime's `agents` take).
 */
export interface DurableAgentDefinition<TInput = unknown, TState = unknown, TOutput = unknown> {
  readonly kind: 'durable_agent';
  readonly name: string;
  readonly description: string;
  readonly timeoutMs: number;
  readonly input: z.ZodType<TInput> | null;
  readonly durable: {
    readonly state: z.ZodType<TState>;
    readonly initial: TState;
    readonly version: number;
    readonly idleMs: number;
    readonly migrate: ((state: unknown, fromVersion: number) => TState) | null;
    readonly mailbox: {
      readonly policy: MailboxPolicy;
      readonly maxQueue: number;
      /** For `merge`: see {@link MailboxOptions.merge} (other policies never call it). */
      merge(messages: readonly TInput[]): TInput;
    };
  };
  handler(
    message: TInput,
    actor: ActorContext<TState, TInput>,
    runtime: AgentRuntime,
  ): ReturnType<DurableHandler<TInput, TState, TOutput>>;
}

/** Defaults of a durable agent. */
export const DURABLE_DEFAULTS = { idleMs: 60_000, maxQueue: 1_000 } as const;
