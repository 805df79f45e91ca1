/**
 * @module What the trace UI's views and its page share: a route (what the URL hash names),
 * the page's services a view calls (`App`: links, errors, a run's entry), and a view's shape.
 */
import type { Run } from './api-types.js';

/** The views, by the name a route gives. */
export type ViewName = 'runs' | 'run' | 'threads' | 'thread';

/**
 * Where a link goes: `{ run, step }` `#run=<id>&step=<id>`, `{ thread, step }`
 * `#thread=<id>&step=<id>`, `{ view: 'threads' }` `#threads`, `{}` `#runs`.
 */
export interface RouteLink {
  readonly run?: string;
  readonly thread?: string;
  readonly step?: string | null;
  readonly view?: ViewName;
}

/** A route read from the URL hash. */
export interface Route {
  readonly view: ViewName;
  /** The tab of the header it belongs to. */
  readonly nav: 'runs' | 'threads';
  readonly run?: string;
  readonly thread?: string;
  readonly step?: string | null;
}

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
