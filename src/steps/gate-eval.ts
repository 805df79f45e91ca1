/**
 * @module The `gate_eval` step of API.md: has the run enough facts of a kind? It counts the
 * run's facts of `fact_type` whose `data` has every field of `where` (each compared as
 * canonical JSON), and ends with `{ passed }`: at least `min_count` (default 1) of them.
 * With `wait_ms`, a gate that has not passed yet waits that long for more facts, reading the
 * store again every {@link GATE_POLL_MS} (facts may come from another process sharing the
 * store), and ends with `passed: false` if they do not come. A cancel or timeout ends the
 * wait at once.
 */
import { z } from 'zod';
import { canonicalJson } from '../context/canonical-json.js';
import type { Clock } from '../context/clock.js';
import type { ExecContext } from '../context/exec-context.js';
import type { FactRecord } from '../store/records.js';
import type { RunStore } from '../store/run-store.js';
import { runStep } from '../runs/step-runner.js';
import type { StepOutcome, StepRunnerDeps, StepSubmission } from '../runs/step-request.js';

/** How often a waiting gate reads the run's facts again, in milliseconds. */
export const GATE_POLL_MS = 25;

/** The input of a `gate_eval` step (API.md). */
export const gateEvalInputSchema = z
  .object({
    fact_type: z.string().min(1),
    where: z.record(z.string(), z.unknown()).optional(),
    min_count: z.number().int().nonnegative().optional(),
    wait_ms: z.number().int().nonnegative().max(3_600_000).optional(),
  })
  .strict();
export type GateEvalInput = z.infer<typeof gateEvalInputSchema>;

/** Whether `fact`'s data has every field of `where`, with an equal value. */
function matches(fact: FactRecord, where: Readonly<Record<string, unknown>>): boolean {
  const data = fact.data;
  if (typeof data !== 'object' || data === null) return Object.keys(where).length === 0;
  for (const [key, value] of Object.entries(where)) {
    const actual = (data as Record<string, unknown>)[key];
    if (actual === undefined || canonicalJson(actual) !== canonicalJson(value)) return false;
  }
  return true;
}

/** How many of the run's facts pass the gate's filter. */
async function countFacts(store: RunStore, runId: string, input: GateEvalInput): Promise<number> {
  const facts = await store.listFacts({ runId, type: input.fact_type });
  const where = input.where ?? {};
  return facts.filter((f) => matches(f, where)).length;
}

/** Resolves after `ms` on `clock`, or at once when `ctx` is cancelled. */
function pause(clock: Clock, ms: number, ctx: ExecContext): Promise<void> {
  return new Promise((resolve) => {
    const timer = clock.setTimeout(() => {
      off();
      resolve();
    }, ms);
    const off = ctx.onCancel(() => {
      clock.clearTimeout(timer);
      resolve();
    });
  });
}

/** Runs a `gate_eval` step in run `runId`. Rejects only when the step could not begin. */
export function runGateEvalStep(
  steps: StepRunnerDeps,
  input: GateEvalInput,
  ctx: ExecContext,
  runId: string,
  submission?: StepSubmission,
): Promise<StepOutcome> {
  const clock = steps.system.clock;
  const minCount = input.min_count ?? 1;
  return runStep(steps, {
    type: 'gate_eval',
    // The span reads `gate_eval booking`; the trace tree `gate_eval booking`.
    name: input.fact_type,
    input,
    runId,
    parentCtx: ctx,
    timeoutMs: null,
    operation: 'gate_eval',
    submission,
    execute: async (stepCtx) => {
      const until = clock.now() + (input.wait_ms ?? 0);
      for (;;) {
        if ((await countFacts(steps.store, runId, input)) >= minCount) return { passed: true };
        const left = until - clock.now();
        if (left <= 0 || stepCtx.isCancelled()) return { passed: false };
        await pause(clock, Math.min(GATE_POLL_MS, left), stepCtx);
      }
    },
  });
}
