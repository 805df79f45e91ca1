/** @module Where a running step's handler sends tokens and events. */
import { StreamClosedError } from '../errors/stream-closed-error.js';

/** An event a handler may emit besides tokens; validated by the step that receives it. */
export interface SinkEvent {
  readonly type: string;
  readonly [field: string]: unknown;
}

/**
 * The stream sink of a context. Inside a step it feeds the step's event stream; a push
 * after the step ended, or after a cancel, throws {@link StreamClosedError}.
 */
export interface StreamSink {
  /** Emits one token of text. */
  push(text: string): void;
  /** Emits a `narration`, `metrics`, `fact` or `tool_suggest` event. */
  emit(event: SinkEvent): void;
  /**
   * Emits an `escalation` (a breaker that refused a call, a supervisor that gave up): it may
   * come outside the step's event order, and is dropped once the step has ended.
   */
  escalate(escalation: SinkEscalation): void;
  /**
   * Resolves when the producer may push more (the step's buffer drained below its bound);
   * `null` when it may push at once. Producers that push many tokens wait on it.
   */
  ready(): Promise<void> | null;
  /** Closes the sink; later pushes throw. */
  close(): void;
  /** True once no more events are accepted. */
  readonly closed: boolean;
}

/** An `escalation` event's fields (API.md). */
export interface SinkEscalation {
  readonly reason: string;
  readonly target: string;
  readonly breaker_state?: 'closed' | 'open' | 'half_open';
}

/** The sink of a context that is not running a step: every push throws. */
export const DETACHED_SINK: StreamSink = Object.freeze({
  push(): void {
    throw new StreamClosedError('(none)', 'token', 'not in a step');
  },
  emit(event: SinkEvent): void {
    throw new StreamClosedError('(none)', event.type, 'not in a step');
  },
  escalate(): void {
    /* no step to escalate on */
  },
  ready: () => null,
  close(): void {
    /* nothing to close */
  },
  closed: true,
});

/** Receives every event of a step tree, with the emitting actor's path; see `runtime.stream`. */
export interface StreamTap {
  /**
   * Called once per event, in emission order; must not throw. A returned promise asks the
   * producer to wait until it resolves (a bounded consumer is full): the step publishes
   * nothing more until then, and its handler is held once its own buffer fills.
   */
  onEvent(path: readonly string[], event: SinkEvent): void | Promise<void>;
}
