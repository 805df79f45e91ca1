// A probe, not a benchmark: the host cost of dispatching a no-op to 2 worker threads through
// piscina.run() against plain messages on a persistent MessagePort per thread.
//   node bench/probes/piscina-vs-ports.mjs
import console from 'node:console';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { URL } from 'node:url';
import { Worker, MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
const src = `const { parentPort } = require('node:worker_threads');
parentPort.once('message', ({ port }) => { port.on('message', (m) => port.postMessage({ id: m.id, out: null })); });`;
const workers = [0, 1].map(() => {
  const w = new Worker(src, { eval: true });
  const { port1, port2 } = new MessageChannel();
  w.postMessage({ port: port2 }, [port2]);
  const pending = new Map();
  port1.on('message', (m) => {
    pending.get(m.id)(m.out);
    pending.delete(m.id);
  });
  return { port: port1, pending, busy: 0 };
});
let id = 0;
const viaPort = () => {
  const w = workers[0].busy <= workers[1].busy ? workers[0] : workers[1];
  w.busy++;
  const i = ++id;
  return new Promise((res) => {
    w.pending.set(i, (v) => {
      w.busy--;
      res(v);
    });
    w.port.postMessage({ id: i, task: { message: 'x' } });
  });
};
const p = new Piscina({
  filename: new URL('../noop-worker.mjs', import.meta.url).href,
  minThreads: 2,
  maxThreads: 2,
});
async function measure(name, op) {
  let n = 0;
  const end = performance.now() + 2000;
  const e0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (performance.now() < end) {
        await op();
        n++;
      }
    }),
  );
  const e = performance.eventLoopUtilization(e0);
  console.log(
    name.padEnd(8),
    Math.round(n / ((performance.now() - t0) / 1000)),
    'ops/s',
    ((e.active * 1000) / n).toFixed(1),
    'us host/op',
  );
}
for (let r = 0; r < 2; r++) {
  await measure('piscina', () => p.run(1));
  await measure('ports', viaPort);
}
await p.destroy();
for (const w of workers) w.port.close();
process.exit(0);
