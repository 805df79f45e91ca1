/**
 * @module Scope isolation (seed 002): every memory item sits under a scope key, and a
 * context sees exactly the keys its identity gives it.
 *
 * | scope   | key                          | seen by                                  |
 * | ------- | ---------------------------- | ---------------------------------------- |
 * | user    | `user:<user>`                | every session of that user               |
 * | session | `session:<user>:<session>`   | that session of that user only           |
 * | agent   | `agent:<agent>`              | every user, in that agent                |
 * | global  | `global`                     | everyone                                 |
 *
 * A user or session key always holds the user id, so no context of another user can name
 * it: user A's items never reach user B. Without a user id a context has no user or
 * session keys (an anonymous caller shares nothing private).
 */
import type { ExecContext, MemoryScope } from '../context/exec-context.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';

/** Parts of a key are joined with ':'; an id's own ':' and '%' are escaped. */
function part(id: string): string {
  return id.replace(/%/g, '%25').replace(/:/g, '%3A');
}

/** The agent a context acts for: its step's actor name, else its own name. */
export function agentOf(ctx: ExecContext): string {
  return ctx.path.at(-1) ?? ctx.name;
}

/**
 * The key an item stored under `scope` in `ctx` gets. `InvalidParamsError` when the
 * context lacks what the scope needs (a user id for `user`; a user and a session id for
 * `session`).
 */
export function scopeKey(scope: MemoryScope, ctx: ExecContext): string {
  switch (scope) {
    case 'global':
      return 'global';
    case 'agent':
      return `agent:${part(agentOf(ctx))}`;
    case 'user':
      if (ctx.userId === null) {
        throw new InvalidParamsError('memory scope "user" needs a context with a user id', {
          param: 'scope',
        });
      }
      return `user:${part(ctx.userId)}`;
    case 'session':
      if (ctx.userId === null || ctx.sessionId === null) {
        throw new InvalidParamsError(
          'memory scope "session" needs a context with a user id and a session id',
          { param: 'scope' },
        );
      }
      return `session:${part(ctx.userId)}:${part(ctx.sessionId)}`;
  }
}

/** Every key `ctx` may recall from, most private first. */
export function visibleKeys(ctx: ExecContext): string[] {
  const keys: string[] = [];
  if (ctx.userId !== null) {
    if (ctx.sessionId !== null) keys.push(scopeKey('session', ctx));
    keys.push(scopeKey('user', ctx));
  }
  keys.push(scopeKey('agent', ctx), 'global');
  return keys;
}
