/** @module `axon/fastify` with a real Fastify 5 app on a real port, through the conformance suite. */
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { axonFastify } from '../../../src/server/contrib/fastify.js';
import { headerLookup } from '../../../src/server/contrib/request-context.js';
import { useTestServers } from '../../support/server.js';
import { bridgeConformance, invokeReply, type StartBridge } from './bridge-conformance.js';

const startFastify: StartBridge = async (runtime, options, background) => {
  // Close drops kept-alive client sockets at once rather than waiting for them to idle out.
  const app = Fastify({ logger: false, forceCloseConnections: true });
  const { identify, ...rest } = options;
  // Registered on the root: its hook must reach the root's routes (encapsulation skipped).
  await app.register(
    axonFastify(runtime, {
      ...rest,
      ...(identify ? { identify: (request) => identify(headerLookup(request.headers)) } : {}),
    }),
  );
  app.post('/invoke/:agent', async (request) => {
    const { agent = '' } = request.params as Record<string, string>;
    const result = await runtime.invoke(agent, 'hi', request.axon.ctx);
    return invokeReply(request.axon, result);
  });
  app.post('/start/:agent', async (request, reply) => {
    const { agent = '' } = request.params as Record<string, string>;
    background(runtime.invoke(agent, 'hi', request.axon.ctx));
    return reply.code(202).send({ started: true });
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { url, close: () => app.close() };
};

bridgeConformance('fastify', startFastify);

/** The project's store (PostgreSQL under `http-on-postgres`). */
const stores = useTestServers('fastify');

describe('axonFastify', () => {
  it('refuses a second registration on one instance (its decorator is already there)', async () => {
    const runtime = stores.runtime();
    const app = Fastify({ logger: false });
    try {
      await app.register(axonFastify(runtime, { anonymous: 'allow' }));
      await expect(
        app.register(axonFastify(runtime, { anonymous: 'allow' })),
      ).rejects.toMatchObject({
        code: 'FST_ERR_DEC_ALREADY_PRESENT',
      });
    } finally {
      await app.close().catch(() => undefined);
      await runtime.close();
    }
  });
});
