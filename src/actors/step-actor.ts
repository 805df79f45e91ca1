/**
 * @module A step as an actor: the step machine decides, this executes — it stamps accepted
 * events, appends them to the log, then publishes them, so anything a subscriber has seen
 * is already in the log.
 */
import type { Clock } from '../context/clock.js';
import type { SinkEscalation, SinkEvent, StreamSink, StreamTap } from '../context/stream-sink.js';
import { SchemaViolationError } from '../errors/schema-violation-error.js';
import { StreamClosedError } from '../errors/stream-closed-error.js';
import { toAxonError, type ErrorPayload } from '../errors/to-error-payload.js';
import type { WorkerLostError } from '../errors/worker-lost-error.js';
import { flushed, type RunStore } from '../store/run-store.js';
import {
  copyErrorDetails,
  copyStartedOptions,
  emittableEventSchema,
  type Mutable,
  type StepEvent,
} from '../streams/events.js';
import type { EmittedWork, LoggedWork } from './logged-work.js';
import type { HandlerSink } from './run-handler.js';
import type { StepFeeds } from './step-feeds.js';
import { InterpretedStepLifecycle, type XStateInspect } from './interpreted-lifecycle.js';
import { StepLifecycle } from './step-lifecycle.js';
import {
  type EndFields,
  type EscalationFields,
  type NumberedEventBody,
  type StartedFields,
  type StepLifecycleState,
  type StepMachineEvent,
} from './step-machine.js';

/** Accepted-but-unlogged events past which a streaming handler waits for the log. */
export const BACKLOG_HIGH_WATER = 256;

/** What a step actor needs from its runtime. */
export interface StepActorOptions {
  readonly stepId: string;
  readonly path: readonly string[];
  readonly store: RunStore;
  readonly clock: Clock;
  /** Observer of the whole step tree (for `runtime.stream`), or `null`. */
  readonly tap: StreamTap | null;
  /** Called when the log refuses an append; the step is then failed by its runner. */
  readonly onLogFailure?: (err: unknown) => void;
  /** Where the lifecycle stands (a step picked up from its log); default before `started`. */
  readonly lifecycle?: StepLifecycle;
  /**
   * The work events already in the step's log, which its work, run again (after an approval,
   * or on another fleet replica), must reproduce: checked by content and not logged twice;
   * the first that differs fails the step `WORKER_LOST` (see `logged-work.ts`). Default none.
   */
  readonly logged?: LoggedWork;
  /** Told each time the step has appended to its log, to wake its followers. */
  readonly feeds?: StepFeeds | undefined;
  /**
   * XState's inspection callback: the step then runs on an interpreted XState actor of the
   * step machine that it watches (see `interpreted-lifecycle.ts`), not on the compiled one.
   */
  readonly inspect?: XStateInspect | undefined;
  /**
   * When the step's first `token` was logged (ms since the epoch), for a step picked up
   * from a log that holds one already; default none (the first token it emits sets it).
   */
  readonly firstTokenAt?: number | null;
}

/** A step's lifecycle: compiled (the default), or on an interpreted XState actor. */
export type StepLifecycleRef = StepLifecycle | InterpretedStepLifecycle;

/**
 * One step's lifecycle actor. Every emit method throws {@link StreamClosedError} when the
 * lifecycle does not allow the event now: before `started`, after `end` / `error`, or after
 * a cancel (STREAM-2001).
 */
export class StepActor implements HandlerSink {
  readonly stepId: string;
  readonly path: readonly string[];
  /** The lifecycle (the step machine, compiled, or interpreted when inspected). */
  readonly actor: StepLifecycleRef;
  /** The sink handed to the step's handler as `ctx.stream`. */
  readonly sink: StreamSink;

