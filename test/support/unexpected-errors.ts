/** @module Test helper: collects anything that reaches `uncaughtException` or `unhandledRejection`. */
import { afterEach, beforeEach } from 'vitest';

/**
 * Registers hooks for the enclosing `describe` and returns the list they fill: assert it
 * is empty to prove no error escaped.
 */
export function watchUnexpectedErrors(): unknown[] {
  const unexpected: unknown[] = [];
  const onError = (err: unknown): void => {
    unexpected.push(err);
  };
  beforeEach(() => {
    unexpected.length = 0;
    process.on('uncaughtException', onError);
    process.on('unhandledRejection', onError);
  });
  afterEach(() => {
    process.off('uncaughtException', onError);
    process.off('unhandledRejection', onError);
  });
  return unexpected;
}
