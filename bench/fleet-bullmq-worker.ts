/**
 * @module bench:fleet's raw BullMQ peer: one worker process taking no-op jobs from a queue,
 * `concurrency` at once, each returning when it started (for submit-to-start). Arguments:
 * `<redis url> <bull prefix> <queue> <concurrency>`. Prints `ready` once it takes jobs.
 */
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';

const [url = 'redis://127.0.0.1:6379', prefix = 'bull', queue = 'noop', concurrency = '16'] =
  process.argv.slice(2);
const connection = new Redis(url, { maxRetriesPerRequest: null });
const worker = new Worker(queue, () => Promise.resolve({ started: Date.now() }), {
  connection,
  prefix,
  concurrency: Number(concurrency),
});
await worker.waitUntilReady();
process.stdout.write('ready\n');
process.on('SIGTERM', () => {
  void worker.close().then(() => {
    connection.disconnect();
  });
});
