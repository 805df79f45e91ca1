/**
 * A client that never reads (STREAM-2003): a raw socket asks for the stream of a step that
 * produces 200 000 tokens (and a fact every 1 000) as fast as it can, and then does not read.
 * The server's memory must stay bounded — it writes a frame only when the socket drains, and
 * the step's log is on disk, read a page at a time — and once the client reads, it gets every
 * token and every fact, in order.
 */
import net from 'node:net';
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import { parseSse, useTestServers } from '../support/server.js';

const servers = useTestServers('server-slow');
const TOKENS = 200_000;
const FACT_EVERY = 1_000;
const MiB = 1024 * 1024;

/** Yields `args.tokens` tokens as fast as it can, emitting a fact every {@link FACT_EVERY}. */
const flood = defineAgent({
  name: 'flood',
  async *handler(input, ctx, runtime) {
    const tokens = Number(input.args?.['tokens']);
    for (let i = 0; i < tokens; i++) {
      if (i % FACT_EVERY === 0) await runtime.emitFact({ type: 'progress', data: { i } }, ctx);
      yield ` t${i}`;
    }
    return 'flooded';
  },
});

/** A full garbage collection, when one can be asked for; `null` when not. */
function collector(): (() => void) | null {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed) return exposed;
  try {
    v8.setFlagsFromString('--expose-gc');
    return vm.runInNewContext('gc') as () => void;
  } catch {
    return null;
  }
}

/** The heap in use now: after a full collection when possible, else the least of a few samples. */
async function heapUsed(gc: (() => void) | null): Promise<number> {
  if (gc) {
    gc();
    return process.memoryUsage().heapUsed;
  }
  let least = Infinity;
  for (let i = 0; i < 5; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    least = Math.min(least, process.memoryUsage().heapUsed);
  }
  return least;
}

/** The body of a chunked HTTP/1.1 response, decoded. */
function dechunk(raw: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = raw.indexOf('\r\n', at);
    const size = parseInt(raw.subarray(at, eol).toString('latin1'), 16);
    if (!(size > 0)) break;
    parts.push(raw.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

describe('a stream whose client never reads', () => {
  it('STREAM-2003: holds the server heap bounded while 200 000 tokens are produced, then delivers every token and fact in order', async () => {
    const s = await servers.start({ tokenDelayMs: 0, runtime: { agents: [flood] } });
    const gc = collector();
    const run = await s.newRun({ seed: 9 });
    const baseline = await heapUsed(gc);

    const stepId = await s.submit(run.run_id, {
      type: 'agent',
      input: { agent: 'flood', message: 'go', args: { tokens: TOKENS } },
    });
    const { hostname, port } = new URL(s.url);
    const socket = net.connect(Number(port), hostname);
    const received: Buffer[] = [];
    let receivedBytes = 0;
    socket.on('data', (chunk: Buffer) => {
      received.push(chunk);
      receivedBytes += chunk.length;
    });
    socket.pause();
    socket.write(
      `GET /v1/steps/${stepId}/stream HTTP/1.1\r\nHost: ${hostname}\r\nConnection: close\r\n\r\n`,
    );
    const closed = new Promise<void>((resolve) =>
      socket.on('close', () => {
        resolve();
      }),
    );

    // The step runs to its end while the client reads nothing.
    await expect
      .poll(
        async () => ((await s.api('GET', `/v1/steps/${stepId}`)).body as { status: string }).status,
        {
          timeout: 120_000,
          interval: 100,
        },
      )
      .toBe('succeeded');
    const after = await heapUsed(gc);
    const growth = after - baseline;
    expect(receivedBytes).toBe(0);
    expect(
      growth,
      `heap grew ${(growth / MiB).toFixed(1)} MiB (gc ${gc ? 'used' : 'unavailable'})`,
    ).toBeLessThan(50 * MiB);
    // The whole stream is far larger than what the heap grew by: it was not held in memory.
    const log = await s.runtime.readStepEvents(stepId, TOKENS + 1);
    expect(log.at(-1)?.type).toBe('end');

    socket.resume();
    await closed;
    const raw = Buffer.concat(received);
    const headEnd = raw.indexOf('\r\n\r\n');
    expect(raw.subarray(0, headEnd).toString('latin1')).toMatch(/^HTTP\/1.1 200/);
    const { frames } = parseSse(dechunk(raw.subarray(headEnd + 4)).toString('utf8'));
    const tokens = frames.filter((f) => f.event === 'token');
    expect(tokens).toHaveLength(TOKENS);
    let i = 0;
    for (const t of tokens) {
      if (t.data['i'] !== i || t.data['t'] !== ` t${i}`) {
        throw new Error(`token ${i} arrived as ${JSON.stringify(t.data)}`);
      }
      i++;
    }
    const facts = frames.filter((f) => f.event === 'fact');
    expect(facts.map((f) => (f.data['data'] as { i: number }).i)).toEqual(
      Array.from({ length: TOKENS / FACT_EVERY }, (_, k) => k * FACT_EVERY),
    );
    // Seqs only grow; only metrics or narration may be missing (dropped under pressure).
    const seqs = frames.map((f) => Number(f.id));
    for (let k = 1; k < seqs.length; k++) {
      if (!((seqs[k] ?? 0) > (seqs[k - 1] ?? 0)))
        throw new Error(`seq ${seqs[k]} after ${seqs[k - 1]}`);
    }
    const logged = await s.runtime.readStepEvents(stepId);
    const delivered = new Set(seqs);
    const missing = logged.filter((e) => !delivered.has(e.seq)).map((e) => e.type);
    expect(missing.filter((t) => t !== 'metrics' && t !== 'narration')).toEqual([]);
    expect(frames[0]?.event).toBe('started');
    expect(frames.at(-1)?.event).toBe('end');
  });
});
