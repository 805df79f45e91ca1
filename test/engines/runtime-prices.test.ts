/**
 * The runtime's price table (`createRuntime({ priceTable })`, `AXON_PRICE_TABLE`): it costs
 * every engine priced from the shipped table — the default `scripted`, the engines given or
 * registered without a table of their own, an agent's calls from a worker thread — and a
 * table that would cost none of them is refused, never kept unused.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { Engine } from '../../src/engines/chat-request.js';
import { createEngineRegistry } from '../../src/engines/engine-registry.js';
import { PRICE_TABLE, extendPriceTable, type PriceTable } from '../../src/engines/price-table.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { createLlmRouter } from '../../src/orchestrator/llm-router.js';
import { createOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { UnusedPriceTableError } from '../../src/errors/unused-price-table-error.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { RuntimeOptions } from '../../src/runtime/runtime-options.js';
import type { StepRecord } from '../../src/store/records.js';
import { quietRuntime } from '../support/runtime.js';

/** $1 a prompt token and $2 a produced one for the scripted model: any call shows a cost. */
const PRICES: PriceTable = extendPriceTable(PRICE_TABLE, {
  version: 'test-prices-1',
  models: { scripted: { inputPerMTok: 1_000_000, outputPerMTok: 2_000_000 } },
});
/** Another table, which an engine may be given as its own. */
const OWN: PriceTable = extendPriceTable(PRICE_TABLE, {
  version: 'own-prices',
  models: { scripted: { inputPerMTok: 3_000_000, outputPerMTok: 0 } },
});

