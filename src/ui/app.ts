/**
 * @module The trace UI's entry (bundled with its imports into `ui/app-<hash>.js`): routes the
 * URL hash to a view (`#runs`, `#run=<id>[&step=<id>]`, `#threads`,
 * `#thread=<id>[&step=<id>]`, `#agents`, `#agent=<name>&key=<key>[&user=<id>][&step=<id>]`,
 * `#schedules`; `route-hash.ts`), asks for the API key when the server answers 401, shows
 * failures in a banner, and names a run's entry. The views are a table by name.
 */
import './app.css';
import './agents.css';
import { getJson, hasKey, httpStatus, isApiError, onUnauthorized, setKey } from './api.js';
import type { Flow, Run } from './api-types.js';
import { createAgentView } from './agent-view.js';
import { createAgentsView } from './agents-view.js';
import { setText } from './dom.js';
import { hashOf, routeOf } from './route-hash.js';
import { createRunView } from './run-view.js';
import { createRunsView } from './runs-view.js';
import { createSchedulesView } from './schedules-view.js';
import { createThreadView } from './thread-view.js';
import { createThreadsView } from './threads-view.js';
import type { App, View, ViewName } from './view.js';

/** The element of the page with `data-testid="<id>"`; the page (page.html) has each one. */
function byTestId(id: string): HTMLElement {
  const found = document.querySelector<HTMLElement>(`[data-testid="${id}"]`);
  if (!found) throw new Error(`the page has no [data-testid="${id}"]`);
  return found;
}

const banner = byTestId('error-banner');
const authForm = byTestId('auth-form');
const authKey = byTestId('auth-key') as HTMLInputElement;
const authMessage = byTestId('auth-message');
const authState = byTestId('auth-state');
const authForget = byTestId('auth-forget');

const flowNames = new Map<string, Promise<string>>();

const app: App = {
  href: hashOf,
  go(route) {
    const hash = hashOf(route);
    if (location.hash === hash) render();
    else location.hash = hash;
  },
  showError(err) {
    if (httpStatus(err) === 401) return; // the key form says it
    banner.hidden = false;
    const message = err instanceof Error ? err.message : String(err);
    setText(banner, isApiError(err) ? `${err.code}: ${message}` : message);
  },
  clearError() {
    banner.hidden = true;
  },
  entryOf(run: Run) {
    if (typeof run.entry === 'string' && run.entry !== '') return Promise.resolve(run.entry);
    const flowId = run.flow_id;
    if (flowId === null) return Promise.resolve(run.run_id);
    let name = flowNames.get(flowId);
    if (!name) {
      name = getJson<Flow>(`/v1/flows/${encodeURIComponent(flowId)}`).then(
        (flow) => flow.name ?? flowId,
        () => {
          flowNames.delete(flowId);
          return flowId;
        },
      );
      flowNames.set(flowId, name);
    }
    return name;
  },
};

// The views, by the name a route gives, each in its <section> of the page. A thread is a run
// of a workflow, its turns the steps of that run: the thread view shows them with the run
// view's tree, and each opens in the other. An actor's messages are the steps of its run:
// the agent view shows them with the run view's trace.
const VIEWS: Readonly<Record<ViewName, View>> = {
  runs: createRunsView(byTestId('runs-view'), app),
  run: createRunView(byTestId('run-view'), app),
  threads: createThreadsView(byTestId('threads-view'), app),
  thread: createThreadView(byTestId('thread-view'), app),
  agents: createAgentsView(byTestId('agents-view'), app),
  agent: createAgentView(byTestId('agent-view'), app),
  schedules: createSchedulesView(byTestId('schedules-view'), app),
};
let current: ViewName | null = null;

function render(): void {
  const route = routeOf(location.hash);
  for (const [name, view] of Object.entries(VIEWS) as [ViewName, View][]) {
    if (name !== route.view) {
      if (current === name) view.hide();
      view.root.hidden = true;
    }
  }
  for (const link of document.querySelectorAll<HTMLElement>('nav a[data-view]')) {
    link.classList.toggle('active', link.dataset['view'] === route.nav);
  }
  current = route.view;
  VIEWS[route.view].root.hidden = false;
  VIEWS[route.view].show(route);
}

/** Starts the current view again (with a new key, or none). */
function restart(): void {
  if (current !== null) VIEWS[current].hide();
  current = null;
  render();
}

function renderAuth(): void {
  authState.hidden = !hasKey();
  authForget.hidden = !hasKey();
  setText(authState, hasKey() ? 'key set for this tab' : '');
}

onUnauthorized(() => {
  authMessage.textContent = hasKey()
    ? 'The server does not accept this key. Enter another:'
    : 'This server needs an API key (Authorization: Bearer):';
  authForm.hidden = false;
  banner.hidden = true;
  authKey.focus();
});

authForm.addEventListener('submit', (e) => {
  e.preventDefault();
  setKey(authKey.value);
  authKey.value = '';
  authForm.hidden = true;
  renderAuth();
  restart();
});

authForget.addEventListener('click', () => {
  setKey(null);
  renderAuth();
  restart();
});

window.addEventListener('hashchange', render);
renderAuth();
render();
