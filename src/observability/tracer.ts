/** @module OpenTelemetry spans for steps, following the GenAI semantic conventions. */
import {
  context,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
  type Tracer,
} from '@opentelemetry/api';

/** The instrumentation scope name of axon's spans. */
export const TRACER_NAME = 'axon';

/**
 * The tracer axon uses when none is injected: the global provider's, so spans go wherever
 * the host application's OpenTelemetry SDK sends them (nowhere, at no cost, without one).
 */
export function defaultTracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

/**
 * Operation names axon emits (`gen_ai.operation.name`): GenAI's, and `checkpoint` and
 * `gate_eval` for a run's checkpoint and gate steps, which call no model or tool.
 */
export type GenAiOperation = 'invoke_agent' | 'execute_tool' | 'chat' | 'checkpoint' | 'gate_eval';

/**
 * Starts a span named `<operation> <name>` (e.g. `invoke_agent planner`) as a child of
 * `parent`, or of the active span when there is no parent.
 */
export function startOperationSpan(
  tracer: Tracer,
  operation: GenAiOperation,
  name: string,
  parent: Span | undefined,
  attributes: Attributes = {},
): Span {
  const base = context.active();
  const parentContext = parent ? trace.setSpan(base, parent) : base;
  const nameAttr =
    operation === 'execute_tool'
      ? 'gen_ai.tool.name'
      : operation === 'chat'
        ? 'gen_ai.request.model'
        : operation === 'checkpoint'
          ? 'axon.checkpoint.label'
          : operation === 'gate_eval'
            ? 'axon.gate.fact_type'
            : 'gen_ai.agent.name';
  return tracer.startSpan(
    `${operation} ${name}`,
    {
      kind: operation === 'chat' ? SpanKind.CLIENT : SpanKind.INTERNAL,
      // Object.assign rather than a spread: spreads over many shapes are slow in V8.
      attributes: Object.assign(
        { 'gen_ai.operation.name': operation, [nameAttr]: name },
        attributes,
      ),
    },
    parentContext,
  );
}

/** How a step's span ends. */
export interface SpanOutcome {
  readonly error?: { readonly code: string; readonly message: string } | undefined;
  readonly tokensIn?: number;
  readonly tokensOut?: number;
}

/** Records usage and the outcome on `span`, then ends it. */
export function endOperationSpan(span: Span, outcome: SpanOutcome): void {
  if (!span.isRecording()) {
    span.end();
    return;
  }
  if (outcome.tokensIn) span.setAttribute('gen_ai.usage.input_tokens', outcome.tokensIn);
  if (outcome.tokensOut) span.setAttribute('gen_ai.usage.output_tokens', outcome.tokensOut);
  if (outcome.error) {
    span.setAttribute('error.type', outcome.error.code);
    span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error.message });
  } else {
    span.setStatus({ code: SpanStatusCode.OK });
  }
  span.end();
}