  readonly #opts: StepActorOptions;
  #buffer: StepEvent[] = [];
  #flushing: Promise<void> | null = null;
  #logError: unknown = null;
  readonly #logged: LoggedWork | null;
  #diverged: WorkerLostError | null = null;
  #detached = false;
  /** Set by {@link holdLog}: accepted events wait for the step's end write. */
  #held = false;
  #firstTokenAt: number | null;

  constructor(options: StepActorOptions) {
    this.#opts = options;
    this.#logged = options.logged ?? null;
    this.#firstTokenAt = options.firstTokenAt ?? null;
    this.stepId = options.stepId;
    this.path = options.path;
    this.actor = options.inspect
      ? new InterpretedStepLifecycle(
          options.stepId,
          options.inspect,
          options.lifecycle?.getSnapshot() ?? null,
          (err) => {
            options.onLogFailure?.(err);
          },
        )
      : (options.lifecycle ?? new StepLifecycle(options.stepId));
    this.sink = new StepSink(this);
  }

  /** What the actor system registers for this step: the XState actor, when interpreted. */
  get registryRef(): StepLifecycle | InterpretedStepLifecycle['xstate'] {
    return this.actor instanceof InterpretedStepLifecycle ? this.actor.xstate : this.actor;
  }

  /** The lifecycle state. */
  get state(): StepLifecycleState {
    return this.actor.getSnapshot().value;
  }

  /** True while tokens and events are accepted. */
  get isOpen(): boolean {
    return this.state === 'running';
  }

  /**
   * When its first `token` was accepted (ms since the epoch; the `ts` it is logged with),
   * `null` before one: the step's `first_token_at`, its time to first token.
   */
  get firstTokenAt(): number | null {
    return this.#firstTokenAt;
  }

  /** True once the step has ended, failed or been cancelled. */
  get isFinal(): boolean {
    return this.actor.getSnapshot().status === 'done';
  }

  start(fields: StartedFields): void {
    this.#send({ type: 'START', fields }, 'started');
  }

  /**
   * Set when the work, run again, made something other than what its log holds: the step
   * fails with it, and nothing more of the work is logged.
   */
  get divergence(): WorkerLostError | null {
    return this.#diverged;
  }

