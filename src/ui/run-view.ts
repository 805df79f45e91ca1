/**
 * @module One run in the trace UI — its status (with how many of its steps failed, counted
 * from the steps its stream gives), its figures, the operator's actions (cancel the run,
 * complete it; cancel the opened step in the step panel), and its live trace (`run-trace.ts`:
 * the timeline, the tree of its steps, the step panel, kept live by the run's stream). An
 * actor's run (entry `actor:<name>/<key>`) links to its agent's page, a thread's to its
 * thread. Every token and cost figure is the API's.
 */
import { ACTIONABLE_RUN, actionButton, type ActionHooks } from './actions.js';
import type { Run } from './api-types.js';
import { el, figureList, setText } from './dom.js';
import { cost, duration, elapsed, failedCount, failedNote, tokens, when } from './format.js';
import { actorOfEntry } from './route-hash.js';
import { NOT_FOLLOWED, createRunTrace } from './run-trace.js';
import type { App, Route, View } from './view.js';

/** The view of one run (the hash `#run=<id>[&step=<id>]`), in `root`. */
export function createRunView(root: HTMLElement, app: App): View {
  const back = el('a', { href: '#runs', class: 'back', 'data-testid': 'back-to-runs' }, '< Runs');
  const entry = el('h1', { 'data-testid': 'run-entry' });
  const status = el('span', { class: 'status', 'data-testid': 'run-status' });
  // How many of its steps failed (its status alone says `running` while it goes on).
  const failed = el('span', { class: 'failed-steps', 'data-testid': 'run-failed', hidden: true });
  const asThread = el('a', { 'data-testid': 'run-thread-link', hidden: true }, 'open as a thread');
  const asAgent = el('a', { 'data-testid': 'run-agent-link', hidden: true }, 'open as an agent');
  const runId = el('code', { 'data-testid': 'run-id' });
  const started = el('dd', { 'data-testid': 'run-started' });
  const took = el('dd', { 'data-testid': 'run-duration' });
  const used = el('dd', { 'data-testid': 'run-tokens' });
  const spent = el('dd', { 'data-testid': 'run-cost' });
  const note = el('p', { class: 'note', 'data-testid': 'run-note', hidden: true }, NOT_FOLLOWED);
  // The operator's actions; a refused one shows the API's error in the banner. What an
  // accepted one changes comes on the run's stream.
  const acted: ActionHooks = {
    done: () => {
      app.clearError();
    },
    failed: (err) => {
      app.showError(err);
    },
  };
  const cancelRun = actionButton('cancel-run', 'run-cancel', acted);
  const completeRun = actionButton('complete-run', 'run-complete', acted);

  function renderRun(run: Run, now: number): void {
    void app.entryOf(run).then((name) => {
      if (trace.run() === run) setText(entry, name);
    });
    setText(status, run.status);
    status.dataset['status'] = run.status;
    setText(runId, run.run_id);
    setText(started, when(run.created_at));
    setText(took, duration(elapsed(run, now)));
    setText(used, tokens(run.budget_usage.tokens_in, run.budget_usage.tokens_out));
    setText(spent, cost(run.budget_usage.cost_usd));
    // An actor's messages are the steps of its run, 'actor:<name>/<key>'. That run lives as
    // long as its actor, which goes on taking messages: it is not the page's to complete or
    // cancel (the actor's messages are cancelled by POST /v1/agents/{name}/{key}/cancel).
    const actor = actorOfEntry(run.entry);
    asAgent.hidden = actor === null;
    if (actor) asAgent.setAttribute('href', app.href({ agent: actor }));
    const actionable = ACTIONABLE_RUN.has(run.status) && actor === null ? run.run_id : null;
    cancelRun.target(actionable);
    completeRun.target(actionable);
    note.hidden = run.cancel_on_disconnect !== true;
    // A thread is a run of its workflow's flow, 'workflow:<name>'.
    const thread = typeof run.entry === 'string' && run.entry.startsWith('workflow:');
    asThread.hidden = !thread;
    if (thread) asThread.setAttribute('href', app.href({ thread: run.run_id }));
  }

  const trace = createRunTrace({
    href: (id, stepId) => app.href({ run: id, step: stepId }),
    open: (id, stepId) => {
      app.go({ run: id, step: stepId });
    },
    changed: (run, steps, now) => {
      app.clearError();
      if (run) renderRun(run, now);
      const failures = failedCount(steps);
      setText(failed, failedNote(failures));
      failed.hidden = failures === 0;
    },
    tick: (run, now) => {
      if (run) setText(took, duration(elapsed(run, now)));
    },
    failed: (err) => {
      app.showError(err);
    },
    acted,
    empty: 'No steps yet: submit one with POST /v1/runs/{run_id}/steps.',
  });

  root.append(
    el(
      'div',
      { class: 'toolbar' },
      back,
      entry,
      status,
      failed,
      asThread,
      asAgent,
      el('span', { class: 'actions' }, completeRun.button, cancelRun.button),
    ),
    figureList([
      ['run', runId],
      ['started', started],
      ['duration', took],
      ['tokens', used],
      ['cost', spent],
    ]),
    note,
    trace.timeline,
    trace.body,
  );

  return {
    root,
    show(route: Route) {
      const id = route.run ?? '';
      if (trace.show(id, route.step ?? null)) {
        setText(entry, id);
        setText(status, '');
        setText(failed, '');
        failed.hidden = true;
        asThread.hidden = true;
        asAgent.hidden = true;
        cancelRun.target(null);
        completeRun.target(null);
      }
    },
    hide() {
      trace.stop();
      cancelRun.target(null);
      completeRun.target(null);
    },
  };
}
