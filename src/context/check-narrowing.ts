/**
 * @module The check of a narrowing given to a delegation: its shape, field by field, so a
 * malformed one is refused naming its field instead of being misread or failing deep inside.
 */
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import type { ContextNarrowing } from './context-options.js';

const FIELDS: Readonly<Record<string, (value: unknown, at: string) => void>> = {
  permissions: (value, at) => {
    const p = record(value, at);
    for (const [key, list] of Object.entries(p)) {
      if (key !== 'roles' && key !== 'allowedTools' && key !== 'allowedAgents') {
        fail(`${at}.${key}`, 'is not a permission (roles, allowedTools, allowedAgents)');
      }
      if (list === undefined || (list === null && key !== 'roles')) continue;
      if (!Array.isArray(list) || !list.every((n) => typeof n === 'string')) {
        const got = Array.isArray(list) ? 'an array holding a non-string' : describe(list);
        fail(
          `${at}.${key}`,
          `must be an array of names${key === 'roles' ? '' : ' or null'}, got ${got}`,
        );
      }
    }
  },
  budgets: (value, at) => {
    for (const [key, limit] of Object.entries(record(value, at))) {
      if (!['maxTokensIn', 'maxTokensOut', 'maxCostUsd', 'maxWallMs'].includes(key)) {
        fail(`${at}.${key}`, 'is not a budget (maxTokensIn, maxTokensOut, maxCostUsd, maxWallMs)');
      }
      if (limit !== undefined) nonNegative(limit, `${at}.${key}`);
    }
  },
  timeoutMs: (value, at) => {
    nonNegative(value, at);
  },
  metadata: (value, at) => {
    record(value, at);
  },
};

function fail(param: string, what: string): never {
  throw new InvalidParamsError(`${param} ${what}`, { param });
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'number':
    case 'boolean':
    case 'bigint':
      return `${typeof value} ${String(value)}`;
    case 'object':
      return 'an object';
    default:
      return `a ${typeof value}`;
  }
}

function record(value: unknown, at: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    fail(at, `must be an object, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

function nonNegative(value: unknown, at: string): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    fail(at, `must be a finite number >= 0, got ${describe(value)}`);
  }
}

/**
 * Throws `InvalidParamsError` (`INVALID_PARAMS`, the field in `details.param`, such as
 * `narrowing.permissions.allowedTools`) unless `value` is `undefined` or a
 * {@link ContextNarrowing}: an object of `permissions` (lists of names), `budgets`
 * (numbers >= 0), `timeoutMs` and `metadata`, nothing else. Whether it widens the parent is
 * the child context's to say (`WideningError`).
 */
export function checkNarrowing(
  value: unknown,
  param = 'narrowing',
): asserts value is ContextNarrowing | undefined {
  if (value === undefined) return;
  for (const [key, field] of Object.entries(record(value, param))) {
    const check = FIELDS[key];
    if (!check)
      fail(`${param}.${key}`, 'is not a narrowing (permissions, budgets, timeoutMs, metadata)');
    if (field !== undefined) check(field, `${param}.${key}`);
  }
}
