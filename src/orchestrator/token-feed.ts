/**
 * @module Tokens between an invocation and a stream's consumer: one token at a time, the
 * producer waiting while the consumer has not taken the last one (backpressure).
 */

/** See the module. `end()` releases both sides; tokens pushed after it are dropped. */
export class TokenFeed implements AsyncIterable<string> {
  #waiting: string[] = [];
  #ended = false;
  #wakeConsumer: (() => void) | null = null;
  #wakeProducer: (() => void) | null = null;

  /** Hands `token` on; resolves once the consumer has taken it (or the feed ended). */
  async push(token: string): Promise<void> {
    if (this.#ended) return;
    this.#waiting.push(token);
    this.#wakeConsumer?.();
    await new Promise<void>((resolve) => {
      this.#wakeProducer = resolve;
    });
  }

  /** No more tokens: the consumer finishes what is waiting, the producer is released. */
  end(): void {
    this.#ended = true;
    this.#wakeConsumer?.();
    this.#wakeProducer?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<string> {
    for (;;) {
      const next = this.#waiting.shift();
      if (next !== undefined) {
        const wake = this.#wakeProducer;
        this.#wakeProducer = null;
        wake?.();
        yield next;
        continue;
      }
      if (this.#ended) return;
      await new Promise<void>((resolve) => {
        this.#wakeConsumer = resolve;
      });
      this.#wakeConsumer = null;
    }
  }
}
