/**
 * @module The trace UI's URL hash, both ways: the hash of a route (`#run=<id>&step=<id>`,
 * `#agent=<name>&key=<key>&user=<id>`, `#agents`, …) and the route a hash names. Links into
 * the page are these hashes, so they can be shared and bookmarked. Pure: no DOM.
 */

/** The views, by the name a route gives. */
export type ViewName = 'runs' | 'run' | 'threads' | 'thread' | 'agents' | 'agent' | 'schedules';

/** The tabs of the page's header. */
export type NavName = 'runs' | 'threads' | 'agents' | 'schedules';

/**
 * An actor: a durable agent's name and a key, and whose it is — `user`, when the page was
 * told (an admin key reads every user's actors; `null`: the caller's own).
 */
export interface AgentAddress {
  readonly name: string;
  readonly key: string;
  readonly user?: string | null;
}

/**
 * Where a link goes: `{ run, step }` `#run=<id>&step=<id>`, `{ thread, step }`
 * `#thread=<id>&step=<id>`, `{ agent, step }` `#agent=<name>&key=<key>[&user=<id>]&step=<id>`,
 * `{ view: 'threads' | 'agents' | 'schedules' }` `#threads` …, `{}` `#runs`.
 */
export interface RouteLink {
  readonly run?: string;
  readonly thread?: string;
  readonly agent?: AgentAddress;
  readonly step?: string | null;
  readonly view?: ViewName;
}

/** A route read from the URL hash. */
export interface Route {
  readonly view: ViewName;
  /** The tab of the header it belongs to. */
  readonly nav: NavName;
  readonly run?: string;
  readonly thread?: string;
  readonly agent?: AgentAddress;
  readonly step?: string | null;
}

/** The hash of `route` (`#runs` for `{}`); see {@link RouteLink}. */
export function hashOf(route: RouteLink): string {
  const params = new URLSearchParams();
  if (route.run) params.set('run', route.run);
  if (route.thread) params.set('thread', route.thread);
  if (route.agent) {
    params.set('agent', route.agent.name);
    params.set('key', route.agent.key);
    if (route.agent.user) params.set('user', route.agent.user);
  }
  if (route.step) params.set('step', route.step);
  const text = params.toString();
  return `#${text || route.view || 'runs'}`;
}

/** The route `hash` names; anything it does not name is the runs list. */
export function routeOf(hash: string): Route {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const step = params.get('step');
  const agent = params.get('agent');
  const key = params.get('key');
  if (agent && key) {
    const user = params.get('user');
    return { view: 'agent', nav: 'agents', agent: { name: agent, key, user: user || null }, step };
  }
  const run = params.get('run');
  if (run) return { view: 'run', nav: 'runs', run, step };
  const thread = params.get('thread');
  if (thread) return { view: 'thread', nav: 'threads', thread, step };
  if (params.has('threads')) return { view: 'threads', nav: 'threads' };
  if (params.has('agents')) return { view: 'agents', nav: 'agents' };
  if (params.has('schedules')) return { view: 'schedules', nav: 'schedules' };
  return { view: 'runs', nav: 'runs' };
}

/** An actor's run's entry, `actor:<name>/<key>` (docs/durable-agents.md), read; else null. */
export function actorOfEntry(entry: string | undefined): { name: string; key: string } | null {
  if (entry === undefined || !entry.startsWith('actor:')) return null;
  const address = entry.slice('actor:'.length);
  // A key has no '/' (^[A-Za-z0-9._~-]{1,128}$): the name is everything before the last one.
  const slash = address.lastIndexOf('/');
  if (slash <= 0 || slash === address.length - 1) return null;
  return { name: address.slice(0, slash), key: address.slice(slash + 1) };
}
