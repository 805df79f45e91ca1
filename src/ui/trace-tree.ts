/**
 * @module The tree of a run's steps by `parent_step_id`, one node per step with its name,
 * type, status, duration, tokens and cost, kept up to date from the step's record and, while
 * its stream is followed, its log (its status at once, and `… streamed` beside the API's
 * figures while it runs). The run view and the thread view (whose turns are the roots) share
 * it.
 */
import type { Step } from './api-types.js';
import { el, setText } from './dom.js';
import { cost, duration, elapsed, stepName, tokens } from './format.js';
import { statusOf, streamedText, usageOf, type ShownUsage, type StepLog } from './step-detail.js';

/** A node of the tree: its row, its fields, and the slots below it. */
export interface TraceNode {
  readonly row: HTMLElement;
  readonly name: HTMLElement;
  readonly type: HTMLElement;
  readonly status: HTMLElement;
  readonly took: HTMLElement;
  readonly used: HTMLElement;
  readonly streamed: HTMLElement;
  readonly spent: HTMLElement;
  /** What a view shows of the step besides (hidden until it does), between row and children. */
  readonly extra: HTMLElement;
  readonly children: HTMLElement;
}

/** How a view tells the tree to show its steps. */
export interface TraceTreeOptions {
  /** Called when a node is clicked, or Enter or Space is pressed on it. */
  readonly open: (step: Step) => void;
  /** A node's name and type instead of its step's, or null for the step's own. */
  readonly label?: (step: Step) => { readonly name: string; readonly type: string } | null;
  /** A node's tokens and cost instead of its step's `budget_usage`, or null for those. */
  readonly usage?: (step: Step) => ShownUsage | null;
}

/** A tree of steps; see {@link createTraceTree}. */
export interface TraceTree {
  /**
   * Adds the node of `step` (a record) or updates it; `log` is what its stream has shown, or
   * null when it is not followed. Returns the node.
   */
  node(step: Step, log: StepLog | null, selected: boolean, now: number): TraceNode;
  /** The node of a step, or null. */
  get(stepId: string): TraceNode | null;
  /** Drops every node. */
  clear(): void;
}

/**
 * The tree of steps in `root` (a `<ul>`). A node is added under its parent's node, which must
 * be there already: add steps in creation order.
 */
export function createTraceTree(root: HTMLElement, options: TraceTreeOptions): TraceTree {
  const nodes = new Map<string, TraceNode>();
  const label = (step: Step): { readonly name: string; readonly type: string } =>
    options.label?.(step) ?? { name: stepName(step), type: step.type };

  function add(step: Step): TraceNode {
    const parent = step.parent_step_id !== null ? nodes.get(step.parent_step_id) : undefined;
    const depth = parent ? Number(parent.row.dataset['depth']) + 1 : 0;
    const row = el('div', {
      class: 'node',
      role: 'button',
      tabindex: '0',
      'data-testid': 'trace-node',
      'data-step-id': step.step_id,
      'data-parent-step-id': step.parent_step_id ?? '',
      'data-depth': depth,
    });
    // Its name is indented by its depth (app.css); its figures stay in the tree's columns.
    row.style.setProperty('--depth', String(depth));
    const n: TraceNode = {
      row,
      name: el('span', { class: 'name', 'data-testid': 'trace-node-name' }),
      type: el('span', { class: 'type', 'data-testid': 'trace-node-type' }),
      status: el('span', { class: 'status', 'data-testid': 'trace-node-status' }),
      took: el('span', { class: 'num', 'data-testid': 'trace-node-duration' }),
      used: el('span', { 'data-testid': 'trace-node-tokens' }),
      streamed: el('span', { class: 'muted streamed', 'data-testid': 'trace-node-streamed' }),
      spent: el('span', { class: 'num', 'data-testid': 'trace-node-cost' }),
      extra: el('div', { class: 'node-extra', hidden: true }),
      children: el('ul', { class: 'children' }),
    };
    row.append(
      n.name,
      n.type,
      n.status,
      n.took,
      el('span', { class: 'num tokens' }, n.used, n.streamed),
      n.spent,
    );
    const open = (): void => {
      options.open(step);
    };
    row.addEventListener('click', open);
    row.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        open();
      }
    });
    (parent ? parent.children : root).append(el('li', null, row, n.extra, n.children));
    nodes.set(step.step_id, n);
    return n;
  }

  return {
    node(step, log, selected, now) {
      const n = nodes.get(step.step_id) ?? add(step);
      const st = statusOf(step, log);
      const named = label(step);
      setText(n.name, named.name);
      setText(n.type, named.type);
      setText(n.status, st);
      n.row.dataset['status'] = st;
      n.row.classList.toggle('selected', selected);
      // Ended by its stream, not yet by its record: it took until its last event.
      const end = log?.last && step.ended_at === null ? log.last.data.ts : null;
      setText(
        n.took,
        duration(end !== null ? end - Date.parse(step.created_at) : elapsed(step, now)),
      );
      const u = options.usage?.(step) ?? usageOf(step);
      setText(n.used, tokens(u.tokensIn, u.tokensOut));
      const live = streamedText(step, log);
      setText(n.streamed, live === '' ? '' : ` · ${live}`);
      setText(n.spent, cost(u.cost));
      return n;
    },
    get(stepId) {
      return nodes.get(stepId) ?? null;
    },
    clear() {
      nodes.clear();
      root.replaceChildren();
    },
  };
}
