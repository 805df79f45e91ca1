/**
 * axon.yaml's `prices` on a real `axon serve`: with no `openai` engine configured it is not
 * kept for an engine that is not there but costs every engine the server has — the scripted
 * default (an `llm_call`), the examples' own (the trip planner's summary) and the example
 * workflow's (code-review's engine roles) — as the steps and the thread read over HTTP show;
 * with one, that engine too. `axon worker` builds its runtime from the same options.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startOpenAICompatibleServer } from '../../../src/engines/openai-compatible-server.js';
import { configuredRuntimeOptions } from '../../../src/cli/serve/serve-command.js';
import { loadServeConfig } from '../../../src/cli/serve/serve-config.js';
import { createLogger } from '../../../src/observability/logger.js';
import { serveOnFreePort } from '../../support/serve-cli.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), `axon-serve-prices-${randomUUID().slice(0, 8)}-`));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

interface Step {
  readonly status: string;
  readonly budget_usage: { tokens_in: number; tokens_out: number; cost_usd: number };
  readonly provenance: { price_table: string | null } | null;
}

async function json<T>(url: string, body?: unknown): Promise<T> {
  const res = await fetch(url, {
    method: body === undefined ? 'GET' : 'POST',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (res.status >= 300) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** Submits `step` to a new run of the server at `url` and resolves the step once it ended. */
async function stepOn(url: string, step: Record<string, unknown>): Promise<Step> {
  const flow = await json<{ flow_id: string }>(`${url}/v1/flows`, {
    name: 'priced',
    ast: { id: randomUUID() },
  });
  const run = await json<{ run_id: string }>(`${url}/v1/flows/${flow.flow_id}/runs`, {});
  const { step_id } = await json<{ step_id: string }>(`${url}/v1/runs/${run.run_id}/steps`, {
    client_token: randomUUID(),
    ...step,
  });
  for (let i = 0; i < 1000; i++) {
    const s = await json<Step>(`${url}/v1/steps/${step_id}`);
    if (!['queued', 'running'].includes(s.status)) return s;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`step ${step_id} did not end`);
}

/** What `usage` costs at $1 a prompt token and $2 a produced one. */
const priced = (u: { tokens_in: number; tokens_out: number }): number =>
  u.tokens_in + 2 * u.tokens_out;

describe('axon serve with prices', () => {
  it('without an openai engine, costs the scripted engine, the examples’ engine and the workflow’s engine from the table', async () => {
    writeFileSync(
      join(dir, 'axon.yaml'),
      [
        'prices:',
        '  version: yaml-prices-1',
        '  models:',
        '    scripted: { inputPerMTok: 1000000, outputPerMTok: 2000000 }',
      ].join('\n'),
    );
    const s = await serveOnFreePort({ dataDir: 'data' }, dir);
    try {
      const llm = await stepOn(s.url, {
        type: 'llm_call',
        input: {
          messages: [{ role: 'user', content: 'Name three rivers' }],
          params: { max_tokens: 8 },
        },
      });
      expect(llm.status).toBe('succeeded');
      expect(llm.budget_usage.tokens_out).toBe(8);
      expect(llm.budget_usage.cost_usd).toBeCloseTo(priced(llm.budget_usage), 9);
      expect(llm.provenance?.price_table).toBe('yaml-prices-1');

      const planner = await stepOn(s.url, {
        type: 'agent',
        input: { agent: 'planner', message: 'Plan a trip to Rome next Friday' },
      });
      expect(planner.status).toBe('succeeded');
      expect(planner.budget_usage.tokens_out).toBeGreaterThan(10);
      expect(planner.budget_usage.cost_usd).toBeCloseTo(priced(planner.budget_usage), 9);
      expect(planner.provenance?.price_table).toBe('yaml-prices-1');

      const { thread_id } = await json<{ thread_id: string }>(
        `${s.url}/v1/workflows/code-review/threads`,
        { input: 'Write add(a, b) in JavaScript' },
      );
      let thread = { status: '', tokens_in: 0, tokens_out: 0, cost_usd: 0 };
      for (let i = 0; i < 1000 && !['completed', 'failed'].includes(thread.status); i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        thread = await json<typeof thread>(`${s.url}/v1/threads/${thread_id}`);
      }
      expect(thread.status).toBe('completed');
      expect(thread.tokens_out).toBeGreaterThan(0);
      expect(thread.cost_usd).toBeCloseTo(priced(thread), 9);
    } finally {
      expect(await s.stop()).toBe(0);
    }
  }, 60_000);

  it('costs the configured openai engine from the same table', async () => {
    const model = await startOpenAICompatibleServer();
    writeFileSync(
      join(dir, 'axon.yaml'),
      [
        'engines:',
        `  openai: { url: "${model.baseURL}", model: local-model }`,
        'prices:',
        '  version: yaml-prices-2',
        '  models:',
        '    local-model: { inputPerMTok: 1000000, outputPerMTok: 2000000 }',
      ].join('\n'),
    );
    const s = await serveOnFreePort({ dataDir: 'data' }, dir);
    try {
      const llm = await stepOn(s.url, {
        type: 'llm_call',
        input: {
          engine: 'openai',
          messages: [{ role: 'user', content: 'Name three rivers' }],
          params: { max_tokens: 8 },
        },
      });
      expect(llm.status).toBe('succeeded');
      expect(model.requests.length).toBe(1);
      expect(llm.budget_usage.tokens_out).toBe(8);
      expect(llm.budget_usage.cost_usd).toBeCloseTo(priced(llm.budget_usage), 9);
      expect(llm.provenance?.price_table).toBe('yaml-prices-2');
    } finally {
      expect(await s.stop()).toBe(0);
      await model.close();
    }
  });

  it('gives axon worker’s runtime (the same options) the table', async () => {
    writeFileSync(
      join(dir, 'axon.yaml'),
      'prices: { version: worker-prices, models: { scripted: { inputPerMTok: 1, outputPerMTok: 1 } } }\n',
    );
    const config = loadServeConfig({ cwd: dir, env: {} });
    const parts = configuredRuntimeOptions(config, createLogger({ level: 'silent' }));
    try {
      expect(parts.options.priceTable).toBe(config.priceTable);
      expect(parts.options.priceTable?.version).toBe('worker-prices');
    } finally {
      await parts.close();
    }
  });
});
