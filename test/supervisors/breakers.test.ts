import { describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import { SimulatedClock } from '../../src/context/clock.js';
import { CircuitOpenError } from '../../src/errors/circuit-open-error.js';
import type { StepEvent } from '../../src/streams/events.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { z } from 'zod';
import { quietRuntime } from '../support/runtime.js';

function flaky() {
  const calls = { n: 0, fail: true };
  const agent = defineAgent({
    name: 'flaky',
    handler: () => {
      calls.n++;
      if (calls.fail) throw new Error('down');
      return 'up';
    },
  });
  return { calls, agent };
}

async function eventTypes(events: Promise<StepEvent[]>): Promise<string[]> {
  return (await events).map((e) => e.type);
}

describe('POLICY-3002: a circuit breaker per agent and per tool', () => {
  it('opens after 3 consecutive failures; then calls fail fast without running, with escalation', async () => {
    const { calls, agent } = flaky();
    const runtime = quietRuntime({ agents: [agent] });
    for (let i = 0; i < 3; i++) {
      expect((await runtime.invoke('flaky', 'x')).error?.code).toBe('INTERNAL');
    }
    const refused = await runtime.invoke('flaky', 'x');
    expect(calls.n).toBe(3);
    expect(refused.status).toBe('error');
    expect(refused.error).toBeInstanceOf(CircuitOpenError);
    expect(refused.error?.code).toBe('POOL_UNAVAILABLE');
    expect(refused.error?.retriable).toBe(true);
    expect(refused.error?.details).toMatchObject({ target: 'agent:flaky', breaker_state: 'open' });
    const log = await runtime.store.readEvents(refused.stepId);
    expect(log.map((e) => e.type)).toEqual(['started', 'escalation', 'error']);
    expect(log[1]).toMatchObject({ target: 'agent:flaky', breaker_state: 'open' });
  });

  it('timeouts count as failures', async () => {
    const slow = defineAgent({
      name: 'slow',
      timeoutMs: 20,
      handler: () => new Promise(() => undefined),
    });
    const runtime = quietRuntime({ agents: [slow], breakers: { failureThreshold: 2 } });
    expect((await runtime.invoke('slow', 'x')).status).toBe('timeout');
    expect((await runtime.invoke('slow', 'x')).status).toBe('timeout');
    expect((await runtime.invoke('slow', 'x')).error?.code).toBe('POOL_UNAVAILABLE');
  });

  it('half-opens after the recovery time on the runtime’s clock; a good probe closes it', async () => {
    const clock = new SimulatedClock(1_000);
    const { calls, agent } = flaky();
    const runtime = quietRuntime({
      agents: [agent],
      clock,
      breakers: { failureThreshold: 1, recoveryMs: 30_000 },
    });
    await runtime.invoke('flaky', 'x');
    expect((await runtime.invoke('flaky', 'x')).error?.details).toMatchObject({
      breaker_state: 'open',
      retry_after_ms: 30_000,
    });
    clock.advance(30_000);
    calls.fail = false;
    const probe = await runtime.invoke('flaky', 'x');
    expect(probe.status).toBe('success');
    expect((await runtime.invoke('flaky', 'x')).status).toBe('success');
    expect(calls.n).toBe(3);
  });

  it('a failed probe opens it again', async () => {
    const clock = new SimulatedClock(1_000);
    const { calls, agent } = flaky();
    const runtime = quietRuntime({
      agents: [agent],
      clock,
      breakers: { failureThreshold: 1, recoveryMs: 100 },
    });
    await runtime.invoke('flaky', 'x');
    clock.advance(100);
    expect((await runtime.invoke('flaky', 'x')).error?.code).toBe('INTERNAL');
    const refused = await runtime.invoke('flaky', 'x');
    expect(refused.error?.code).toBe('POOL_UNAVAILABLE');
    expect(await eventTypes(runtime.store.readEvents(refused.stepId))).toContain('escalation');
    expect(calls.n).toBe(2);
  });

  it('a delegation refused by the breaker is a failure result for the parent, which carries on', async () => {
    const { agent } = flaky();
    const parent = defineAgent({
      name: 'parent',
      handler: async (input, ctx, rt) => {
        const r = await rt.delegate('flaky', input, ctx);
        return r.error?.code ?? 'ok';
      },
    });
    const runtime = quietRuntime({ agents: [agent, parent], breakers: { failureThreshold: 1 } });
    expect((await runtime.invoke('parent', 'x')).output).toBe('INTERNAL');
    expect((await runtime.invoke('parent', 'x')).output).toBe('POOL_UNAVAILABLE');
  });

  it('breakers: false turns them off', async () => {
    const { calls, agent } = flaky();
    const runtime = quietRuntime({ agents: [agent], breakers: false });
    for (let i = 0; i < 5; i++) await runtime.invoke('flaky', 'x');
    expect(calls.n).toBe(5);
  });

  it('tools have breakers too; arguments that fail the schema are no verdict on the tool', async () => {
    let calls = 0;
    const down = defineTool({
      name: 'down',
      description: 'always fails',
      input: z.strictObject({ q: z.string() }),
      handler: () => {
        calls++;
        throw new Error('unreachable service');
      },
    });
    const runtime = quietRuntime({ tools: [down], breakers: { failureThreshold: 2 } });
    const ctx = runtime.createContext();
    for (let i = 0; i < 5; i++) {
      expect((await runtime.callTool('down', { q: 1 }, ctx)).error?.code).toBe('SCHEMA_VIOLATION');
    }
    expect((await runtime.callTool('down', { q: 'a' }, ctx)).error?.code).toBe('INTERNAL');
    expect((await runtime.callTool('down', { q: 'b' }, ctx)).error?.code).toBe('INTERNAL');
    const refused = await runtime.callTool('down', { q: 'c' }, ctx);
    expect(refused.status).toBe('error');
    expect(refused.error).toBeInstanceOf(CircuitOpenError);
    expect(refused.error?.details).toMatchObject({ target: 'tool:down', breaker_state: 'open' });
    expect(calls).toBe(2);
    expect(await eventTypes(runtime.store.readEvents(refused.stepId ?? ''))).toEqual([
      'started',
      'escalation',
      'error',
    ]);
  });
});
