import { SpanStatusCode } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AgentDefinition } from '../../src/actors/agent-runtime.js';
import { defineAgent } from '../../src/actors/define-agent.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { ExecContext } from '../../src/context/exec-context.js';
import type { WireContext } from '../../src/context/wire-context.js';
import { createLogger } from '../../src/observability/logger.js';
import { defineTool } from '../../src/tools/define-tool.js';

const silent = createLogger({ level: 'silent' });

function tracing() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const spans = async (): Promise<ReadableSpan[]> => {
    await provider.forceFlush();
    return exporter.getFinishedSpans();
  };
  return { tracer: provider.getTracer('axon'), spans };
}

function only(spans: readonly ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((s) => s.name === name);
  expect(found.map((s) => s.name)).toEqual([name]);
  const [span] = found;
  if (!span) throw new Error(`no span named ${name}`);
  return span;
}

const searchFlights = defineTool({
  name: 'search_flights',
  description: 'Finds flights',
  input: z.object({ to: z.string() }).strict(),
  handler: ({ to }) => [`LH to ${to}`],
});

const failing = defineTool({
  name: 'book_flight',
  description: 'Always fails',
  input: z.object({}).strict(),
  handler: () => {
    throw new Error('no seats');
  },
});

const flights = defineAgent({
  name: 'flights',
  handler: async (input, ctx, rt) => {
    const found = await rt.callTool('search_flights', { to: input.message }, ctx);
    const booked = await rt.callTool('book_flight', {}, ctx);
    return { found: found.output, booked: booked.status };
  },
});

const planner = defineAgent({
  name: 'planner',
  handler: async (input, ctx, rt) => (await rt.delegate('flights', input, ctx)).output,
});

describe('OpenTelemetry spans of a run', () => {
  it('nests invoke_agent and execute_tool spans in one trace, with GenAI attributes', async () => {
    const { tracer, spans } = tracing();
    const runtime = createRuntime({
      tracer,
      logger: silent,
      agents: [planner, flights],
      tools: [searchFlights, failing],
    });

    const result = await runtime.invoke('planner', 'Berlin');
    expect(result.status).toBe('success');

    const all = await spans();
    const root = only(all, 'invoke_agent planner');
    const child = only(all, 'invoke_agent flights');
    const tool = only(all, 'execute_tool search_flights');
    const broken = only(all, 'execute_tool book_flight');
    expect(all).toHaveLength(4);

    expect(root.parentSpanContext).toBeUndefined();
    expect(child.parentSpanContext?.spanId).toBe(root.spanContext().spanId);
    expect(tool.parentSpanContext?.spanId).toBe(child.spanContext().spanId);
    expect(broken.parentSpanContext?.spanId).toBe(child.spanContext().spanId);
    const traceIds = new Set(all.map((s) => s.spanContext().traceId));
    expect(traceIds.size).toBe(1);
    expect(child.parentSpanContext?.traceId).toBe(root.spanContext().traceId);

    expect(root.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'planner',
      'axon.step_id': result.stepId,
      'axon.run_id': result.runId,
    });
    expect(child.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'flights',
    });
    expect(tool.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'search_flights',
    });
    expect(root.status.code).toBe(SpanStatusCode.OK);
    expect(tool.status.code).toBe(SpanStatusCode.OK);
    expect(tool.attributes['error.type']).toBeUndefined();
  });

  it("marks a failing step's span as an error with error.type", async () => {
    const { tracer, spans } = tracing();
    const runtime = createRuntime({
      tracer,
      logger: silent,
      agents: [planner, flights],
      tools: [searchFlights, failing],
    });

    await runtime.invoke('planner', 'Paris');

    const broken = only(await spans(), 'execute_tool book_flight');
    expect(broken.status.code).toBe(SpanStatusCode.ERROR);
    expect(broken.status.message).toContain('no seats');
    expect(broken.attributes['error.type']).toBe('INTERNAL');
    expect(broken.ended).toBe(true);
  });

  it('marks a failing agent span with the code of its error', async () => {
    const { tracer, spans } = tracing();
    const crash = defineAgent({
      name: 'crash',
      handler: () => {
        throw new Error('kaput');
      },
    });
    const runtime = createRuntime({ tracer, logger: silent, agents: [crash] });

    const result = await runtime.invoke('crash', 'x');

    expect(result.status).toBe('error');
    const span = only(await spans(), 'invoke_agent crash');
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
    expect(span.attributes['error.type']).toBe('INTERNAL');
  });
});

/** An agent that captures its context's wire form; `wire()` returns the last one. */
function wireProbe(name: string): { agent: AgentDefinition; wire: () => WireContext | null } {
  let wire: WireContext | null = null;
  const agent = defineAgent({
    name,
    handler: (_input, ctx) => {
      wire = ctx.toWire();
      return 'ok';
    },
  });
  return { agent, wire: () => wire };
}

describe('trace context on the wire', () => {
  it("gives a running step's ctx.toWire() a traceparent naming that step's span", async () => {
    const { tracer, spans } = tracing();
    const { agent: probe, wire: captured } = wireProbe('probe');
    const runtime = createRuntime({ tracer, logger: silent, agents: [probe] });

    const result = await runtime.invoke('probe', 'x');

    const span = only(await spans(), 'invoke_agent probe');
    const sc = span.spanContext();
    expect(captured()?.traceparent).toBe(`00-${sc.traceId}-${sc.spanId}-01`);
    expect(captured()?.step_id).toBe(result.stepId);
  });

  it('parents spans of an invocation under a context rebuilt with ExecContext.fromWire', async () => {
    const { tracer, spans } = tracing();
    const { agent: outer, wire } = wireProbe('outer');
    const inner = defineAgent({
      name: 'inner',
      handler: async (_input, ctx, rt) =>
        (await rt.callTool('search_flights', { to: 'Rome' }, ctx)).status,
    });
    // Two runtimes sharing one tracer: the far side only knows what came over the wire.
    const near = createRuntime({ tracer, logger: silent, agents: [outer] });
    const far = createRuntime({ tracer, logger: silent, agents: [inner], tools: [searchFlights] });

    await near.invoke('outer', 'x');
    const remote = ExecContext.fromWire(JSON.parse(JSON.stringify(wire())));
    const result = await far.invoke('inner', 'y', remote);
    expect(result.status).toBe('success');
    expect(result.output).toBe('success');

    const all = await spans();
    const parent = only(all, 'invoke_agent outer');
    const child = only(all, 'invoke_agent inner');
    const tool = only(all, 'execute_tool search_flights');
    expect(child.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
    expect(child.parentSpanContext?.isRemote).toBe(true);
    expect(child.spanContext().traceId).toBe(parent.spanContext().traceId);
    expect(tool.parentSpanContext?.spanId).toBe(child.spanContext().spanId);
    expect(tool.spanContext().traceId).toBe(parent.spanContext().traceId);
  });
});
