/**
 * @module The form of an agent's page that sends its actor a message
 * (`POST /v1/agents/{name}/{key}/messages` `{ message, client_token? }`): the message as JSON
 * — text that does not parse is refused here, naming why, and nothing is sent — and an
 * optional client token. It says what came of it under the form: the message accepted (a
 * link to its step) and its status, or the one a client token seen before named (200); or the
 * API's refusal as `CODE (status): message`, which the page also shows in its banner as the
 * operator's actions do — 422 `SCHEMA_VIOLATION` (the agent's input), 429 `QUEUE_FULL`, 409
 * `CONFLICT` (a busy actor under `reject`), 404 an unknown agent. The text stays in the field.
 */
import { httpStatus, isApiError, postJsonAnswer } from './api.js';
import type { MessageReceipt } from './api-types.js';
import { el } from './dom.js';

/** What the form tells its page. */
export interface MessageFormHooks {
  /** The href of a message's step on the page. */
  readonly stepHref: (stepId: string) => string;
  /** The message was accepted (or found by its client token). */
  readonly sent: (receipt: MessageReceipt, created: boolean) => void;
  /** The API refused it: the page's banner says so too. */
  readonly refused: (err: unknown) => void;
}

/** The form; {@link MessageForm.target} says which actor it sends to. */
export interface MessageForm {
  readonly root: HTMLElement;
  /**
   * The actor it sends to (`null`: none — the form is off and `why` says why, e.g. another
   * user's actor, which the caller's messages cannot reach).
   */
  target(path: string | null, why?: string): void;
}

/** A message form; see the module. */
export function createMessageForm(hooks: MessageFormHooks): MessageForm {
  const text = el('textarea', {
    class: 'message-input',
    'data-testid': 'agent-message-input',
    'aria-label': 'message (JSON)',
    rows: 3,
    spellcheck: 'false',
    placeholder: '{ "text": "hello" }',
  });
  const token = el('input', {
    type: 'text',
    'data-testid': 'agent-message-token',
    'aria-label': 'client token (optional)',
    placeholder: 'client token (optional)',
    autocomplete: 'off',
    spellcheck: 'false',
    maxlength: 256,
  });
  const send = el(
    'button',
    { type: 'submit', 'data-testid': 'agent-message-send' },
    'Send message',
  );
  const result = el('p', {
    class: 'result',
    role: 'status',
    'data-testid': 'agent-message-result',
    hidden: true,
  });
  const off = el('p', { class: 'note', 'data-testid': 'agent-message-off', hidden: true });
  const form = el(
    'form',
    { class: 'message-form', 'data-testid': 'agent-message-form' },
    text,
    el('div', { class: 'trigger' }, token, send),
  );
  const root = el('div', null, el('h3', null, 'Send a message'), off, form, result);
  let path: string | null = null;

  function say(state: string, ...parts: (Node | string)[]): void {
    result.hidden = false;
    result.dataset['state'] = state;
    result.replaceChildren(...parts);
  }

  async function submit(): Promise<void> {
    const target = path;
    if (target === null) return;
    let message: unknown;
    try {
      message = JSON.parse(text.value) as unknown;
    } catch (err) {
      delete result.dataset['errorCode'];
      say('error', `Not sent: the message is not JSON (${(err as Error).message}).`);
      return;
    }
    const clientToken = token.value.trim();
    send.disabled = true;
    delete result.dataset['errorCode'];
    say('pending', 'sending\u2026');
    try {
      const answer = await postJsonAnswer(
        `${target}/messages`,
        clientToken === '' ? { message } : { message, client_token: clientToken },
      );
      const r = answer.body as MessageReceipt;
      const created = answer.status === 202;
      const link = el(
        'a',
        { href: hooks.stepHref(r.step_id), 'data-testid': 'agent-message-step' },
        r.message_id,
      );
      say(
        'ok',
        created ? 'Message ' : 'Already sent with this client token: message ',
        link,
        created ? ` accepted, ${r.status}.` : ` is ${r.status}.`,
      );
      hooks.sent(r, created);
    } catch (err) {
      const code = isApiError(err) ? err.code : 'ERROR';
      result.dataset['errorCode'] = code;
      const status = httpStatus(err);
      const why = err instanceof Error ? err.message : String(err);
      say(
        'error',
        el('b', { 'data-testid': 'agent-message-code' }, code),
        `${status !== null ? ` (${status})` : ''}: ${why}`,
      );
      hooks.refused(err);
    } finally {
      send.disabled = false;
    }
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void submit();
  });

  return {
    root,
    target(next, why) {
      path = next;
      form.hidden = next === null;
      off.hidden = next !== null || why === undefined;
      off.textContent = why ?? '';
      if (next === null) result.hidden = true;
    },
  };
}
