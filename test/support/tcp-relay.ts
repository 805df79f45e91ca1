/** @module Test helper: a TCP relay between a client and a server that can cut a stream. */
import net from 'node:net';

/** A TCP relay to a server that records each stream request and can cut the first one. */
export interface Relay {
  readonly url: string;
  /** The `Last-Event-ID` header of each stream request, `null` when absent. */
  readonly streamRequests: (string | null)[];
  /** Drops the first stream request's connection now (both ends), if it is open. */
  cutFirstStream(): void;
  close(): Promise<void>;
}

/** Options of {@link startRelay}. */
export interface RelayOptions {
  /** Cut the first stream request's response after this many bytes; `null`: never. */
  readonly cutFirstStreamAfterBytes: number | null;
  /** What a stream request looks like (its request line); default a step's stream. */
  readonly streamPath?: RegExp;
}

/** A TCP relay to `target`; see {@link Relay}. */
export function startRelay(target: URL, options: RelayOptions): Promise<Relay> {
  const { cutFirstStreamAfterBytes } = options;
  const streamPath = options.streamPath ?? /^GET \/v1\/steps\/[^/]+\/stream/;
  const streamRequests: (string | null)[] = [];
  const sockets = new Set<net.Socket>();
  let firstStream: (() => void) | null = null;
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client);
    sockets.add(upstream);
    let cutAfter: number | null = null;
    let sent = 0;
    client.on('data', (chunk: Buffer) => {
      const head = chunk.toString('latin1');
      if (streamPath.test(head)) {
        const id = /^last-event-id: *(.*)\r$/im.exec(head)?.[1] ?? null;
        streamRequests.push(id);
        if (streamRequests.length === 1) {
          cutAfter = cutFirstStreamAfterBytes;
          firstStream = () => {
            upstream.destroy();
            client.destroy();
          };
        }
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (cutAfter === null || sent + chunk.length <= cutAfter) {
        sent += chunk.length;
        client.write(chunk);
        return;
      }
      // A dropped connection: exactly `cutAfter` bytes through (mid-stream, however large
      // the chunks), then both ends destroyed once those are written.
      const through = chunk.subarray(0, cutAfter - sent);
      sent = cutAfter;
      cutAfter = null;
      upstream.destroy();
      client.write(through, () => client.destroy());
    });
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        streamRequests,
        cutFirstStream: () => {
          firstStream?.();
          firstStream = null;
        },
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy();
            server.close(() => {
              done();
            });
          }),
      });
    });
  });
}
