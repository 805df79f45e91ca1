/**
 * @module The trace UI's `ui/app.js` (the page's entry module, kept as a string): routes the
 * URL hash to a view (`#runs`, `#run=<id>[&step=<id>]`, `#threads`,
 * `#thread=<id>[&step=<id>]`), asks for the API key when the server answers 401, shows
 * failures in a banner, and names a run's entry. The views are a table by name.
 */

/** `ui/app.js`. */
export const APP_JS = String.raw`// axon trace UI: the page.
import { getJson, hasKey, onUnauthorized, setKey } from './api.js';
import { setText } from './format.js';
import { createRunView } from './run-view.js';
import { createRunsView } from './runs-view.js';
import { createThreadView } from './thread-view.js';
import { createThreadsView } from './threads-view.js';

const byTestId = (id) => document.querySelector('[data-testid="' + id + '"]');
const banner = byTestId('error-banner');
const authForm = byTestId('auth-form');
const authKey = byTestId('auth-key');
const authMessage = byTestId('auth-message');
const authState = byTestId('auth-state');
const authForget = byTestId('auth-forget');

/**
 * What a route looks like in the hash: { run, step } '#run=<id>&step=<id>', { thread, step }
 * '#thread=<id>&step=<id>', { view: 'threads' } '#threads', {} '#runs'.
 */
function hashOf(route) {
  const params = new URLSearchParams();
  if (route.run) params.set('run', route.run);
  if (route.thread) params.set('thread', route.thread);
  if (route.step) params.set('step', route.step);
  const text = params.toString();
  return '#' + (text || route.view || 'runs');
}

function routeOf(hash) {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const run = params.get('run');
  if (run) return { view: 'run', nav: 'runs', run, step: params.get('step') };
  const thread = params.get('thread');
  if (thread) return { view: 'thread', nav: 'threads', thread, step: params.get('step') };
  if (params.has('threads')) return { view: 'threads', nav: 'threads' };
  return { view: 'runs', nav: 'runs' };
}

const flowNames = new Map();

/** What the views share of the page. */
const app = {
  href: hashOf,
  go(route) {
    const hash = hashOf(route);
    if (location.hash === hash) render();
    else location.hash = hash;
  },
  showError(err) {
    if (err && err.status === 401) return; // the key form says it
    banner.hidden = false;
    setText(banner, (err && err.code ? err.code + ': ' : '') + (err && err.message ? err.message : String(err)));
  },
  clearError() {
    banner.hidden = true;
  },
  /** A run's entry: the server's entry field when the view has one, else its flow's name. */
  entryOf(run) {
    if (typeof run.entry === 'string' && run.entry !== '') return Promise.resolve(run.entry);
    if (!run.flow_id) return Promise.resolve(run.run_id);
    let name = flowNames.get(run.flow_id);
    if (!name) {
      name = getJson('/v1/flows/' + encodeURIComponent(run.flow_id)).then(
        (flow) => flow.name || run.flow_id,
        () => {
          flowNames.delete(run.flow_id);
          return run.flow_id;
        },
      );
      flowNames.set(run.flow_id, name);
    }
    return name;
  },
};

// The views, by the name a route gives. Each is { root, show(route), hide() }, its root a
// <section> of the page. A thread is a run of a workflow, its turns the steps of that run:
// the thread view shows them with the run view's tree, and each opens in the other.
const VIEWS = {
  runs: createRunsView(byTestId('runs-view'), app),
  run: createRunView(byTestId('run-view'), app),
  threads: createThreadsView(byTestId('threads-view'), app),
  thread: createThreadView(byTestId('thread-view'), app),
};
let current = null;

function render() {
  const route = routeOf(location.hash);
  for (const [name, view] of Object.entries(VIEWS)) {
    if (name !== route.view) {
      if (current === name) view.hide();
      view.root.hidden = true;
    }
  }
  for (const link of document.querySelectorAll('nav a[data-view]')) {
    link.classList.toggle('active', link.dataset.view === route.nav);
  }
  current = route.view;
  VIEWS[route.view].root.hidden = false;
  VIEWS[route.view].show(route);
}

function renderAuth() {
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
  // Start the view again, with the key.
  if (current) VIEWS[current].hide();
  current = null;
  render();
});

authForget.addEventListener('click', () => {
  setKey(null);
  renderAuth();
  if (current) VIEWS[current].hide();
  current = null;
  render();
});

window.addEventListener('hashchange', render);
renderAuth();
render();
`;
