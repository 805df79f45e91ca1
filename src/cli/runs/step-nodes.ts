/**
 * @module A run's steps as a tree (seed 000's trace tree): each step under its
 * `parent_step_id`, children in creation order, and the run's totals. `axon trace` prints
 * it; the same tree is its `--json`.
 */
import { elapsedMs } from '../human-format.js';
import type { StepInfo } from '../sources/run-source.js';

/** A step and the steps it started. */
export interface StepNode {
  readonly step: StepInfo;
  readonly children: readonly StepNode[];
}

/** The figures of a whole run's tree. */
export interface StepTotals {
  readonly steps: number;
  /** From the first step's start to the last one's end; `null` while a step is live. */
  readonly duration_ms: number | null;
  readonly tokens_in: number;
  readonly tokens_out: number;
  readonly cost_usd: number;
}

/**
 * The steps as trees, in creation order. A step whose parent is not among `steps` is shown
 * as a root rather than lost.
 */
export function buildStepNodes(steps: readonly StepInfo[]): StepNode[] {
  const ids = new Set(steps.map((s) => s.step_id));
  const under = new Map<string | null, StepInfo[]>();
  for (const step of steps) {
    const parent =
      step.parent_step_id !== null && ids.has(step.parent_step_id) ? step.parent_step_id : null;
    const list = under.get(parent);
    if (list) list.push(step);
    else under.set(parent, [step]);
  }
  const node = (step: StepInfo): StepNode => ({
    step,
    children: (under.get(step.step_id) ?? []).map(node),
  });
  return (under.get(null) ?? []).map(node);
}

/** When a step started: `started_at`, else its creation. */
export const startOf = (step: StepInfo): string => step.started_at ?? step.created_at;

/** How long a step ran; `null` while it runs. */
export const durationOf = (step: StepInfo): number | null =>
  elapsedMs(startOf(step), step.ended_at);

/**
 * The run's totals. A step's usage includes its children's, so tokens and cost are the sum
 * over the roots — adding every step would count a delegation twice.
 */
export function totalsOf(roots: readonly StepNode[], steps: readonly StepInfo[]): StepTotals {
  const sum = (of: (s: StepInfo) => number): number => roots.reduce((n, r) => n + of(r.step), 0);
  const live = steps.some((s) => s.ended_at === null);
  const first = Math.min(...steps.map((s) => Date.parse(startOf(s))));
  const last = Math.max(...steps.map((s) => Date.parse(s.ended_at ?? '')));
  return {
    steps: steps.length,
    duration_ms: live || steps.length === 0 ? null : Math.max(0, last - first),
    tokens_in: sum((s) => s.budget_usage.tokens_in),
    tokens_out: sum((s) => s.budget_usage.tokens_out),
    cost_usd: sum((s) => s.budget_usage.cost_usd),
  };
}

/** A node as `trace --json` prints it: the step's raw figures and its children. */
export function stepJson(node: StepNode): Record<string, unknown> {
  const { step } = node;
  return {
    step_id: step.step_id,
    parent_step_id: step.parent_step_id,
    type: step.type,
    name: step.name,
    status: step.status,
    created_at: step.created_at,
    started_at: step.started_at,
    ended_at: step.ended_at,
    duration_ms: durationOf(step),
    tokens_in: step.budget_usage.tokens_in,
    tokens_out: step.budget_usage.tokens_out,
    cost_usd: step.budget_usage.cost_usd,
    error: step.error,
    children: node.children.map(stepJson),
  };
}

/** What a step ran, for a person: `agent planner`, `tool search_flights`, `llm_call gpt-4o`. */
export function stepLabel(step: StepInfo): string {
  const kind = step.type === 'tool_call' ? 'tool' : step.type;
  return step.name === null ? kind : `${kind} ${step.name}`;
}

/**
 * Walks the trees depth first, giving each node with its prefix in seed 000's drawing:
 * `+-- ` under its parent, `|   ` where a parent has more children below.
 */
export function walkStepNodes(
  roots: readonly StepNode[],
  visit: (node: StepNode, prefix: string) => void,
): void {
  const walk = (node: StepNode, lead: string, isLast: boolean, depth: number): void => {
    visit(node, depth === 0 ? '' : `${lead}+-- `);
    const childLead = depth === 0 ? '' : lead + (isLast ? '    ' : '|   ');
    node.children.forEach((child, i) => {
      walk(child, childLead, i === node.children.length - 1, depth + 1);
    });
  };
  for (const root of roots) walk(root, '', true, 0);
}
