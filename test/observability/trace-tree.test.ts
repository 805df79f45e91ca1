import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { SimulatedClock } from '../../src/context/clock.js';
import { createLogger } from '../../src/observability/logger.js';
import { renderTraceTree, type TraceNode } from '../../src/observability/trace-tree.js';
import type { StepRecord } from '../../src/store/records.js';
import { makeStep } from '../support/records.js';
import { buildTraceTree } from '../../src/store/step-tree.js';
import { defineTool } from '../../src/tools/define-tool.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

function node(label: string, overrides: Partial<TraceNode> = {}): TraceNode {
  return {
    label,
    startedAt: 1_000,
    endedAt: 1_010,
    tokensIn: 0,
    tokensOut: 0,
    costUsd: 0,
    error: null,
    children: [],
    ...overrides,
  };
}

describe('renderTraceTree', () => {
  it('renders a single root as [t_<6 hex>] label (duration, tokens)', () => {
    const out = renderTraceTree(
      [node('agent planner', { endedAt: 1_412, tokensIn: 60, tokensOut: 36 })],
      {
        traceId: TRACE,
      },
    );

    expect(out).toBe('[t_4bf92f] agent planner (412ms, 96 tok)');
  });

  it('draws children with +-- and continues non-last siblings with |', () => {
    const tree = node('agent planner', {
      endedAt: 1_412,
      tokensIn: 90,
      tokensOut: 6,
      children: [
        node('agent calendar', { endedAt: 1_012 }),
        node('agent flights', {
          endedAt: 1_030,
          children: [
            node('tool search_flights', { endedAt: 1_009 }),
            node('tool book', { endedAt: 1_004 }),
          ],
        }),
        node('agent hotels', {
          endedAt: 1_020,
          children: [node('tool search_hotels', { endedAt: 1_007 })],
        }),
      ],
    });

    expect(renderTraceTree([tree], { traceId: TRACE }).split('\n')).toEqual([
      '[t_4bf92f] agent planner (412ms, 96 tok)',
      '+-- [t_4bf92f.1] agent calendar (12ms)',
      '+-- [t_4bf92f.2] agent flights (30ms)',
      '|   +-- [t_4bf92f.2.1] tool search_flights (9ms)',
      '|   +-- [t_4bf92f.2.2] tool book (4ms)',
      '+-- [t_4bf92f.3] agent hotels (20ms)',
      '    +-- [t_4bf92f.3.1] tool search_hotels (7ms)',
    ]);
  });

  it('keeps the | of every open ancestor at depth three', () => {
    const tree = node('agent a', {
      children: [
        node('agent b', {
          children: [node('agent c', { children: [node('tool d')] }), node('tool e')],
        }),
        node('tool f'),
      ],
    });

    expect(renderTraceTree([tree], { traceId: TRACE }).split('\n')).toEqual([
      '[t_4bf92f] agent a (10ms)',
      '+-- [t_4bf92f.1] agent b (10ms)',
      '|   +-- [t_4bf92f.1.1] agent c (10ms)',
      '|   |   +-- [t_4bf92f.1.1.1] tool d (10ms)',
      '|   +-- [t_4bf92f.1.2] tool e (10ms)',
      '+-- [t_4bf92f.2] tool f (10ms)',
    ]);
  });

  it('marks a failing node with !CODE after its summary', () => {
    const tree = node('agent planner', {
      endedAt: 1_050,
      error: 'INTERNAL',
      children: [node('tool search_flights', { endedAt: 1_030, error: 'TIMEOUT' })],
    });

    expect(renderTraceTree([tree], { traceId: TRACE }).split('\n')).toEqual([
      '[t_4bf92f] agent planner (50ms) !INTERNAL',
      '+-- [t_4bf92f.1] tool search_flights (30ms) !TIMEOUT',
    ]);
  });

  it('shows running nodes, cost and thousands separators', () => {
    const tree = node('agent planner', {
      endedAt: 2_234,
      tokensIn: 1_000,
      tokensOut: 500,
      costUsd: 0.0123,
      children: [node('llm_call gpt', { endedAt: null })],
    });

    expect(renderTraceTree([tree], { traceId: TRACE }).split('\n')).toEqual([
      '[t_4bf92f] agent planner (1,234ms, 1,500 tok, $0.012)',
      '+-- [t_4bf92f.1] llm_call gpt (running)',
    ]);
  });

  it('numbers several roots and falls back to t_trace without a trace id', () => {
    expect(
      renderTraceTree([node('agent a'), node('agent b', { children: [node('tool c')] })]).split(
        '\n',
      ),
    ).toEqual([
      '[t_trace.1] agent a (10ms)',
      '[t_trace.2] agent b (10ms)',
      '+-- [t_trace.2.1] tool c (10ms)',
    ]);
  });
});

