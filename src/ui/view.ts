/**
 * @module What the trace UI's views and its page share: a route (what the URL hash names;
 * its types are `route-hash.ts`'s), the page's services a view calls (`App`: links, errors, a
 * run's entry), and a view's shape.
 */
import type { Run } from './api-types.js';
import type { Route, RouteLink } from './route-hash.js';

export type { AgentAddress, NavName, Route, RouteLink, ViewName } from './route-hash.js';

/** What the views share of the page. */
export interface App {
  /** The href of a route. */
  href(route: RouteLink): string;
  /** Goes to a route (draws it again when it is the current one). */
  go(route: RouteLink): void;
  /** Shows a failure in the banner (a 401 is the key form's to say). */
  showError(err: unknown): void;
  clearError(): void;
  /** A run's entry: the server's `entry` field when the view has one, else its flow's name. */
  entryOf(run: Run): Promise<string>;
}

/** A view: its `<section>`, shown for a route and hidden when another is. */
export interface View {
  readonly root: HTMLElement;
  show(route: Route): void;
  hide(): void;
}