  /**
   * Throws the step's divergence when its work, run again, ended without making every event
   * its log holds (see `logged-work.ts`); nothing otherwise.
   */
  checkReproduced(): void {
    if (this.#diverged) throw this.#diverged;
    try {
      this.#logged?.checkEnd();
    } catch (err) {
      this.#diverged = err as WorkerLostError;
      throw err;
    }
  }

  /** Emits tokens, in order. */
  tokens(texts: readonly string[]): void {
    if (this.#diverged) throw this.#diverged;
    if (this.#logged?.pending && texts.length > 0 && this.isOpen) {
      let n = 0;
      while (n < texts.length && this.#reproduces({ type: 'token', t: texts[n] })) n++;
      texts = n === 0 ? texts : texts.slice(n);
    }
    if (texts.length > 0) this.#send({ type: 'TOKENS', texts }, 'token');
  }

  /** Whether `event` is the log's already (see `logged-work.ts`); a divergence is thrown. */
  #reproduces(event: EmittedWork): boolean {
    try {
      return this.#logged?.reproduces(event) ?? false;
    } catch (err) {
      this.#diverged = err as WorkerLostError;
      throw err;
    }
  }

  /** Emits a `tool_suggest`, `fact`, `metrics` or `narration` event, validated first. */
  emit(event: SinkEvent): void {
    const parsed = emittableEventSchema.safeParse(event);
    if (!parsed.success) {
      throw new SchemaViolationError(
        `event "${event.type}" of step ${this.stepId}`,
        parsed.error.issues.map((i) => ({
          path: i.path.map((p) => (typeof p === 'symbol' ? String(p) : p)),
          message: i.message,
        })),
      );
    }
    if (this.#diverged) throw this.#diverged;
    if (this.#logged?.pending && this.isOpen && this.#reproduces(parsed.data)) return;
    this.#send({ type: 'EMIT', body: parsed.data }, parsed.data.type);
  }

  checkpoint(checkpointId: string): void {
    this.#send({ type: 'CHECKPOINT', checkpointId }, 'checkpoint');
  }

  end(fields: EndFields): void {
    this.#send({ type: 'END', fields }, 'end');
  }

  /** Emits an `escalation` (allowed until the step ends, outside the order of STREAM-2001). */
  escalate(escalation: EscalationFields): void {
    this.#send({ type: 'ESCALATE', escalation }, 'escalation');
  }

  fail(error: ErrorPayload): void {
    this.#send({ type: 'FAIL', error }, 'error');
  }

  cancel(error: ErrorPayload): void {
    this.#send({ type: 'CANCEL', error }, 'error');
  }

  /** Events accepted but not yet logged and published. */
  get backlog(): number {
    return this.#buffer.length;
  }

  /** A handler's token (the step is the inline handler's sink, see `run-handler.ts`). */
  token(text: string): void {
    this.tokens([text]);
  }

  /** A handler's event. */
  event(event: SinkEvent): void {
    this.emit(event);
  }

  /**
   * `null` while the producer may go on; past {@link BACKLOG_HIGH_WATER} events waiting for
   * the log (or for a full consumer), the promise of their being written.
   */
  ready(): Promise<void> | null {
    return this.#buffer.length >= BACKLOG_HIGH_WATER ? this.drain() : null;
  }

  /**
   * Resolves once every accepted event is in the log and published; rejects if the log
   * refused an append.
   */
  async drain(): Promise<void> {
    while (this.#flushing) await this.#flushing;
    if (this.#logError !== null) throw toAxonError(this.#logError);
  }

  /**
   * Holds the events accepted from now on instead of appending them: the step's end takes
   * them ({@link takeHeld}) and writes them with its record's end, in one write
   * (`RunStore.endStep`), then publishes them ({@link publish}).
   */
  holdLog(): void {
    this.#held = true;
  }

  /**
   * Once every event accepted before {@link holdLog} is logged, the events held since,
   * taken (at once when no append is in flight); rejects (holding none) if the log refused
   * an append.
   */
  takeHeld(): Promise<StepEvent[]> | StepEvent[] {
    if (this.#flushing === null && this.#logError === null) return this.#takeBuffer();
    return this.drain().then(
      () => this.#takeBuffer(),
      (err: unknown) => {
        // Nothing after a refused append is logged: the held events go too.
        this.#buffer = [];
        throw err;
      },
    );
  }

  #takeBuffer(): StepEvent[] {
    const held = this.#buffer;
    this.#buffer = [];
    return held;
  }

  /**
   * Publishes `events`, which the caller has written to the log (the held ones): to the
   * step's followers, then, once the store has made them durable, to its subscriber; `null`
   * when there is nothing to wait for.
   */
  publish(events: readonly StepEvent[]): Promise<void> | null {
    if (events.length === 0) return null;
    // Without a subscriber, nothing to wait for.
    if (!this.#opts.tap) {
      this.#opts.feeds?.appended(this.stepId);
      return null;
    }
    return this.#publish(events).catch((err: unknown) => {
      this.#logError ??= err;
      this.#opts.onLogFailure?.(err);
    });
  }

  /**
   * Refuses every event from now on (each emit throws {@link StreamClosedError}), without
   * ending the step: how a step suspended for an approval stops the work it leaves behind.
   */
  detach(): void {
    this.#detached = true;
  }

  #send(event: StepMachineEvent, eventType: string): void {
    if (this.#detached) throw new StreamClosedError(this.stepId, eventType, 'suspended');
    if (!this.actor.send(event)) {
      throw new StreamClosedError(this.stepId, eventType, this.actor.getSnapshot().value);
    }
    const accepted = this.actor.getSnapshot().context.accepted;
    const ts = this.#opts.clock.now();
    if (eventType === 'token') this.#firstTokenAt ??= ts;
    for (const body of accepted) this.#buffer.push(stamp(body, this.stepId, ts));
    // Held events wait for the step's end write (see `holdLog`).
    if (!this.#held) this.#flushing ??= this.#flush();
  }

  async #flush(): Promise<void> {
    // Let the current synchronous burst of events join one append.
    await Promise.resolve();
    try {
      // Held events wait for the step's end write (see `holdLog`).
      while (this.#buffer.length > 0 && !this.#held) {
        // Once the log has refused an append, nothing more is written or published: an
        // event nobody could find in the log must not be seen either.
        if (this.#logError !== null) {
          this.#buffer = [];
          return;
        }
        const batch = this.#buffer;
        this.#buffer = [];
        try {
          await this.#opts.store.appendEvents(batch);
          await this.#publish(batch);
        } catch (err) {
          this.#logError ??= err;
          this.#opts.onLogFailure?.(err);
          return;
        }
      }
    } finally {
      this.#flushing = null;
    }
  }

  /** Tells the step's followers of `batch`, logged; then, once durable, its subscriber. */
  async #publish(batch: readonly StepEvent[]): Promise<void> {
    this.#opts.feeds?.appended(this.stepId);
    const tap = this.#opts.tap;
    if (!tap) return;
    // Shown to a subscriber only once durable: the log holds whatever anyone has seen.
    await flushed(this.#opts.store);
    for (const ev of batch) {
      let wait: void | Promise<void> = undefined;
      try {
        wait = tap.onEvent(this.path, ev);
      } catch {
        // A subscriber's failure never reaches the producer (it is isolated by the tap).
      }
      // A full consumer holds the stream (STREAM-2003): wait for room.
      if (wait) await wait.catch(() => undefined);
    }
  }
}

/** `body` as a logged event, built field by field for the frequent types (no spread). */
function stamp(body: NumberedEventBody, step_id: string, ts: number): StepEvent {
  const { seq } = body;
  switch (body.type) {
    case 'token':
      return { type: 'token', step_id, seq, ts, t: body.t, i: body.i };
    case 'started': {
      const event: Mutable<Extract<StepEvent, { type: 'started' }>> = {
        type: 'started',
        step_id,
        seq,
        ts,
        provenance: body.provenance,
      };
      copyStartedOptions(event, body);
      return event;
    }
    case 'end': {
      const { output, budget_usage, provenance } = body;
      return { type: 'end', step_id, seq, ts, output, budget_usage, provenance };
    }
    case 'error': {
      const { code, message, retriable } = body;
      const event: Mutable<Extract<StepEvent, { type: 'error' }>> = {
        type: 'error',
        step_id,
        seq,
        ts,
        code,
        message,
        retriable,
      };
      copyErrorDetails(event, body);
      return event;
    }
    default:
      return { ...body, step_id, ts };
  }
}

/**
 * The `ctx.stream` of a step's handler. `close()` stops the handler's own pushes (the step
 * stays open for its runner to end it); pushes after that, or once the step is no longer
 * running, throw {@link StreamClosedError}.
 */
class StepSink implements StreamSink {
  readonly #step: StepActor;
  #closed = false;

  constructor(step: StepActor) {
    this.#step = step;
  }

  get closed(): boolean {
    return this.#closed || !this.#step.isOpen;
  }

  push(text: string): void {
    if (this.#closed) throw new StreamClosedError(this.#step.stepId, 'token', 'sink closed');
    this.#step.tokens([text]);
  }

  emit(event: SinkEvent): void {
    if (this.#closed) throw new StreamClosedError(this.#step.stepId, event.type, 'sink closed');
    this.#step.emit(event);
  }

  escalate(escalation: SinkEscalation): void {
    if (!this.#step.isFinal) this.#step.escalate(escalation);
  }

  ready(): Promise<void> | null {
    return this.#step.ready();
  }

  close(): void {
    this.#closed = true;
  }
}
