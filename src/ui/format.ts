/**
 * @module How runs, steps and threads read on the trace UI's page.
 * The figures' forms — durations, tokens, cost, times — are `observability/human-format.ts`'s,
 * the ones the CLI prints; this adds what only the page needs (live statuses, a step's name,
 * JSON for people, `el`). Pure functions; no state.
 */
import {
  formatCost,
  formatDuration,
  formatFailedSteps,
  formatTime,
  formatTokens,
} from '../observability/human-format.js';
import type { RunStatus, Step, StepStatus, ThreadStatus } from './api-types.js';

/** Run statuses that may still change. */
export const LIVE_RUN: ReadonlySet<RunStatus> = new Set<RunStatus>([
  'running',
  'waiting',
  'cancelling',
]);
/** Step statuses that may still change. */
export const LIVE_STEP: ReadonlySet<StepStatus> = new Set<StepStatus>([
  'queued',
  'running',
  'waiting',
]);
/** Thread statuses that may still change. */
export const LIVE_THREAD: ReadonlySet<ThreadStatus> = new Set<ThreadStatus>(['queued', 'started']);

/** A duration in ms: `850ms`, `4.2s`, `2m05s`, `1h02m`; `-` for none. */
export function duration(ms: number | null): string {
  return formatDuration(ms);
}

/** What {@link elapsed} reads of a run, a step or a thread. */
export interface Timed {
  readonly created_at: string;
  readonly ended_at: string | null;
}

/** How long a run or step took, or has been going (`ended_at` null: until `now`), ms. */
export function elapsed(record: Timed, now: number): number {
  const start = Date.parse(record.created_at);
  const end = record.ended_at !== null ? Date.parse(record.ended_at) : now;
  return end - start;
}

/** Tokens as `1,204 in / 56 out`. */
export function tokens(tokensIn: number, tokensOut: number): string {
  return formatTokens(tokensIn, tokensOut);
}

/** A cost in USD: `$0`, `$0.0042`, `$1.2500`. */
export function cost(usd: number): string {
  return formatCost(usd);
}

/**
 * What a run's status is followed by when some of its steps failed: ` · 2 failed steps` (the
 * status and this read as the CLI's `running · 2 failed steps`); empty when none did.
 */
export function failedNote(failedSteps: number): string {
  return failedSteps > 0 ? ` · ${formatFailedSteps(failedSteps)}` : '';
}

/** How many of `steps` failed (by their records' status). */
export function failedCount(steps: readonly Pick<Step, 'status'>[]): number {
  return steps.reduce((n, step) => (step.status === 'failed' ? n + 1 : n), 0);
}

/** A timestamp as `2026-11-27 18:05:19Z` (UTC, to the second). */
export function when(iso: string): string {
  return formatTime(iso);
}

function field(input: Readonly<Record<string, unknown>>, name: string): string | null {
  const value = input[name];
  return typeof value === 'string' && value !== '' ? value : null;
}

/**
 * A step's name: the server's name field when the view has one, else what its input names
 * (the tool, the agent, the engine or model, the file operation).
 */
export function stepName(step: Pick<Step, 'name' | 'type' | 'input' | 'provenance'>): string {
  if (typeof step.name === 'string' && step.name !== '') return step.name;
  const input =
    step.input !== null && typeof step.input === 'object'
      ? (step.input as Readonly<Record<string, unknown>>)
      : {};
  switch (step.type) {
    case 'tool_call':
      return field(input, 'tool') ?? 'tool';
    case 'agent':
      return field(input, 'agent') ?? 'agent';
    case 'llm_call':
    case 'llm_plan': {
      const engine = step.provenance ? step.provenance['engine'] : undefined;
      return (
        field(input, 'model') ??
        field(input, 'engine') ??
        (typeof engine === 'string' && engine !== '' ? engine : 'llm')
      );
    }
    case 'fs_op': {
      const path = field(input, 'path');
      return (field(input, 'op') ?? 'fs') + (path !== null ? ` ${path}` : '');
    }
    case 'gate_eval':
      return field(input, 'fact_type') ?? 'gate';
    case 'checkpoint':
      return field(input, 'label') ?? 'checkpoint';
    default:
      return step.type;
  }
}

/** JSON for people: indented, cut past `limit` characters. */
export function json(value: unknown, limit = 4000): string {
  let text: string;
  try {
    // JSON.stringify gives undefined (whatever its type says) for these.
    const none = value === undefined || typeof value === 'function' || typeof value === 'symbol';
    text = none ? 'null' : JSON.stringify(value, null, 2);
  } catch {
    text = String(value);
  }
  return text.length > limit ? `${text.slice(0, limit)}\n...` : text;
}
