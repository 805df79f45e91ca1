/**
 * @module The trace UI's `ui/trace-tree.js` (a browser module, kept as a string): the tree of
 * a run's steps by `parent_step_id`, one node per step with its name, type, status,
 * duration, tokens and cost, kept up to date from the step's record and, while its stream is
 * followed, its log. The run view and the thread view (whose turns are the roots) share it.
 */

/** `ui/trace-tree.js`. */
export const TRACE_TREE_JS = String.raw`// axon trace UI: a tree of steps.
import { cost, duration, el, elapsed, setText, stepName, tokens } from './format.js';
import { statusOf, usageOf } from './step-detail.js';

/**
 * The tree of steps in root (a <ul>). open(step) is called when a node is clicked or
 * Enter is pressed on it; label(step), when given and not null, names a node
 * ({ name, type }) instead of its step's name and type. A node is added under its parent's node, which must be
 * there already: add steps in creation order. Each node has a slot, extra (hidden), between
 * its row and its children, for what a view shows of it besides.
 */
export function createTraceTree(root, options) {
  const nodes = new Map();
  const label = (step) =>
    (options.label && options.label(step)) || { name: stepName(step), type: step.type };

  function add(step) {
    const parent = step.parent_step_id ? nodes.get(step.parent_step_id) : null;
    const row = el('div', {
      class: 'node',
      role: 'button',
      tabindex: '0',
      'data-testid': 'trace-node',
      'data-step-id': step.step_id,
      'data-parent-step-id': step.parent_step_id || '',
      'data-depth': parent ? Number(parent.row.dataset.depth) + 1 : 0,
    });
    const n = {
      row,
      name: el('span', { class: 'name', 'data-testid': 'trace-node-name' }),
      type: el('span', { class: 'type', 'data-testid': 'trace-node-type' }),
      status: el('span', { class: 'status', 'data-testid': 'trace-node-status' }),
      took: el('span', { class: 'num', 'data-testid': 'trace-node-duration' }),
      used: el('span', { class: 'num', 'data-testid': 'trace-node-tokens' }),
      spent: el('span', { class: 'num', 'data-testid': 'trace-node-cost' }),
      extra: el('div', { class: 'node-extra', hidden: true }),
      children: el('ul', { class: 'children' }),
    };
    row.append(n.name, n.type, n.status, n.took, n.used, n.spent);
    const open = () => options.open(step);
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
    /**
     * Adds the node of step (a record) or updates it; log is what its stream has shown, or
     * null when it is not followed. Returns the node.
     */
    node(step, log, selected, now) {
      const n = nodes.get(step.step_id) || add(step);
      const st = statusOf(step, log);
      const named = label(step);
      setText(n.name, named.name);
      setText(n.type, named.type);
      setText(n.status, st);
      n.row.dataset.status = st;
      n.row.classList.toggle('selected', selected);
      // Ended by its stream, not yet by its record: it took until its last event.
      const end = log && log.last && !step.ended_at ? log.last.data.ts : null;
      setText(n.took, duration(end ? end - Date.parse(step.created_at) : elapsed(step, now)));
      const u = usageOf(step, log);
      setText(n.used, tokens(u.tokensIn, u.tokensOut));
      setText(n.spent, cost(u.cost));
      return n;
    },
    /** The node of a step, or null. */
    get(stepId) {
      return nodes.get(stepId) || null;
    },
    /** Drops every node. */
    clear() {
      nodes.clear();
      root.replaceChildren();
    },
  };
}
`;
