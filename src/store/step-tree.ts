/** @module Builds trace trees from a run's stored steps. */
import type { TraceNode } from '../observability/trace-tree.js';
import type { StepRecord } from './records.js';

function label(step: StepRecord): string {
  const kind = step.type === 'tool_call' ? 'tool' : step.type === 'agent' ? 'agent' : step.type;
  return `${kind} ${step.name}`;
}

const time = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso));

/** The steps of one run as trace trees, children nested under their parent step in order. */
export function buildTraceTree(steps: readonly StepRecord[]): TraceNode[] {
  const children = new Map<string | null, StepRecord[]>();
  const ids = new Set(steps.map((s) => s.step_id));
  for (const step of steps) {
    // A step whose parent is not in the list is shown as a root rather than lost.
    const parent =
      step.parent_step_id !== null && ids.has(step.parent_step_id) ? step.parent_step_id : null;
    let list = children.get(parent);
    if (!list) children.set(parent, (list = []));
    list.push(step);
  }
  const build = (step: StepRecord): TraceNode => ({
    label: label(step),
    startedAt: time(step.started_at ?? step.created_at),
    endedAt: time(step.ended_at),
    tokensIn: step.budget_usage.tokens_in,
    tokensOut: step.budget_usage.tokens_out,
    costUsd: step.budget_usage.cost_usd,
    error: step.error?.code ?? null,
    children: (children.get(step.step_id) ?? []).map(build),
  });
  return (children.get(null) ?? []).map(build);
}