const runtimes: Runtime[] = [];
const dir = mkdtempSync(join(tmpdir(), 'axon-runtime-prices-'));
afterEach(async () => {
  vi.unstubAllEnvs();
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function runtime(options: RuntimeOptions): Runtime {
  const rt = quietRuntime(options);
  runtimes.push(rt);
  return rt;
}

/** An `llm_call` step on `engine` in a new run of `rt`, waited for; the stored step. */
async function llmCall(rt: Runtime, engine?: string): Promise<StepRecord> {
  const { flow } = await rt.createFlow({ name: 'priced', ast: { id: randomUUID() } });
  const run = await rt.createRun(flow.flow_id, { seed: 3 });
  const submitted = await rt.submitStep(run.run_id, {
    type: 'llm_call',
    client_token: 'priced-1',
    input: {
      messages: [{ role: 'user', content: 'Name three rivers of Europe' }],
      params: { max_tokens: 8 },
      ...(engine === undefined ? {} : { engine }),
    },
  });
  await submitted.done;
  const step = await rt.store.getStep(submitted.step_id);
  if (step?.status !== 'succeeded') throw new Error(`the step did not succeed: ${step?.status}`);
  return step;
}

/** What `step`'s tokens cost at PRICES. */
const atPrices = (step: StepRecord): number =>
  step.budget_usage.tokens_in * 1 + step.budget_usage.tokens_out * 2;

describe('createRuntime({ priceTable })', () => {
  it('costs the default scripted engine: the step’s cost and provenance show the table', async () => {
    const free = await llmCall(runtime({}));
    expect(free.budget_usage.cost_usd).toBe(0);
    expect(free.provenance?.price_table).toBe(PRICE_TABLE.version);

    const step = await llmCall(runtime({ priceTable: PRICES }));
    expect(step.budget_usage.tokens_out).toBe(8);
    expect(step.budget_usage.cost_usd).toBeCloseTo(atPrices(step), 9);
    expect(step.budget_usage.cost_usd).toBeGreaterThan(16);
    expect(step.provenance).toMatchObject({
      price_table: 'test-prices-1',
      cost_usd: step.budget_usage.cost_usd,
    });
  });

  it('costs an engine given, or registered later, without a table of its own; one with its own keeps it', async () => {
    const rt = runtime({
      priceTable: PRICES,
      engines: [
        createScriptedEngine({ name: 'mine', tokenDelayMs: 0 }),
        createScriptedEngine({ name: 'owned', tokenDelayMs: 0, priceTable: OWN }),
      ],
    });
    rt.registerEngine(createScriptedEngine({ name: 'later', tokenDelayMs: 0 }));
    for (const name of ['mine', 'later']) {
      const step = await llmCall(rt, name);
      expect(step.provenance?.price_table, name).toBe('test-prices-1');
      expect(step.budget_usage.cost_usd, name).toBeCloseTo(atPrices(step), 9);
    }
    const owned = await llmCall(rt, 'owned');
    expect(owned.provenance?.price_table).toBe('own-prices');
    expect(owned.budget_usage.cost_usd).toBeCloseTo(owned.budget_usage.tokens_in * 3, 9);
  });

  it('costs the calls an agent makes from a worker thread (they are made on the host)', async () => {
    const chatter = defineAgent({
      name: 'chatter',
      placement: 'worker',
      module: new URL('../fixtures/worker-agents.ts', import.meta.url).href,
      export: 'chatter',
    });
    const rt = runtime({ priceTable: PRICES, agents: [chatter], workers: { maxThreads: 1 } });
    const { flow } = await rt.createFlow({ name: 'thread', ast: { id: randomUUID() } });
    const run = await rt.createRun(flow.flow_id, {});
    const submitted = await rt.submitStep(run.run_id, {
      type: 'agent',
      client_token: 'w-1',
      input: { agent: 'chatter', message: 'Hello from a thread' },
    });
    await submitted.done;
    const step = await rt.store.getStep(submitted.step_id);
    expect(step?.status).toBe('succeeded');
    expect(step?.placement).toBe('worker');
    expect(step?.budget_usage.tokens_out).toBe(6);
    expect(step?.budget_usage.cost_usd).toBeCloseTo(atPrices(step as StepRecord), 9);
    expect(step?.provenance?.price_table).toBe('test-prices-1');
  });

  it('costs the LLM router’s calls: they count against the run’s cost budget and are recorded at their price', async () => {
    const route = async (priceTable?: PriceTable) => {
      const writer = defineAgent({ name: 'writer', description: 'writes', handler: () => 'ok' });
      const rt = runtime({
        agents: [writer],
        engines: [
          createScriptedEngine({
            tokenDelayMs: 0,
            script: () => '{"handler": "writer", "confidence": 1}',
          }),
        ],
        ...(priceTable ? { priceTable } : {}),
      });
      const door = createOrchestrator({
        runtime: rt,
        memory: false,
        router: createLlmRouter({
          handlers: {
            handlers: () => Promise.resolve([{ name: 'writer', description: 'writes' }]),
          },
          chat: rt.chat.bind(rt),
          maxTokens: 16,
        }),
      });
      const { flow } = await rt.createFlow({ name: 'routed', ast: { id: randomUUID() } });
      const run = await rt.createRun(flow.flow_id, { budgets: { max_cost_usd: 500 } });
      const out = await door.handle('Write something', {
        context: { userId: 'ann', sessionId: 's' },
        run: { runId: run.run_id, clientToken: 'req-1' },
      });
      return { out, recordings: await rt.listRecordings(run.run_id) };
    };
    // Free, the router's call fits the budget and is recorded at cost 0.
    const free = await route();
    expect(free.out.route?.bestHandler).toBe('writer');
    expect(free.recordings[0]?.output).toMatchObject({ cost_usd: 0 });
    // At $1 a prompt token and $2 a produced one, the same call costs its tokens.
    const small = await route(
      extendPriceTable(PRICE_TABLE, {
        version: 'cheap',
        models: { scripted: { inputPerMTok: 1_000_000, outputPerMTok: 2_000_000 } },
      }),
    );
    expect(small.out.route?.bestHandler).toBe('writer');
    const output = small.recordings[0]?.output as { tokens_in: number; tokens_out: number };
    expect(small.recordings[0]?.output).toMatchObject({
      cost_usd: output.tokens_in + 2 * output.tokens_out,
    });
    // At a price the run's $500 cannot pay, routing is refused before the model is asked.
    const dear = await route(
      extendPriceTable(PRICE_TABLE, {
        version: 'dear',
        models: { scripted: { inputPerMTok: 100_000_000, outputPerMTok: 100_000_000 } },
      }),
    );
    expect(dear.out.error).toMatchObject({ code: 'BUDGET_EXCEEDED' });
    expect(dear.out.route).toBeNull();
  });

  it('refuses a table no engine would be costed from, naming the engines that have their own', () => {
    const own = (name: string): Engine =>
      createScriptedEngine({ name, tokenDelayMs: 0, priceTable: OWN });
    let thrown: unknown = null;
    try {
      quietRuntime({ priceTable: PRICES, engines: [own('scripted'), own('other')] });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(UnusedPriceTableError);
    expect(thrown).toMatchObject({
      code: 'INVALID_PARAMS',
      source: 'createRuntime: priceTable',
      version: 'test-prices-1',
      engines: ['scripted', 'other'],
    });
    expect((thrown as Error).message).toMatch(/prices no engine/);
  });

  it('refuses a bad table, naming the entry', () => {
    const bad = { version: 'bad', models: { scripted: { inputPerMTok: -1, outputPerMTok: 0 } } };
    expect(() => quietRuntime({ priceTable: bad })).toThrow(
      /createRuntime: priceTable\.models\["scripted"\]\.inputPerMTok must be a number >= 0/,
    );
  });
});

describe('AXON_PRICE_TABLE', () => {
  function pricesFile(): string {
    const file = join(dir, `${randomUUID()}.yaml`);
    writeFileSync(
      file,
      'version: env-prices-1\nmodels:\n  scripted: { inputPerMTok: 1000000, outputPerMTok: 2000000 }\n',
    );
    return file;
  }

  it('costs the default scripted engine without AXON_ENGINE_URL', async () => {
    vi.stubEnv('AXON_ENGINE_URL', '');
    vi.stubEnv('AXON_PRICE_TABLE', pricesFile());
    const step = await llmCall(runtime({}));
    expect(step.provenance?.price_table).toBe('env-prices-1');
    expect(step.budget_usage.cost_usd).toBeCloseTo(atPrices(step), 9);
  });

  it('gives way to createRuntime’s priceTable', async () => {
    vi.stubEnv('AXON_PRICE_TABLE', pricesFile());
    const step = await llmCall(runtime({ priceTable: OWN }));
    expect(step.provenance?.price_table).toBe('own-prices');
  });

  it('costs the environment’s openai engine too, and is refused when it would cost nothing', () => {
    const file = pricesFile();
    const registry = createEngineRegistry([], {
      env: { AXON_ENGINE_URL: 'http://127.0.0.1:9/v1', AXON_PRICE_TABLE: file },
    });
    expect(registry.names()).toEqual(['openai', 'scripted']);
    for (const name of registry.names()) {
      expect(registry.get(name).priceTable.version, name).toBe('env-prices-1');
    }
    const owned = createScriptedEngine({ tokenDelayMs: 0, priceTable: OWN });
    expect(() => createEngineRegistry([owned], { env: { AXON_PRICE_TABLE: file } })).toThrow(
      UnusedPriceTableError,
    );
    expect(() => createEngineRegistry([owned], { env: { AXON_PRICE_TABLE: file } })).toThrow(
      /^AXON_PRICE_TABLE \(price table "env-prices-1"\) prices no engine/,
    );
  });

  it('refuses a file that is not a price table, even with no AXON_ENGINE_URL', () => {
    const file = join(dir, `${randomUUID()}.yaml`);
    writeFileSync(
      file,
      'version: v\nmodels:\n  scripted: { inputPerMTok: -2, outputPerMTok: 0 }\n',
    );
    vi.stubEnv('AXON_ENGINE_URL', '');
    vi.stubEnv('AXON_PRICE_TABLE', file);
    expect(() => quietRuntime({})).toThrow(RangeError);
    expect(() => quietRuntime({})).toThrow(/models\.scripted\.inputPerMTok/);
  });
});
