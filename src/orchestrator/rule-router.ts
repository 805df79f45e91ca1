/**
 * @module The rule router (Nerva's `RuleRouter`): regular-expression rules tried in order,
 * the first that matches wins at score 1, else an optional default handler at 0.5, else
 * `unknown`. No model, no embeddings: the cheapest router, for commands and keywords.
 */
import { routeResult, type RouteCandidate, type RouteResult, type Router } from './route-result.js';

/** One rule of {@link createRuleRouter}. */
export interface RouteRule {
  /**
   * What a message must match. A string is compiled case-insensitively
   * (`new RegExp(pattern, 'i')`); pass a `RegExp` to choose the flags yourself.
   */
  readonly pattern: RegExp | string;
  /** The handler a matching message goes to. */
  readonly handler: string;
  /** Why, as the result's candidate says it; default names the rule and its pattern. */
  readonly reason?: string;
}

/** Options of {@link createRuleRouter}. */
export interface RuleRouterOptions {
  /** Tried in order; the first that matches wins. May be empty (then only the default). */
  readonly rules: readonly RouteRule[];
  /** The handler of a message no rule matches, at score 0.5; default none (`unknown`). */
  readonly defaultHandler?: string;
}

/** The score of the first matching rule's handler. */
export const RULE_MATCH_SCORE = 1;
/** The score of the default handler when no rule matched. */
export const RULE_DEFAULT_SCORE = 0.5;

interface CompiledRule {
  readonly regex: RegExp;
  readonly handler: string;
  readonly reason: string;
}

/**
 * A router of regular-expression rules. The first rule whose pattern matches the message
 * wins at score 1; when none matches, `defaultHandler` (if given) wins at 0.5; else the
 * result is `unknown` at 0. Its `rawScores` name every handler of the rules (and the
 * default handler): 1 for the winner, 0.5 for the default when it was used, 0 otherwise.
 *
 * Gotchas: the `g` and `y` flags of a `RegExp` are dropped — they make `test` remember
 * where it stopped, so the same message could route differently on the next call. A
 * string pattern is case-insensitive. An invalid string pattern is a `TypeError` here, not
 * at the first message.
 *
 * @example
 * const router = createRuleRouter({
 *   rules: [{ pattern: /\b(flight|airport)s?\b/i, handler: 'travel' }, { pattern: 'invoice', handler: 'billing' }],
 *   defaultHandler: 'chat',
 * });
 * (await router.classify('Book me a flight', ctx)).bestHandler; // 'travel'
 */
export function createRuleRouter(options: RuleRouterOptions): Router {
  if (typeof options !== 'object' || (options as unknown) === null) {
    throw new TypeError('createRuleRouter: options must be an object');
  }
  if (!Array.isArray(options.rules)) {
    throw new TypeError('createRuleRouter: options.rules must be an array of rules');
  }
  const defaultHandler = options.defaultHandler;
  if (defaultHandler !== undefined && !isName(defaultHandler)) {
    throw new TypeError('createRuleRouter: options.defaultHandler must be a non-empty string');
  }
  const rules = options.rules.map(compileRule);
  // Every handler the router can name, at 0: the base of each result's rawScores.
  const names = [
    ...new Set([
      ...rules.map((r) => r.handler),
      ...(defaultHandler === undefined ? [] : [defaultHandler]),
    ]),
  ];

  return {
    name: 'rule',
    classify(message) {
      if (typeof message !== 'string') {
        return Promise.reject(new TypeError('classify: message must be a string'));
      }
      return Promise.resolve(classifyByRules(rules, names, defaultHandler, message));
    },
  };
}

function classifyByRules(
  rules: readonly CompiledRule[],
  names: readonly string[],
  defaultHandler: string | undefined,
  message: string,
): RouteResult {
  // Null prototype: a handler may be called `__proto__`.
  const raw = Object.create(null) as Record<string, number>;
  for (const name of names) raw[name] = 0;
  let winner: RouteCandidate | null = null;
  for (const rule of rules) {
    if (rule.regex.test(message)) {
      winner = { name: rule.handler, score: RULE_MATCH_SCORE, reason: rule.reason };
      break;
    }
  }
  if (!winner && defaultHandler !== undefined) {
    winner = {
      name: defaultHandler,
      score: RULE_DEFAULT_SCORE,
      reason: 'no rule matched: the default handler',
    };
  }
  if (winner) raw[winner.name] = winner.score;
  return routeResult(winner ? [winner] : [], raw);
}

function compileRule(rule: RouteRule, i: number): CompiledRule {
  const where = `createRuleRouter: options.rules[${i}]`;
  if (typeof rule !== 'object' || (rule as unknown) === null) {
    throw new TypeError(`${where} must be an object { pattern, handler, reason? }`);
  }
  if (!isName(rule.handler)) {
    throw new TypeError(`${where}.handler must be a non-empty string`);
  }
  if (rule.reason !== undefined && typeof rule.reason !== 'string') {
    throw new TypeError(`${where}.reason must be a string`);
  }
  let regex: RegExp;
  if (rule.pattern instanceof RegExp) {
    regex = new RegExp(rule.pattern.source, rule.pattern.flags.replace(/[gy]/g, ''));
  } else if (typeof rule.pattern === 'string') {
    try {
      regex = new RegExp(rule.pattern, 'i');
    } catch (err) {
      throw new TypeError(
        `${where}.pattern is not a valid regular expression: ${(err as Error).message}`,
        { cause: err },
      );
    }
  } else {
    throw new TypeError(`${where}.pattern must be a RegExp or a string`);
  }
  return {
    regex,
    handler: rule.handler,
    reason: rule.reason ?? `matched rule ${i}: ${String(regex)}`,
  };
}

function isName(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}
