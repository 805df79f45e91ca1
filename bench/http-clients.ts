/**
 * @module The client of bench:http, in a process of its own (forked by `http.bench.ts`) so
 * that its work does not count against the servers measured. Told over IPC to send a
 * burst, it sends `requests` step submissions on keep-alive connections, one connection per
 * run, each one request at a time, every body with a client token of its own, and answers
 * how many got each status.
 *
 * HTTP/1.1 is written and read by hand on `node:net` sockets (a request line, three
 * headers, a body; a response's status and `content-length`): `node:http`'s client costs
 * more per request than the servers measured here, so with it the client, not the server,
 * set the pace (a no-op Fastify route answered ~5 600 requests/s to it, half its loop idle).
 */
import net from 'node:net';

/** A burst of step submissions. */
export interface BurstCommand {
  readonly type: 'burst';
  /** `http://host:port`. */
  readonly url: string;
  /** A run per connection: connection `j` posts to `/v1/runs/{runIds[j]}/steps`. */
  readonly runIds: readonly string[];
  readonly requests: number;
}

/** Closes the connections to `url`. */
export interface ForgetCommand {
  readonly type: 'forget';
  readonly url: string;
}

/** How a burst went: the count of each status (or of each error). */
export interface BurstResult {
  readonly statuses: Readonly<Record<string, number>>;
}

let sent = 0;

/** One keep-alive connection: a request at a time, its response read by `content-length`. */
class Connection {
  readonly #socket: net.Socket;
  readonly #ready: Promise<void>;
  #buffer: Buffer = Buffer.alloc(0);
  #waiting: ((status: number) => void) | null = null;
  #failed: ((err: Error) => void) | null = null;

  constructor(host: string, port: number) {
    this.#socket = net.connect({ host, port, noDelay: true });
    this.#ready = new Promise((resolve, reject) => {
      this.#socket.once('connect', resolve);
      this.#socket.once('error', reject);
    });
    this.#socket.on('data', (chunk: Buffer) => {
      this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
      this.#parse();
    });
    this.#socket.on('error', (err) => this.#failed?.(err));
    this.#socket.on('close', () => this.#failed?.(new Error('the connection closed')));
  }

  /** POSTs `body` to `path`; resolves the response's status once all of it is read. */
  async post(host: string, path: string, body: string): Promise<number> {
    await this.#ready;
    return new Promise((resolve, reject) => {
      this.#waiting = resolve;
      this.#failed = reject;
      // One write: the body is ASCII, so its length in characters is its length in bytes.
      this.#socket.write(
        `POST ${path} HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
        'latin1',
      );
    });
  }

  #parse(): void {
    const head = this.#buffer.indexOf('\r\n\r\n');
    if (head === -1) return;
    const text = this.#buffer.toString('latin1', 0, head).toLowerCase();
    const status = Number(text.slice(9, 12));
    const length = /\r\ncontent-length: *(\d+)/.exec(text);
    if (!length) {
      this.#failed?.(new Error('a response without content-length'));
      return;
    }
    const end = head + 4 + Number(length[1]);
    if (this.#buffer.length < end) return;
    this.#buffer = this.#buffer.subarray(end);
    const waiting = this.#waiting;
    this.#waiting = null;
    this.#failed = null;
    waiting?.(status);
  }

  close(): void {
    this.#failed = null;
    this.#socket.destroy();
  }
}

const pools = new Map<string, Connection[]>();

/** The body of one submission: a `tool_call` of `add`, with a client token of its own. */
function body(): string {
  return `{"type":"tool_call","client_token":"http-${process.pid}-${++sent}","input":{"tool":"add","args":{"a":1,"b":2}}}`;
}

async function burst(command: BurstCommand): Promise<BurstResult> {
  const { hostname, port, host } = new URL(command.url);
  let pool = pools.get(command.url);
  if (!pool) {
    pool = command.runIds.map(() => new Connection(hostname, Number(port)));
    pools.set(command.url, pool);
  }
  const statuses: Record<string, number> = {};
  let left = command.requests;
  const lane = async (connection: Connection, runId: string): Promise<void> => {
    const path = `/v1/runs/${runId}/steps`;
    while (left > 0) {
      left--;
      const status = String(await connection.post(host, path, body()));
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  };
  await Promise.all(command.runIds.map((runId, j) => lane(pool[j] as Connection, runId)));
  return { statuses };
}

process.on('message', (command: BurstCommand | ForgetCommand) => {
  if (command.type === 'forget') {
    for (const connection of pools.get(command.url) ?? []) connection.close();
    pools.delete(command.url);
    process.send?.({ statuses: {} } satisfies BurstResult);
    return;
  }
  burst(command).then(
    (result) => process.send?.(result),
    (err: unknown) => process.send?.({ statuses: { [String(err)]: 1 } } satisfies BurstResult),
  );
});
