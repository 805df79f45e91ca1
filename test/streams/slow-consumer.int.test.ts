import { afterEach, describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { MemoryRunStore } from '../../src/store/memory/memory-store.js';
import type { StepEnd } from '../../src/store/run-store.js';
import type { StepEvent } from '../../src/streams/events.js';
import { quietRuntime } from '../support/runtime.js';

/**
 * A store that checks and counts appended events but keeps none, so the heap measures what
 * the stream itself holds (a real store keeps its log, on disk or in Redis).
 */
class CountingStore extends MemoryRunStore {
  tokens = 0;
  override appendEvents(events: readonly StepEvent[]): Promise<void> {
    for (const e of events) if (e.type === 'token') this.tokens++;
    return Promise.resolve();
  }
  /** A step's end: its record, not its last events (its log is not kept). */
  override endStep(end: StepEnd): Promise<void> {
    for (const e of end.events) if (e.type === 'token') this.tokens++;
    return super.endStep({ ...end, events: [] });
  }
}

/** Spins for `us` microseconds: a consumer doing real work on each event. */
function work(us: number): void {
  const until = performance.now() + us / 1000;
  while (performance.now() < until) {
    // busy
  }
}

const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
});

describe('STREAM-2003: a slow consumer', () => {
  it('one million tokens to a consumer ten times slower: heap stays bounded, none lost, in order', async () => {
    const N = 1_000_000;
    const producer = defineAgent({
      name: 'producer',
      timeoutMs: 600_000,
      handler: async function* () {
        for (let i = 0; i < N; i++) yield 't';
        return 'done';
      },
    });
    const store = new CountingStore();
    const runtime = quietRuntime({ agents: [producer], store });
    runtimes.push(runtime);

    // The pipeline's own cost per token, with a consumer that does nothing: the fastest of
    // ten windows, so a burst of other work on a shared machine (CI runs test files side by
    // side) does not inflate it, and with it the consumer's delay and the test's length.
    const window = 10_000;
    let perTokenUs = Infinity;
    let seen = 0;
    let windowStart = performance.now();
    const probe = runtime.stream('producer', 'go');
    for await (const { event } of probe) {
      if (event.type !== 'token' || ++seen % window !== 0) continue;
      const now = performance.now();
      perTokenUs = Math.min(perTokenUs, ((now - windowStart) * 1000) / window);
      windowStart = now;
      if (seen === 10 * window) break;
    }
    const consumerUs = 10 * perTokenUs;
    probe.cancel();
    expect((await probe.result).error?.code).toBe('CANCELLED');
    store.tokens = 0;

    global.gc?.();
    const baseline = process.memoryUsage().heapUsed;
    let peak = baseline;
    let expected = 0;
    let outOfOrder = 0;
    const stream = runtime.stream('producer', 'go', undefined, { capacity: 256 });
    for await (const { event } of stream) {
      if (event.type !== 'token') continue;
      if (event.i !== expected) outOfOrder++;
      expected++;
      // Ten times the pipeline's own cost per token, in batches the clock can measure, and
      // a turn of the event loop like a socket write: without backpressure, the producer's
      // microtasks would run far ahead while the consumer waits.
      if (expected % 16 === 0) {
        work(16 * consumerUs);
        await new Promise((resolve) => setImmediate(resolve));
      }
      if (expected % 50_000 === 0) peak = Math.max(peak, process.memoryUsage().heapUsed);
    }
    const result = await stream.result;
    expect(result.status).toBe('success');
    expect(expected).toBe(N);
    expect(outOfOrder).toBe(0);
    expect(stream.dropped).toBe(0);
    expect(store.tokens).toBe(N);
    // Generous: a million queued token events would take several hundred MB. The bound
    // leaves room for a garbage collector that lags on a loaded machine (a CI run beside
    // other work once read 71 MB here, against about 13 MB measured by bench:stream).
    expect(peak - baseline).toBeLessThan(128 * 1024 * 1024);
  }, 300_000);

  it('across a thread: a worker producer waits for credit while the host consumer is behind', async () => {
    const N = 200_000;
    const store = new CountingStore();
    const streamer = defineAgent({
      name: 'streamer',
      placement: 'worker',
      module: new URL('../fixtures/worker-agents.ts', import.meta.url).href,
      export: 'streamer',
      timeoutMs: 600_000,
    });
    const runtime = quietRuntime({ agents: [streamer], store, workers: { maxThreads: 1 } });
    runtimes.push(runtime);
    global.gc?.();
    const baseline = process.memoryUsage().heapUsed;
    let peak = baseline;
    let expected = 0;
    let outOfOrder = 0;
    const stream = runtime.stream('streamer', { message: 'go', args: { n: N } }, undefined, {
      capacity: 256,
    });
    for await (const { event } of stream) {
      if (event.type !== 'token') continue;
      if (event.t !== `t${expected}`) outOfOrder++;
      expected++;
      if (expected % 16 === 0) await new Promise((resolve) => setImmediate(resolve));
      if (expected % 20_000 === 0) peak = Math.max(peak, process.memoryUsage().heapUsed);
    }
    expect((await stream.result).status).toBe('success');
    expect(expected).toBe(N);
    expect(outOfOrder).toBe(0);
    expect(store.tokens).toBe(N);
    expect(peak - baseline).toBeLessThan(128 * 1024 * 1024);
  });
});
