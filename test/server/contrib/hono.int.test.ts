/** @module `axon/hono` with a real Hono app on `@hono/node-server`, through the conformance suite. */
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { axonHono, type AxonHonoEnv } from '../../../src/server/contrib/hono.js';
import type { Runtime } from '../../../src/runtime/runtime.js';
import { useTestServers } from '../../support/server.js';
import { bridgeConformance, invokeReply, type StartBridge } from './bridge-conformance.js';

async function listen(app: Hono<AxonHonoEnv>): Promise<{ url: string; close(): Promise<void> }> {
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => {
      resolve(s);
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        if ('closeAllConnections' in server) server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}

const startHono: StartBridge = async (runtime, options, background) => {
  const app = new Hono<AxonHonoEnv>();
  const { identify, ...rest } = options;
  app.use(
    axonHono(runtime, {
      ...rest,
      ...(identify ? { identify: (c) => identify((name) => c.req.header(name)) } : {}),
    }),
  );
  app.post('/invoke/:agent', async (c) => {
    const result = await runtime.invoke(c.req.param('agent'), 'hi', c.get('axon').ctx);
    return c.json(invokeReply(c.get('axon'), result));
  });
  app.post('/start/:agent', (c) => {
    background(runtime.invoke(c.req.param('agent'), 'hi', c.get('axon').ctx));
    return c.json({ started: true }, 202);
  });
  return listen(app);
};

bridgeConformance('hono', startHono);

/** The project's store (PostgreSQL under `http-on-postgres`). */
const stores = useTestServers('hono');

describe('axonHono', () => {
  let runtime: Runtime | null = null;
  afterEach(async () => {
    await runtime?.close();
  });

  it('sets X-Correlation-Id on a raw Response a handler returns', async () => {
    runtime = stores.runtime();
    const app = new Hono<AxonHonoEnv>();
    app.use(axonHono(runtime, { anonymous: 'allow' }));
    app.get('/raw', () => new Response('plain', { headers: { 'content-type': 'text/plain' } }));
    const server = await listen(app);
    try {
      const res = await fetch(`${server.url}/raw`, { headers: { 'x-correlation-id': 'raw-1' } });
      expect(await res.text()).toBe('plain');
      expect(res.headers.get('x-correlation-id')).toBe('raw-1');
    } finally {
      await server.close();
    }
  });
});
