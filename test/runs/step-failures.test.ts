import { describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import { MemoryRunStore } from '../../src/store/memory/memory-store.js';
import type { StepEnd } from '../../src/store/run-store.js';
import type { StepEvent } from '../../src/streams/events.js';
import { quietRuntime, settle } from '../support/runtime.js';
import { watchUnexpectedErrors } from '../support/unexpected-errors.js';

/** The real in-memory store, whose log can be made to refuse appends (a lost connection). */
class FlakyLogStore extends MemoryRunStore {
  failing = false;
  override appendEvents(events: readonly StepEvent[]): Promise<void> {
    if (this.failing) return Promise.reject(new Error('log connection lost'));
    return super.appendEvents(events);
  }
}

describe('a log that refuses appends', () => {
  const unexpected = watchUnexpectedErrors();

  it('fails the step with the store error, publishes nothing unlogged, and the runtime recovers', async () => {
    const store = new FlakyLogStore();
    const seen: StepEvent[] = [];
    const writer = defineAgent({
      name: 'writer',
      async *handler() {
        yield 'logged ';
        await new Promise<void>((resolve) => setImmediate(resolve));
        store.failing = true;
        yield 'lost ';
        await new Promise<void>((resolve) => setImmediate(resolve));
        yield 'never';
      },
    });
    const echo = defineAgent({ name: 'echo', handler: (i) => i.message });
    const runtime = quietRuntime({ agents: [writer, echo], store });
    const stream = runtime.stream('writer', 'go');
    for await (const { event } of stream) seen.push(event);
    const result = await stream.result;
    expect(result.status).toBe('error');
    expect(result.error?.code).toBe('INTERNAL');
    expect(result.error?.message).toBe('log connection lost');
    // Everything a subscriber saw is in the log, and nothing after the failure was seen.
    const log = await store.readEvents(result.stepId);
    expect(seen).toEqual(log);
    expect(log.map((e) => e.type)).toEqual(['started', 'token']);
    const step = await store.getStep(result.stepId);
    expect(step).toMatchObject({
      status: 'failed',
      error: { code: 'INTERNAL', message: 'log connection lost' },
    });
    store.failing = false;
    await expect(runtime.invoke('echo', 'back')).resolves.toMatchObject({
      status: 'success',
      output: 'back',
    });
    await settle();
    expect(unexpected).toEqual([]);
  });
});

/** The real in-memory store, whose end writes refuse their last events (a log gone on without them). */
class EndRefusingStore extends MemoryRunStore {
  override endStep(end: StepEnd): Promise<void> {
    if (end.events.length > 0) return Promise.reject(new Error('the log went on without them'));
    return super.endStep(end);
  }
}

describe("a step's end whose last events the log refuses", () => {
  it('ends its record failed all the same, without them; what the submission says is what the record holds', async () => {
    const store = new EndRefusingStore();
    const ok = defineAgent({ name: 'ok', handler: () => 'fine' });
    const runtime = quietRuntime({ agents: [ok], store });
    const { flow } = await runtime.createFlow({ name: 'f' });
    const run = await runtime.createRun(flow.flow_id);
    const submitted = await runtime.submitStep(run.run_id, {
      type: 'agent',
      input: { agent: 'ok', message: 'x' },
    });
    expect(await submitted.done).toBe('failed');
    const record = await store.getStep(submitted.step_id);
    expect(record).toMatchObject({
      status: 'failed',
      output: null,
      error: { message: 'the log went on without them' },
    });
    expect(await submitted.ended).toEqual({
      status: 'failed',
      output: null,
      error: record?.error,
    });
    // Its `end` never reached the log.
    expect((await store.readEvents(submitted.step_id)).map((e) => e.type)).toEqual(['started']);
    await runtime.close();
  });
});

describe("a handler's own sink", () => {
  it('refuses pushes after the handler closed it; the step itself still ends normally', async () => {
    const closer = defineAgent({
      name: 'closer',
      handler: (_i, ctx) => {
        ctx.stream.push('one');
        ctx.stream.close();
        expect(ctx.stream.closed).toBe(true);
        try {
          ctx.stream.push('two');
        } catch (err) {
          return (err as { code: string }).code;
        }
        return 'accepted';
      },
    });
    const runtime = quietRuntime({ agents: [closer] });
    const result = await runtime.invoke('closer', 'x');
    expect(result).toMatchObject({ status: 'success', output: 'CONFLICT' });
    const log = await runtime.store.readEvents(result.stepId);
    expect(log.map((e) => e.type)).toEqual(['started', 'token', 'end']);
  });
});