describe('buildTraceTree', () => {
  const runId = (): string => `run_${randomUUID()}`;

  /** A finished step 100 ms long, built on the shared record builder. */
  const step = (
    fields: Pick<StepRecord, 'step_id' | 'run_id' | 'type' | 'name' | 'parent_step_id'> &
      Partial<StepRecord>,
  ): StepRecord =>
    makeStep(fields.run_id, {
      actor_path: [],
      input: null,
      status: 'succeeded',
      ended_at: '2025-01-01T00:00:00.100Z',
      ...fields,
    });

  it('nests steps under their parent in the order given', () => {
    const run = runId();
    const steps = [
      step({ step_id: 'root', run_id: run, type: 'agent', name: 'planner', parent_step_id: null }),
      step({ step_id: 'a', run_id: run, type: 'agent', name: 'calendar', parent_step_id: 'root' }),
      step({ step_id: 'b', run_id: run, type: 'agent', name: 'flights', parent_step_id: 'root' }),
      step({
        step_id: 'b1',
        run_id: run,
        type: 'tool_call',
        name: 'search_flights',
        parent_step_id: 'b',
        budget_usage: { tokens_in: 7, tokens_out: 3, cost_usd: 0.5, wall_ms: 9 },
        started_at: '2025-01-01T00:00:01.000Z',
        ended_at: '2025-01-01T00:00:01.009Z',
        status: 'failed',
        error: { code: 'TIMEOUT', message: 'late', retriable: true },
      }),
      step({
        step_id: 'c',
        run_id: run,
        type: 'llm_call',
        name: 'gpt',
        parent_step_id: 'root',
        ended_at: null,
      }),
    ];

    const [root, ...rest] = buildTraceTree(steps);

    expect(rest).toEqual([]);
    expect(root?.label).toBe('agent planner');
    expect(root?.children.map((c) => c.label)).toEqual([
      'agent calendar',
      'agent flights',
      'llm_call gpt',
    ]);
    expect(root?.children[1]?.children).toEqual([
      {
        label: 'tool search_flights',
        startedAt: Date.parse('2025-01-01T00:00:01.000Z'),
        endedAt: Date.parse('2025-01-01T00:00:01.009Z'),
        tokensIn: 7,
        tokensOut: 3,
        costUsd: 0.5,
        error: 'TIMEOUT',
        children: [],
      },
    ]);
    expect(root?.children[2]?.endedAt).toBeNull();
  });

  it('keeps steps whose parent is missing as roots instead of dropping them', () => {
    const run = runId();
    const steps = [
      step({ step_id: 'root', run_id: run, type: 'agent', name: 'planner', parent_step_id: null }),
      step({
        step_id: 'orphan',
        run_id: run,
        type: 'tool_call',
        name: 'lost',
        parent_step_id: 'gone',
      }),
      step({
        step_id: 'kid',
        run_id: run,
        type: 'tool_call',
        name: 'found',
        parent_step_id: 'orphan',
      }),
    ];

    const roots = buildTraceTree(steps);

    expect(roots.map((r) => r.label)).toEqual(['agent planner', 'tool lost']);
    expect(roots[1]?.children.map((c) => c.label)).toEqual(['tool found']);
  });

  it('uses created_at when a step has not started', () => {
    const run = runId();
    const [root] = buildTraceTree([
      step({
        step_id: 'q',
        run_id: run,
        type: 'agent',
        name: 'queued',
        parent_step_id: null,
        status: 'queued',
        created_at: '2025-01-01T00:00:05.000Z',
        started_at: null,
        ended_at: null,
      }),
    ]);

    expect(root?.startedAt).toBe(Date.parse('2025-01-01T00:00:05.000Z'));
    expect(renderTraceTree(root ? [root] : [])).toBe('[t_trace] agent queued (running)');
  });

  it("renders a real run's stored steps as a tree", async () => {
    const clock = new SimulatedClock(Date.parse('2025-01-01T00:00:00.000Z'));
    const search = defineTool({
      name: 'search_flights',
      description: 'Finds flights',
      input: z.object({}).strict(),
      handler: () => {
        clock.advance(9);
        return [];
      },
    });
    const flights = defineAgent({
      name: 'flights',
      handler: async (_input, ctx, rt) => (await rt.callTool('search_flights', {}, ctx)).status,
    });
    const planner = defineAgent({
      name: 'planner',
      handler: async (input, ctx, rt) => {
        clock.advance(5);
        return (await rt.delegate('flights', input, ctx)).output;
      },
    });
    const runtime = createRuntime({
      clock,
      logger: createLogger({ level: 'silent' }),
      agents: [planner, flights],
      tools: [search],
    });
    const ctx = runtime.createContext({ traceId: TRACE });

    const result = await runtime.invoke('planner', 'go', ctx);

    const text = renderTraceTree(buildTraceTree(await runtime.store.listSteps(result.runId)), {
      traceId: TRACE,
    });
    expect(text.split('\n')).toEqual([
      '[t_4bf92f] agent planner (14ms)',
      '+-- [t_4bf92f.1] agent flights (9ms)',
      '    +-- [t_4bf92f.1.1] tool search_flights (9ms)',
    ]);
  });
});
