/**
 * @module Test helpers: collect anything that reaches `uncaughtException` or
 * `unhandledRejection`, and fail a test in which XState warns of a message sent to a stopped
 * actor.
 */
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest';

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

/**
 * What XState's development build writes (with `console.warn`) when `actor.send()` is called
 * on a stopped actor: `Event "X" was sent to stopped actor "id (session)". …`. The event is
 * dropped, so the warning always means a lost message.
 */
const STOPPED_ACTOR = /was sent to stopped actor/;

/** A stopped-actor warning as it was printed: during which test, and from which call. */
interface StoppedActorWarning {
  readonly test: string | undefined;
  readonly message: string;
  readonly stack: string;
}

/**
 * Fails any test during which XState warns that an event was sent to a stopped actor: such
 * a message is lost, a lifecycle bug (issue 17). The warning is still printed; the failure
 * adds the stack of the `send`. A warning printed after the file's last test fails the file
 * (in `afterAll`); one printed after its last hook, with no test left to fail, is thrown as
 * an unhandled error, which fails the run.
 *
 * Registered for every test file by `test/support/setup.ts` (vitest `setupFiles`). It wraps
 * `console.warn` and `console.error` itself, not through `vi.spyOn`, so that
 * `vi.restoreAllMocks()` in a test does not remove it.
 *
 * Gotcha: a warning from a timer a test left behind fails the test that runs when it fires;
 * the stack in the message names the timer's code.
 */
export function failOnStoppedActorWarnings(): void {
  // Filled from the file's first hook to its last; `null` after.
  let seen: StoppedActorWarning[] | null = null;
  // Vitest gives each test file a new `console`, and XState looks it up at each call: the
  // next file's warnings reach the next file's wrappers.
  for (const level of ['warn', 'error'] as const) {
    const print = console[level].bind(console);
    console[level] = (...args: unknown[]): void => {
      print(...args);
      const message = args.map(String).join(' ');
      if (!STOPPED_ACTOR.test(message)) return;
      const warning: StoppedActorWarning = {
        test: expect.getState().currentTestName,
        message,
        stack: (new Error('sent here').stack ?? '').split('\n').slice(2).join('\n'),
      };
      if (seen) seen.push(warning);
      else
        setImmediate(() => {
          failOn([warning], 'after its test file ended');
        });
    };
  }
  beforeAll(() => {
    seen = [];
  });
  afterEach(() => {
    failOn(seen?.splice(0) ?? [], 'during this test');
  });
  afterAll(() => {
    const late = seen ?? [];
    seen = null;
    failOn(late, 'between the tests of this file');
  });
}

function failOn(warnings: readonly StoppedActorWarning[], when: string): void {
  if (warnings.length === 0) return;
  const each = warnings.map(
    (w) => `${w.message}\n  printed while running: ${w.test ?? '(no test)'}\n${w.stack}`,
  );
  throw new Error(
    `XState warned ${when} of ${warnings.length} event(s) sent to a stopped actor, and dropped them:\n\n${each.join('\n\n')}`,
  );
}
