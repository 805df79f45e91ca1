/** @module Test helpers: a quiet runtime and ways to wait without real sleeps. */
import { createRuntime, type RuntimeOptions, type Runtime } from '../../src/runtime/runtime.js';
import { createLogger } from '../../src/observability/logger.js';

/** A runtime whose logs are silent. */
export function quietRuntime(options: RuntimeOptions = {}): Runtime {
  return createRuntime({ logger: createLogger({ level: 'silent' }), ...options });
}

/** Lets pending promise callbacks and immediates run `turns` times. */
export async function settle(turns = 10): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Resolves once `predicate` holds, checking after each event-loop turn (at most `turns`). */
export async function until(predicate: () => boolean, turns = 1000): Promise<void> {
  for (let i = 0; i < turns; i++) {
    if (predicate()) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  throw new Error('condition not reached');
}
