/**
 * @module The bridges' `orchestrator` option refused when it is not one (no `handle` and
 * `stream`), naming the bridge and the option, before anything is served.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../../src/runtime/runtime.js';
import { axonExpress } from '../../../src/server/contrib/express.js';
import { axonFastify } from '../../../src/server/contrib/fastify.js';
import { axonHono } from '../../../src/server/contrib/hono.js';
import { quietRuntime } from '../../support/runtime.js';

/** What a bridge must say to let callers that name nobody in. */
const ANON = { anonymous: 'allow' } as const;

describe('the orchestrator option', () => {
  let runtime: Runtime | null = null;
  afterEach(async () => {
    await runtime?.close();
  });

  it.each([
    [
      'axonExpress',
      (rt: Runtime, o: unknown) => axonExpress(rt, { orchestrator: o as never, ...ANON }),
    ],
    [
      'axonFastify',
      (rt: Runtime, o: unknown) => axonFastify(rt, { orchestrator: o as never, ...ANON }),
    ],
    ['axonHono', (rt: Runtime, o: unknown) => axonHono(rt, { orchestrator: o as never, ...ANON })],
  ])('%s refuses one without handle and stream, naming the option', (where, make) => {
    const rt = (runtime = quietRuntime());
    for (const bad of [{}, { handle: () => undefined }, null, 'door']) {
      expect(() => make(rt, bad)).toThrow(TypeError);
      expect(() => make(rt, bad)).toThrow(new RegExp(`^${where}: orchestrator must`));
    }
  });
});
