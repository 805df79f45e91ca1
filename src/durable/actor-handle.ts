/**
 * @module A handle on one actor (`runtime.actor(name, key)`; issue 46): send it a message,
 * ask it one and get the handler's result, stream one's events, read its state, cancel its
 * messages. The handle holds nothing but the address: the same `(name, key)` is the same actor
 * from any handle, in any process on the same store, after any restart.
 */
import { CancelledError } from '../errors/cancelled-error.js';
import { fromErrorPayload } from '../errors/remote-error.js';
import type { StepEnding } from '../runs/submitted-step.js';
import type { StepEvent } from '../streams/events.js';
import type { ActorAddress } from './actor-address.js';
import type { ActorView, DurableAgents, MessageReceipt, SendOptions } from './durable-agents.js';

/** A message's events as they are logged, and its result once it ends. */
export interface ActorStream<TOutput> extends AsyncIterable<StepEvent> {
  /** The message as accepted. */
  readonly receipt: Promise<MessageReceipt>;
  /** The handler's output, or its error, once the message ends. */
  readonly result: Promise<TOutput>;
}

/** The output of a message's end, or its error thrown. */
function outputOf(ending: StepEnding): unknown {
  if (ending.status === 'succeeded') return ending.output;
  if (ending.error) throw fromErrorPayload(ending.error);
  throw new CancelledError(`the message ended ${ending.status}`);
}

/** See the module. */
export class ActorHandle<TInput = unknown, TOutput = unknown> {
  readonly address: ActorAddress;
  readonly #durable: DurableAgents;
  readonly #follow: (stepId: string) => AsyncIterable<StepEvent>;

  /** @internal Use `runtime.actor(name, key)`. */
  constructor(
    durable: DurableAgents,
    address: ActorAddress,
    follow: (stepId: string) => AsyncIterable<StepEvent>,
  ) {
    this.#durable = durable;
    this.address = address;
    this.#follow = follow;
  }

  get name(): string {
    return this.address.name;
  }

  get key(): string {
    return this.address.key;
  }

  /**
   * Sends a message; resolves once it is durably queued (its id, step, run and status). The
   * same `clientToken` again answers with the first message and queues nothing. Rejects,
   * nothing stored: `NOT_FOUND` (no such durable agent), `INVALID_PARAMS` (a bad key or
   * token), `SCHEMA_VIOLATION` (the agent's input), `QUEUE_FULL`, `CONFLICT` (`reject`).
   */
  send(message: TInput, options: SendOptions = {}): Promise<MessageReceipt> {
    return this.#durable.send(this.address, message, options);
  }

  /**
   * Sends a message and resolves with its handler's output once it has been handled (after
   * its waits too); rejects with its error (a typed axon error) when it failed or was
   * cancelled.
   *
   * @example
   * const notes = runtime.actor('notebook', 'customer-42');
   * const { count } = await notes.ask({ text: 'called back' });
   */
  async ask(message: TInput, options: SendOptions = {}): Promise<TOutput> {
    const { ended } = await this.#durable.sendAndWait(this.address, message, options);
    return outputOf(await ended) as TOutput;
  }

  /** Sends a message and streams its step's events (`started`, tokens, …, `end`). */
  stream(message: TInput, options: SendOptions = {}): ActorStream<TOutput> {
    const receipt = this.send(message, options);
    const result = receipt.then(
      async (r) => outputOf(await this.#durable.ended(r.step_id)) as TOutput,
    );
    // Nobody may read the result of a stream read only for its events.
    result.catch(() => undefined);
    const follow = this.#follow;
    return {
      receipt,
      result,
      async *[Symbol.asyncIterator]() {
        const r = await receipt;
        yield* follow(r.step_id);
      },
    };
  }

  /** The actor as stored (API.md's view); `null` before its first message. */
  state(): Promise<ActorView | null> {
    return this.#durable.view(this.address);
  }

  /**
   * Cancels the actor's messages: the one being handled and every queued or waiting one end
   * `CANCELLED`; its state stays. Resolves how many. `NOT_FOUND` for an actor never messaged.
   */
  cancel(): Promise<number> {
    return this.#durable.cancel(this.address);
  }
}
