/**
 * @module A link over a byte stream pair: one JSON message per line, both ways. A container
 * speaks to its host on its standard input and output this way, with the messages of
 * `worker-protocol.ts`. The side reading a stranger's lines bounds each one
 * ({@link LineLinkOptions.maxLineBytes}); a line that is not a JSON object is handed to
 * `onStray` (a program that printed to its standard output), not parsed as a message.
 */
import { EventEmitter } from 'node:events';
import type { Readable, Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

/** Options of {@link LineLink}. */
export interface LineLinkOptions {
  /** A line longer than this ends the link (`'overflow'`); default 16 MiB. */
  readonly maxLineBytes?: number;
  /** A line that is not a JSON object; default: dropped. */
  readonly onStray?: (line: string) => void;
}

/** The default bound of one line. */
export const DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024;

/**
 * A message link over `input` (lines in) and `write` (lines out). Emits `'message'` for each
 * JSON object read, `'close'` once when the input ends or the link is closed, and
 * `'overflow'` (then `'close'`) when a line passes its bound.
 */
export class LineLink extends EventEmitter {
  readonly #input: Readable;
  readonly #write: (line: string) => void;
  readonly #max: number;
  readonly #onStray: (line: string) => void;
  readonly #decoder = new StringDecoder('utf8');
  #buffer = '';
  #closed = false;

  constructor(
    input: Readable,
    write: Writable | ((line: string) => void),
    options: LineLinkOptions = {},
  ) {
    super();
    this.#input = input;
    this.#write =
      typeof write === 'function'
        ? write
        : (line) => {
            write.write(line);
          };
    this.#max = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    this.#onStray = options.onStray ?? (() => undefined);
    input.on('data', this.#onData);
    input.once('end', this.#onEnd);
    input.once('close', this.#onEnd);
    input.once('error', this.#onEnd);
  }

  /** Sends `message` as one line; nothing once the link is closed. */
  postMessage(message: unknown): void {
    if (this.#closed) return;
    this.#write(`${JSON.stringify(message)}\n`);
  }

  /** Stops reading; emits `'close'` once. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#input.off('data', this.#onData);
    this.emit('close');
  }

  get closed(): boolean {
    return this.#closed;
  }

  readonly #onData = (chunk: Buffer | string): void => {
    if (this.#closed) return;
    this.#buffer += typeof chunk === 'string' ? chunk : this.#decoder.write(chunk);
    let start = 0;
    for (;;) {
      const end = this.#buffer.indexOf('\n', start);
      if (end < 0) break;
      const line = this.#buffer.slice(start, end);
      start = end + 1;
      this.#line(line);
      if (this.closed) return;
    }
    this.#buffer = this.#buffer.slice(start);
    // Characters, not bytes: a bound checked cheaply, at most four times the bytes.
    if (this.#buffer.length > this.#max) {
      this.emit('overflow', this.#buffer.length);
      this.close();
    }
  };

  readonly #onEnd = (): void => {
    const rest = this.#buffer;
    this.#buffer = '';
    if (rest.length > 0 && !this.#closed) this.#line(rest);
    this.close();
  };

  #line(line: string): void {
    if (line.length === 0) return;
    if (line.length > this.#max) {
      this.emit('overflow', line.length);
      this.close();
      return;
    }
    let message: unknown;
    try {
      message = line.startsWith('{') ? JSON.parse(line) : undefined;
    } catch {
      message = undefined;
    }
    if (message === null || typeof message !== 'object' || Array.isArray(message)) {
      this.#onStray(line);
      return;
    }
    this.emit('message', message);
  }
}
