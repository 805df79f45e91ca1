/** @module `axon/express` with a real Express 5 app on a real port, through the conformance suite. */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { axonExpress } from '../../../src/server/contrib/express.js';
import { headerLookup } from '../../../src/server/contrib/request-context.js';
import { bridgeConformance, invokeReply, type StartBridge } from './bridge-conformance.js';

const startExpress: StartBridge = async (runtime, options, background) => {
  const app = express();
  const { identify, ...rest } = options;
  app.use(
    axonExpress(runtime, {
      ...rest,
      ...(identify ? { identify: (req) => identify(headerLookup(req.headers)) } : {}),
    }),
  );
  app.post('/invoke/:agent', async (req, res) => {
    const result = await runtime.invoke(req.params['agent'], 'hi', req.axon.ctx);
    res.json(invokeReply(req.axon, result));
  });
  app.post('/start/:agent', (req, res) => {
    background(runtime.invoke(req.params['agent'], 'hi', req.axon.ctx));
    res.status(202).json({ started: true });
  });
  const server = await new Promise<ReturnType<typeof app.listen>>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => {
      resolve(s);
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
};

bridgeConformance('express', startExpress);
