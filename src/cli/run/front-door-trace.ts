/**
 * @module The trace tree of a request that came through the front door: its stages, with
 * the invocation's step tree under `runtime.invoke` (seed 000's tree, read from the store).
 */
import type { Handled } from '../../orchestrator/orchestrator.js';
import type { TraceNode } from '../../observability/trace-tree.js';
import type { StepRecord } from '../../store/records.js';
import { buildTraceTree } from '../../store/step-tree.js';

/** What a stage found, for its label (`router.classify → planner 1.00`). */
function stageLabel(name: string, attributes: Readonly<Record<string, string | number>>): string {
  const intent = attributes['axon.route.intent'];
  if (name === 'router.classify' && intent !== undefined) {
    const confidence = Number(attributes['axon.route.confidence'] ?? 0);
    return `${name} → ${String(intent)} ${confidence.toFixed(2)}`;
  }
  const agent = attributes['gen_ai.agent.name'];
  return agent === undefined ? name : `${name} ${String(agent)}`;
}

/**
 * One root, `front door` over the request's stages in order; `steps` (the invocation's run)
 * hang under `runtime.invoke`. The root spans the stages; tokens and cost are the steps'.
 */
export function frontDoorTree(handled: Handled, steps: readonly StepRecord[]): TraceNode {
  const stepRoots = buildTraceTree(steps);
  const children: TraceNode[] = handled.stages.map((stage) => {
    const under = stage.name === 'runtime.invoke' ? stepRoots : [];
    return {
      label: stageLabel(stage.name, stage.attributes),
      startedAt: stage.startedAt,
      endedAt: stage.startedAt + stage.durationMs,
      tokensIn: sum(under, (n) => n.tokensIn),
      tokensOut: sum(under, (n) => n.tokensOut),
      costUsd: sum(under, (n) => n.costUsd),
      error: null,
      children: under,
    };
  });
  const first = children[0];
  const last = children.at(-1);
  return {
    label: 'front door',
    startedAt: first?.startedAt ?? null,
    endedAt: last?.endedAt ?? null,
    tokensIn: sum(children, (n) => n.tokensIn),
    tokensOut: sum(children, (n) => n.tokensOut),
    costUsd: sum(children, (n) => n.costUsd),
    error: handled.error === null ? null : errorCode(handled.error),
    children,
  };
}

function sum(nodes: readonly TraceNode[], of: (n: TraceNode) => number): number {
  let total = 0;
  for (const n of nodes) total += of(n);
  return total;
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'ERROR';
}
