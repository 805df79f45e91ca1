/**
 * @module The clients of bench:sse, in a process of their own (forked by `sse.bench.ts`) so
 * that their work does not count as the server's event-loop lag. Told what to do over IPC,
 * they create a flow and runs, submit `llm_call` steps over HTTP, follow each step's
 * `GET /v1/steps/{id}/stream` on a connection of its own (plain `node:http`, as a browser's
 * `EventSource` has one per stream), check every token (`i` = 0, 1, 2, … and `seq` rising)
 * and report what they received.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';

/** What the bench asks of the clients. */
export type ClientCommand =
  | {
      /**
       * `clients` clients, each with a run of its own, each streaming one step after
       * another (a new step as soon as its last one ends) until `windowMs` after every
       * client has had its first token; then they close their streams.
       */
      readonly type: 'many';
      readonly url: string;
      readonly clients: number;
      /** Tokens of each step. */
      readonly tokens: number;
      readonly engine: string;
      /** Clients opening at a time (submission to the stream's headers). */
      readonly opening: number;
      readonly windowMs: number;
      /**
       * The window opens this long after the first submission even if some clients have
       * no token yet (an overloaded server); `clientsStreaming` says how many had one.
       */
      readonly rampLimitMs: number;
    }
  | {
      /** One step (`step`, the submission's body) that streams `tokens` tokens, one stream. */
      readonly type: 'one';
      readonly url: string;
      readonly tokens: number;
      readonly step: Readonly<Record<string, unknown>>;
    };

/** Where the `many` phase is: the bench's lag histograms start and stop on these. */
export type ClientPhase = 'started' | 'all-live' | 'window-end';

/** What the clients tell the bench. */
export type ClientMessage =
  | { readonly type: 'phase'; readonly phase: ClientPhase }
  | {
      readonly type: 'many-done';
      /** From the first submission until every client had its first token (or the limit), ms. */
      readonly rampMs: number;
      /** Clients that had had a token when the window opened. */
      readonly clientsStreaming: number;
      /** Streams open (headers in, not ended) in the window, on average (sampled every 100 ms). */
      readonly streamsOpenAvg: number;
      /** Streams or submissions that failed on the wire (refused, reset, timed out). */
      readonly errors: number;
      readonly firstError: string | null;
      /** Tokens received in the window, and its length in ms. */
      readonly windowTokens: number;
      readonly windowMs: number;
      /** Streams that ran to their step's `end` (each with every token, in order). */
      readonly streamsEnded: number;
      /** Every token received, in the whole session. */
      readonly tokens: number;
      /** Per stream, from its submission to its first token, ms. */
      readonly firstTokenP50Ms: number;
      readonly firstTokenP99Ms: number;
      /** Per step, the submission's round trip (`POST …/steps` to its answer), ms. */
      readonly submitP50Ms: number;
      readonly submitP99Ms: number;
      /** Per stream, from its step's submission to the stream's response headers, ms. */
      readonly openP50Ms: number;
    }
  | {
      readonly type: 'one-done';
      /** From the submission to the `end` frame, ms. */
      readonly ms: number;
      readonly firstTokenMs: number;
      /** CPU time the clients' process used meanwhile, ms (is the client the bottleneck?). */
      readonly clientCpuMs: number;
    }
  | { readonly type: 'failed'; readonly message: string };

const api = new http.Agent({ keepAlive: true, maxSockets: 64 });
// A connection per stream, as an `EventSource` per step has it over HTTP/1.1. (Reusing them,
// keep-alive, was tried: the server then spent ~2.4× the CPU per token.) A server whose loop
// is busy accepts one connection per turn of its loop (libuv ≥ 1.45, libuv/libuv#3696),
// so the clients' arrival is slow when the server is loaded.
const streams = new http.Agent({ keepAlive: false, maxSockets: Infinity });

function send(message: ClientMessage): void {
  process.send?.(message);
}

