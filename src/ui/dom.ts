/**
 * @module The trace UI's DOM helpers: `el` makes an element with its attributes and children,
 * `figureList` a page's figures as a definition list, `setText` changes a node's text only
 * when it differs, `setTime` shows a time in a `<time>` (its text as the CLI prints it, its
 * exact ISO value in `datetime`).
 */
import { when } from './format.js';

/** An attribute's value: `null`, `undefined` and `false` leave it out, `true` sets it empty. */
export type AttrValue = string | number | boolean | null | undefined;
/** A child of {@link el}: nothing, text or a node. */
export type Child = Node | string | null | undefined;

/** An element: `el('span', { class: 'x', 'data-testid': 'y' }, 'text', child, …)`. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Readonly<Record<string, AttrValue>> | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

/** Sets an element's text only when it differs (no needless layout). */
export function setText(node: Node, text: string): void {
  if (node.textContent !== text) node.textContent = text;
}

/**
 * Shows the ISO time `iso` in `node`: its text `2026-11-27 18:05:19Z` (to the second, as the
 * CLI prints it), its `datetime` the API's value to the millisecond; `-` and no `datetime` for
 * `null`.
 */
export function setTime(node: HTMLTimeElement, iso: string | null): void {
  setText(node, iso === null ? '-' : when(iso));
  if (iso === null) node.removeAttribute('datetime');
  else if (node.dateTime !== iso) node.dateTime = iso;
}

/**
 * A page's figures as `<dl class="figures">`: each name a `<dt>`, each value a `<dd>` (text,
 * or a `<dd>` the caller keeps to update), each pair in a `<div>` so that a narrow page wraps
 * between figures, never between a name and its value.
 */
export function figureList(
  figures: readonly (readonly [string, string | HTMLElement])[],
): HTMLDListElement {
  return el(
    'dl',
    { class: 'figures' },
    ...figures.map(([name, value]) =>
      el(
        'div',
        null,
        el('dt', null, name),
        typeof value === 'string' ? el('dd', null, value) : value,
      ),
    ),
  );
}
