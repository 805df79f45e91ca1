/**
 * @module The operator's actions of the trace UI: cancel a step, cancel a run, complete a
 * run — each one POST of the API (`/v1/steps/{id}/cancel`, `/v1/runs/{id}/cancel`,
 * `/v1/runs/{id}/complete`) with the tab's API key, from a button that is disabled while its
 * request is out. A refused action (409 the run has live steps, 403, 404, …) is the API's
 * error, handed to the page to show in its banner as `CODE: message`.
 */
import { postJson } from './api.js';

/** The actions, by what they act on. */
export type ActionKind = 'cancel-step' | 'cancel-run' | 'complete-run';

/** Run statuses an operator may still cancel or complete. */
export const ACTIONABLE_RUN: ReadonlySet<string> = new Set(['running', 'waiting']);
/** Step statuses an operator may still cancel. */
export const ACTIONABLE_STEP: ReadonlySet<string> = new Set(['queued', 'running', 'waiting']);

const PATHS: Readonly<Record<ActionKind, (id: string) => string>> = {
  'cancel-step': (id) => `/v1/steps/${encodeURIComponent(id)}/cancel`,
  'cancel-run': (id) => `/v1/runs/${encodeURIComponent(id)}/cancel`,
  'complete-run': (id) => `/v1/runs/${encodeURIComponent(id)}/complete`,
};

const LABELS: Readonly<Record<ActionKind, string>> = {
  'cancel-step': 'Cancel step',
  'cancel-run': 'Cancel run',
  'complete-run': 'Complete run',
};

/** Does action `kind` on `id`: the API's answer, or rejects with its `ApiError`. */
export function act(kind: ActionKind, id: string): Promise<unknown> {
  return postJson(PATHS[kind](id), {});
}

/** What an action button tells its page. */
export interface ActionHooks {
  /** The action was accepted: read what it changed. */
  readonly done: (kind: ActionKind, answer: unknown) => void;
  /** The API refused it, or it could not be sent: show why. */
  readonly failed: (err: unknown) => void;
}

/** An action's button (`data-testid` e.g. `run-cancel`); see {@link ActionButton.target}. */
export interface ActionButton {
  readonly button: HTMLButtonElement;
  /** What it acts on now (`null`: none — it hides). */
  target(id: string | null): void;
}

/** A button that does `kind` on its target when clicked; see the module. */
export function actionButton(kind: ActionKind, testId: string, hooks: ActionHooks): ActionButton {
  const button = document.createElement('button');
  button.type = 'button';
  button.className = kind === 'complete-run' ? 'action' : 'action danger';
  button.setAttribute('data-testid', testId);
  button.textContent = LABELS[kind];
  button.hidden = true;
  let id: string | null = null;
  button.addEventListener('click', () => {
    const target = id;
    if (target === null || button.disabled) return;
    button.disabled = true;
    act(kind, target).then(
      (answer) => {
        button.disabled = false;
        hooks.done(kind, answer);
      },
      (err: unknown) => {
        button.disabled = false;
        hooks.failed(err);
      },
    );
  });
  return {
    button,
    target(next) {
      id = next;
      button.hidden = next === null;
    },
  };
}