/** POSTs `body` as JSON; resolves the JSON answer, rejects on a status ≥ 400. */
function postJson(url: string, body: unknown): Promise<Record<string, unknown>> {
  const payload = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent: api,
        headers: { 'content-type': 'application/json', 'content-length': payload.length },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          if ((res.statusCode ?? 0) >= 400)
            reject(new Error(`POST ${url}: ${res.statusCode} ${text}`));
          else resolve(JSON.parse(text) as Record<string, unknown>);
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** A stream that broke the protocol (a token out of order, an `error` event): fails the bench. */
class StreamCheckError extends Error {}

/** What one stream received. */
interface StreamResult {
  readonly tokens: number;
  /** Whether it ran to the step's `end` (otherwise it was aborted). */
  readonly ended: boolean;
  /** `performance.now()` of its response's headers, its first token and its `end` (0: none). */
  readonly openedAt: number;
  readonly firstTokenAt: number;
  readonly endAt: number;
}

/** A stream being followed. */
interface Following {
  /** Resolves once the response's headers are in. */
  readonly opened: Promise<void>;
  readonly done: Promise<StreamResult>;
  /** Closes the connection; `done` then resolves with what came (`ended: false`). */
  abort(): void;
  /** Whether its response's headers are in and it has not ended. */
  isOpen(): boolean;
}

/**
 * Follows a step's SSE stream to its `end`, checking every token: `i` is the number of
 * tokens before it, `seq` rises; rejects on the first that is not. A minimal parser of what
 * the server writes (`id:`, `event:` and `data:` lines, a blank line after each frame,
 * `:` comments).
 */
function follow(url: string, stepId: string, onToken: (first: boolean) => void): Following {
  let tokens = 0;
  let lastSeq = 0;
  let openedAt = 0;
  let firstTokenAt = 0;
  let endAt = 0;
  let rest = '';
  let failed: Error | null = null;
  let aborted = false;
  let markOpened: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (markOpened = resolve));
  const frame = (text: string, start: number, end: number): void => {
    let event = '';
    let data = '';
    let pos = start;
    while (pos < end) {
      let nl = text.indexOf('\n', pos);
      if (nl === -1 || nl > end) nl = end;
      if (text.startsWith('event:', pos)) event = text.slice(pos + 6, nl).trim();
      else if (text.startsWith('data:', pos)) data = text.slice(pos + 5, nl).trim();
      pos = nl + 1;
    }
    if (event === '') return; // a comment (`: keep-alive`)
    const body = JSON.parse(data) as { seq: number; i?: number };
    if (!(body.seq > lastSeq))
      failed ??= new StreamCheckError(`step ${stepId}: seq ${body.seq} after ${lastSeq}`);
    lastSeq = body.seq;
    if (event === 'token') {
      if (body.i !== tokens) {
        failed ??= new StreamCheckError(
          `step ${stepId}: token i ${String(body.i)} where ${tokens} was due`,
        );
      }
      if (tokens === 0) firstTokenAt = performance.now();
      tokens++;
      onToken(tokens === 1);
    } else if (event === 'end') {
      endAt = performance.now();
    } else if (event === 'error') {
      failed ??= new StreamCheckError(`step ${stepId}: error event ${data}`);
    }
  };
  let req: http.ClientRequest | null = null;
  const done = new Promise<StreamResult>((resolve, reject) => {
    const settle = (err?: Error): void => {
      markOpened();
      if (failed) reject(failed);
      else if (endAt > 0 || aborted)
        resolve({ tokens, ended: endAt > 0, openedAt, firstTokenAt, endAt });
      else reject(err ?? new Error(`step ${stepId}: the stream closed before its end`));
    };
    req = http.get(`${url}/v1/steps/${stepId}/stream`, { agent: streams }, (res) => {
      openedAt = performance.now();
      markOpened();
      if (res.statusCode !== 200) {
        failed = new Error(`step ${stepId}: the stream answered ${res.statusCode}`);
        res.resume();
        return;
      }
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const text = rest + chunk;
        let start = 0;
        for (;;) {
          const end = text.indexOf('\n\n', start);
          if (end === -1) break;
          frame(text, start, end);
          start = end + 2;
        }
        rest = text.slice(start);
      });
      res.on('error', settle);
      res.on('close', () => {
        settle();
      });
    });
    req.on('error', settle);
  });
  return {
    opened,
    done,
    abort: () => {
      aborted = true;
      req?.destroy();
    },
    isOpen: () => openedAt > 0 && endAt === 0,
  };
}

function llmCall(engine: string, tokens: number, clientToken: string): Record<string, unknown> {
  return {
    type: 'llm_call',
    client_token: clientToken,
    input: {
      engine,
      messages: [{ role: 'user', content: `stream ${clientToken}` }],
      params: { max_tokens: tokens },
    },
  };
}

/** Runs `work(i)` for each i < n, at most `limit` at once. */
async function pooled(n: number, limit: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < n) await work(next++);
  };
  await Promise.all(Array.from({ length: Math.min(limit, n) }, lane));
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;
}

