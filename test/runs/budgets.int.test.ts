import { describe, expect, it } from 'vitest';
import { createOpenAIEngine } from '../../src/engines/openai-engine.js';
import { configuredPolicy } from '../../src/policy/configured-policy.js';
import type { WireBudgets } from '../../src/store/records.js';
import { quietRuntime } from '../support/runtime.js';
import { useTestResources } from '../support/test-resources.js';

const resources = useTestResources('budgets');

/**
 * A runtime whose `openai` engine is the OpenAI binding against the local OpenAI-compatible
 * server, priced at one dollar a token so that cost limits bite.
 */
function runtime() {
  return quietRuntime({
    engines: [
      createOpenAIEngine({
        baseURL: resources.server.baseURL,
        model: 'scripted',
        maxRetries: 0,
        priceTable: {
          version: 'test-dollar-a-token',
          models: { scripted: { inputPerMTok: 1_000_000, outputPerMTok: 1_000_000 } },
        },
      }),
    ],
  });
}

/** An `llm_call` on the OpenAI binding asking for 8 tokens out. */
const call = (budgets?: WireBudgets) => ({
  type: 'llm_call',
  input: {
    engine: 'openai',
    messages: [{ role: 'user', content: 'plan a trip to Lisbon' }],
    params: { max_tokens: 8 },
  },
  ...(budgets ? { budgets } : {}),
});

describe('POLICY-3000: every run and step budget is hard: past it, no call is made', () => {
  it.each([
    ['run', 'max_tokens_out', 5],
    ['run', 'max_tokens_in', 1],
    ['run', 'max_cost_usd', 0.5],
    ['step', 'max_tokens_out', 5],
    ['step', 'max_tokens_in', 1],
    ['step', 'max_cost_usd', 0.5],
  ] as const)(
    "a %s's %s too small for the call ends the step BUDGET_EXCEEDED before any request",
    async (level, limit, value) => {
      const rt = runtime();
      const { flow } = await rt.createFlow({ name: 'budgets', ast: { level, limit } });
      const budgets: WireBudgets = { [limit]: value };
      const run = await rt.createRun(flow.flow_id, level === 'run' ? { budgets } : {});
      const requests = resources.server.requests.length;
      const step = await rt.submitStep(run.run_id, call(level === 'step' ? budgets : undefined));
      await step.done;
      expect(await rt.getStep(step.step_id)).toMatchObject({
        status: 'failed',
        error: { code: 'BUDGET_EXCEEDED', details: { limit } },
        budget_usage: { tokens_in: 0, tokens_out: 0, cost_usd: 0 },
      });
      expect(resources.server.requests.length).toBe(requests);
      // No token: the refusal is escalated (POLICY-3002), then the step ends.
      const log = await rt.readStepEvents(step.step_id);
      expect(log.map((e) => e.type)).toEqual(['started', 'escalation', 'error']);
      await rt.close();
    },
  );

  it('budgets that fit let the call through, and what it spent is the run’s and the step’s usage', async () => {
    const rt = runtime();
    const { flow } = await rt.createFlow({ name: 'budgets', ast: { fits: true } });
    const run = await rt.createRun(flow.flow_id, {
      budgets: { max_tokens_out: 100, max_tokens_in: 100, max_cost_usd: 1_000 },
    });
    const requests = resources.server.requests.length;
    const step = await rt.submitStep(run.run_id, call({ max_tokens_out: 8, max_cost_usd: 500 }));
    await step.done;
    const done = await rt.getStep(step.step_id);
    expect(done).toMatchObject({ status: 'succeeded', budget_usage: { tokens_out: 8 } });
    expect(done?.budget_usage.cost_usd).toBeGreaterThan(8);
    expect(resources.server.requests.length).toBe(requests + 1);
    expect((await rt.getRun(run.run_id))?.budget_usage).toMatchObject({
      tokens_out: 8,
      cost_usd: done?.budget_usage.cost_usd,
    });
    await rt.close();
  });
});

describe('an unpriced model under a cost budget fails closed (POLICY-3000)', () => {
  /** The OpenAI binding for a model its price table does not know. */
  const unpriced = (priceTable?: { version: string; models: Record<string, never> }) =>
    createOpenAIEngine({
      baseURL: resources.server.baseURL,
      model: 'mystery-7b',
      maxRetries: 0,
      ...(priceTable ? { priceTable } : {}),
    });

  it('a run with max_cost_usd refuses the call before any request, naming the model', async () => {
    const rt = quietRuntime({ engines: [unpriced()] });
    const { flow } = await rt.createFlow({ name: 'unpriced', ast: { cost: true } });
    const run = await rt.createRun(flow.flow_id, { budgets: { max_cost_usd: 5 } });
    const requests = resources.server.requests.length;
    const step = await rt.submitStep(run.run_id, call());
    await step.done;
    expect(await rt.getStep(step.step_id)).toMatchObject({
      status: 'failed',
      error: {
        code: 'BUDGET_EXCEEDED',
        retriable: false,
        details: { model: 'mystery-7b', engine: 'openai', limit: 'max_cost_usd' },
      },
    });
    expect((await rt.getStep(step.step_id))?.error?.message).toContain('"mystery-7b"');
    expect(resources.server.requests.length).toBe(requests);
    const log = await rt.readStepEvents(step.step_id);
    expect(log.map((e) => e.type)).toEqual(['started', 'escalation', 'error']);
    await rt.close();
  });

  it('without a cost budget the call goes through, costing 0', async () => {
    const rt = quietRuntime({ engines: [unpriced()] });
    const { flow } = await rt.createFlow({ name: 'unpriced', ast: { cost: false } });
    const run = await rt.createRun(flow.flow_id, { budgets: { max_tokens_out: 100 } });
    const step = await rt.submitStep(run.run_id, call());
    await step.done;
    expect(await rt.getStep(step.step_id)).toMatchObject({
      status: 'succeeded',
      budget_usage: { tokens_out: 8, cost_usd: 0 },
    });
    await rt.close();
  });

  it("a policy's cost_per_day is a cost budget too: the unpriced call is refused", async () => {
    const rt = quietRuntime({
      engines: [unpriced()],
      policy: configuredPolicy({
        budgets: { per_agent: { default: { cost_per_day: 10, on_exceed: 'block' } } },
      }),
    });
    const { flow } = await rt.createFlow({ name: 'unpriced', ast: { policy: true } });
    const run = await rt.createRun(flow.flow_id);
    const requests = resources.server.requests.length;
    const step = await rt.submitStep(run.run_id, call());
    await step.done;
    expect(await rt.getStep(step.step_id)).toMatchObject({
      status: 'failed',
      error: { code: 'BUDGET_EXCEEDED', details: { model: 'mystery-7b', limit: 'cost_per_day' } },
    });
    expect(resources.server.requests.length).toBe(requests);
    await rt.close();
  });
});
