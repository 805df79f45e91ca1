import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { defineTool } from '../../src/tools/define-tool.js';

const login = defineTool({
  name: 'login',
  description: 'Logs in',
  input: z.strictObject({ user: z.string(), password: z.string() }),
  handler: ({ user, password }, ctx) => {
    // A handler that annotates its span with what it should not.
    ctx.span?.setAttribute('login.password', password);
    ctx.span?.setAttributes({ 'login.user': user, 'login.ssn': '123-45-6789' });
    return { user, token: 'tok', profile: { ssn: '123-45-6789', city: 'Berlin' } };
  },
});

const agent = defineAgent({
  name: 'agent',
  handler: async (_input, ctx, runtime) => {
    ctx.stream.emit({ type: 'narration', text: 'logging in' });
    const r = await runtime.callTool<{ profile: { ssn: string } }>(
      'login',
      { user: 'ann', password: 'hunter2' },
      ctx,
    );
    // The running step has the real values.
    return { sawSsn: r.output?.profile.ssn ?? null, password: 'hunter2' };
  },
});

describe('redaction of configured fields (issue 6)', () => {
  it('keeps them out of stored steps and events, span attributes and the runtime logger', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    const rt = createRuntime({
      agents: [agent],
      tools: [login],
      tracer: provider.getTracer('axon'),
      redact: ['password', 'SSN'],
    });
    const r = await rt.invoke('agent', 'go');
    expect(r.output).toEqual({ sawSsn: '123-45-6789', password: 'hunter2' });

    const steps = await rt.listSteps(r.runId);
    const tool = steps.find((s) => s.type === 'tool_call');
    expect(tool?.input).toEqual({ tool: 'login', args: { user: 'ann', password: '[REDACTED]' } });
    expect(tool?.output).toEqual({
      user: 'ann',
      token: 'tok',
      profile: { ssn: '[REDACTED]', city: 'Berlin' },
    });
    const root = steps.find((s) => s.type === 'agent');
    expect(root?.output).toEqual({ sawSsn: '123-45-6789', password: '[REDACTED]' });
    const end = (await rt.readStepEvents(root?.step_id ?? '')).find((e) => e.type === 'end');
    expect(end).toMatchObject({ output: { password: '[REDACTED]' } });
    const stored = JSON.stringify(
      await Promise.all(steps.map((s) => rt.readStepEvents(s.step_id))),
    );
    expect(stored).not.toContain('hunter2');

    await provider.forceFlush();
    const span = exporter.getFinishedSpans().find((s) => s.name === 'execute_tool login');
    expect(span?.attributes).toMatchObject({
      'login.password': '[REDACTED]',
      'login.ssn': '[REDACTED]',
      'login.user': 'ann',
    });

    const child = rt.logger.child({ request: { password: 'hunter2', user: 'ann' } });
    expect(child.bindings()).toMatchObject({ request: { password: '[REDACTED]', user: 'ann' } });
    await rt.close();
  });

  it('without keys nothing is changed', async () => {
    const rt = createRuntime({ agents: [agent], tools: [login] });
    const r = await rt.invoke('agent', 'go');
    const tool = (await rt.listSteps(r.runId)).find((s) => s.type === 'tool_call');
    expect(tool?.input).toEqual({ tool: 'login', args: { user: 'ann', password: 'hunter2' } });
    await rt.close();
  });
});