async function many(command: Extract<ClientCommand, { type: 'many' }>): Promise<ClientMessage> {
  const { url, clients, tokens, engine } = command;
  const flow = await postJson(`${url}/v1/flows`, { name: 'bench-sse' });
  // A run per client (a run takes 64 steps at once by default, and a client is a user);
  // a stream the client closes cancels its step, so the server stops when the bench does.
  const runs: string[] = [];
  await pooled(clients, 32, async (i) => {
    const run = await postJson(`${url}/v1/flows/${String(flow['flow_id'])}/runs`, {
      cancel_on_disconnect: true,
    });
    runs[i] = String(run['run_id']);
  });

  send({ type: 'phase', phase: 'started' });
  const started = performance.now();
  let received = 0;
  let live = 0;
  let windowAt = 0;
  let streamingAtWindow = 0;
  let windowStartTokens = 0;
  let windowTokens = 0;
  let windowOver = false;
  // A function, so a check after an `await` reads the flag afresh.
  const over = (): boolean => windowOver;
  let streamsEnded = 0;
  let errors = 0;
  let firstError: string | null = null;
  const firstToken: number[] = [];
  const submit: number[] = [];
  const opening: number[] = [];
  const open = new Set<Following>();
  let openSamples = 0;
  let openSum = 0;
  let sampler: NodeJS.Timeout | undefined;
  /** Opens the window (once): every client streams, or the ramp's limit has come. */
  const openWindow = (): void => {
    if (windowAt > 0) return;
    clearTimeout(rampLimit);
    windowAt = performance.now();
    streamingAtWindow = live;
    windowStartTokens = received;
    send({ type: 'phase', phase: 'all-live' });
    sampler = setInterval(() => {
      let n = 0;
      for (const f of open) if (f.isOpen()) n++;
      openSum += n;
      openSamples++;
    }, 100);
    setTimeout(() => {
      clearInterval(sampler);
      windowTokens = received - windowStartTokens;
      windowOver = true;
      send({ type: 'phase', phase: 'window-end' });
      for (const f of open) f.abort();
    }, command.windowMs);
  };
  const rampLimit = setTimeout(openWindow, command.rampLimitMs);
  /** Client `i`: a step, its stream to the end, the next step, … until the window ends. */
  const client = async (i: number, opened: () => void): Promise<void> => {
    let streaming = false;
    const onToken = (first: boolean): void => {
      received++;
      if (first && !streaming) {
        streaming = true;
        if (++live === clients) openWindow();
      }
    };
    for (let k = 0; !over(); k++) {
      const submittedAt = performance.now();
      try {
        const step = await postJson(
          `${url}/v1/runs/${runs[i] ?? ''}/steps`,
          llmCall(engine, tokens, `sse-${i}-${k}`),
        );
        submit.push(performance.now() - submittedAt);
        if (over()) break;
        const stream = follow(url, String(step['step_id']), onToken);
        open.add(stream);
        void stream.opened.then(opened);
        const r = await stream.done.finally(() => open.delete(stream));
        if (r.firstTokenAt > 0) firstToken.push(r.firstTokenAt - submittedAt);
        if (r.openedAt > 0) opening.push(r.openedAt - submittedAt);
        if (!r.ended) break;
        if (r.tokens !== tokens) {
          throw new StreamCheckError(`a stream had ${r.tokens} of ${tokens} tokens`);
        }
        streamsEnded++;
      } catch (err) {
        // A broken protocol fails the bench; a failure on the wire is counted, and the
        // client goes on with its next step (as an EventSource would reconnect).
        if (err instanceof StreamCheckError) throw err;
        errors++;
        firstError ??= err instanceof Error ? err.message : String(err);
        opened();
      }
    }
  };
  const running: Promise<void>[] = [];
  await pooled(clients, command.opening, async (i) => {
    let opened: () => void = () => undefined;
    const isOpen = new Promise<void>((resolve) => (opened = resolve));
    const c = client(i, opened);
    running.push(c);
    await Promise.race([isOpen, c]);
  });
  await Promise.all(running);
  return {
    type: 'many-done',
    rampMs: windowAt - started,
    clientsStreaming: streamingAtWindow,
    streamsOpenAvg: openSamples > 0 ? openSum / openSamples : 0,
    errors,
    firstError,
    windowTokens,
    windowMs: command.windowMs,
    streamsEnded,
    tokens: received,
    firstTokenP50Ms: percentile(firstToken, 50),
    firstTokenP99Ms: percentile(firstToken, 99),
    submitP50Ms: percentile(submit, 50),
    submitP99Ms: percentile(submit, 99),
    openP50Ms: percentile(opening, 50),
  };
}

async function one(command: Extract<ClientCommand, { type: 'one' }>): Promise<ClientMessage> {
  const { url, tokens } = command;
  const flow = await postJson(`${url}/v1/flows`, { name: 'bench-sse-one' });
  const run = await postJson(`${url}/v1/flows/${String(flow['flow_id'])}/runs`, {});
  const t = performance.now();
  const cpu = process.cpuUsage();
  const step = await postJson(`${url}/v1/runs/${String(run['run_id'])}/steps`, command.step);
  const result = await follow(url, String(step['step_id']), () => undefined).done;
  if (!result.ended || result.tokens !== tokens) {
    throw new Error(`one connection: ${result.tokens} of ${tokens} tokens`);
  }
  const used = process.cpuUsage(cpu);
  return {
    type: 'one-done',
    ms: result.endAt - t,
    firstTokenMs: result.firstTokenAt - t,
    clientCpuMs: (used.user + used.system) / 1000,
  };
}

process.on('message', (command: ClientCommand) => {
  (command.type === 'many' ? many(command) : one(command)).then(send, (err: unknown) => {
    send({ type: 'failed', message: err instanceof Error ? err.message : String(err) });
  });
});
