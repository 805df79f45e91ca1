/**
 * @module Test helpers for durable agents (issue 46): the two example agents of API.md
 * (`notebook`, `follow-up`) as the tests declare them, a runtime on a simulated clock, and a
 * way to let the runtime's background work (an actor handling its messages) catch up.
 */
import { z } from 'zod';
import { SimulatedClock } from '../../src/context/clock.js';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { DurableAgentDefinition } from '../../src/actors/durable-agent.js';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import type { RunStore } from '../../src/store/run-store.js';
import { createLogger } from '../../src/observability/logger.js';

/** API.md's `notebook`: appends each message's text to its notes; output `{ count }`. */
export const notebook = defineAgent({
  name: 'notebook',
  input: z.strictObject({ text: z.string() }),
  durable: {
    state: z.object({ notes: z.array(z.string()) }),
    initial: { notes: [] },
    version: 1,
  },
  handler: (message, actor) => {
    const notes = [...actor.state.notes, message.text];
    return { state: { notes }, output: { count: notes.length } };
  },
});

/** API.md's `follow-up`: sleeps `after_ms`, or waits for event `await`, then logs. */
export const followUp = defineAgent({
  name: 'follow-up',
  input: z.union([
    z.strictObject({ text: z.string(), after_ms: z.number().int().min(0) }),
    z.strictObject({ text: z.string(), await: z.string() }),
  ]),
  durable: {
    state: z.object({ log: z.array(z.string()) }),
    initial: { log: [] },
    version: 1,
  },
  handler: async (message, actor) => {
    let line = message.text;
    if ('after_ms' in message) {
      await actor.sleep(message.after_ms);
    } else {
      const data = await actor.waitFor(message.await, {
        schema: z.object({ answer: z.string() }),
      });
      line = `${message.text}:${data?.answer ?? ''}`;
    }
    return { state: { log: [...actor.state.log, line] }, output: { logged: line } };
  },
});

/** A runtime with `agents` on `store` (default in memory) and a simulated clock. */
export function durableRuntime(
  agents: readonly DurableAgentDefinition[],
  options: { readonly store?: RunStore; readonly clock?: SimulatedClock; maxAwake?: number } = {},
): { readonly runtime: Runtime; readonly clock: SimulatedClock } {
  const clock = options.clock ?? new SimulatedClock(Date.UTC(2026, 11, 6, 12));
  const runtime = createRuntime({
    clock,
    store: options.store ?? memoryStore(),
    agents,
    logger: createLogger({ level: 'silent' }),
    ...(options.maxAwake ? { durable: { maxAwake: options.maxAwake } } : {}),
  });
  return { runtime, clock };
}

/**
 * Waits (real time, a few ms at a time, at most `ms`) until `check` holds: the runtime's
 * background work — an actor woken, a message handled — runs meanwhile.
 */
export async function until(check: () => boolean | Promise<boolean>, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${check.toString()}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/**
 * Advances `clock` by `ms` and lets what fell due run: a timer set by work that was still
 * running when the time moved (due by then) rings at the next moves by 0.
 */
export async function advance(clock: SimulatedClock, ms: number): Promise<void> {
  clock.advance(ms);
  for (let i = 0; i < 20; i++) {
    await new Promise((resolve) => setTimeout(resolve, 2));
    clock.advance(0);
  }
}
