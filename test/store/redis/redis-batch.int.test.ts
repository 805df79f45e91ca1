/**
 * `RedisBatch.onSent` on a real Redis: what a fleet worker sends after a step's end (its
 * job's finish) runs after that end. Once the client's Redis surely has the store's script,
 * the callback comes as the call goes (the worker does not wait for the reply); before that
 * — a new client, or one whose connection closed — it comes after the reply, since a call by
 * digest that Redis does not know is sent again whole, after whatever followed it.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisBatch } from '../../../src/store/redis/redis-batch.js';
import { Op } from '../../../src/store/redis/redis-scripts.js';
import { clearRedisPrefix, redisUrl } from '../../support/redis.js';

const prefix = `axon-test:${randomUUID()}:`;
const clients: Redis[] = [];
afterAll(async () => {
  await clearRedisPrefix(prefix);
  await Promise.all(clients.map((c) => c.quit().catch(() => undefined)));
});

function client(): Redis {
  const c = new Redis(redisUrl());
  clients.push(c);
  return c;
}

/** A write of one stream entry (`Op.stream`) to `key`. */
function entry(batch: RedisBatch, key: string): Promise<unknown> {
  return batch.write(Op.stream, [key], ['100', '60000', 'f', 'v']);
}

describe('RedisBatch.onSent', () => {
  it('once a call was answered, tells as the call goes: a command sent then runs after the writes', async () => {
    const c = client();
    const batch = new RedisBatch(c, null);
    await entry(batch, `${prefix}warm`);
    const key = `${prefix}a`;
    const written = entry(batch, key);
    const told: { length?: Promise<number> } = {};
    batch.onSent(() => {
      told.length = c.xlen(key);
    });
    expect(told.length).toBeUndefined();
    batch.send();
    // Told within send(), before the reply.
    expect(told.length).toBeDefined();
    expect(await told.length).toBe(1);
    await written;
    batch.close();
  });

  it('with nothing held, tells at once', async () => {
    const batch = new RedisBatch(client(), null);
    await entry(batch, `${prefix}warm2`);
    let told = false;
    batch.onSent(() => (told = true));
    expect(told).toBe(true);
    batch.close();
  });

  it('before any call of a new client is answered, tells only after the reply', async () => {
    const batch = new RedisBatch(client(), null);
    let replied = false;
    const written = entry(batch, `${prefix}b`).then(() => (replied = true));
    let toldBeforeReply: boolean | null = null;
    batch.onSent(() => (toldBeforeReply = !replied));
    batch.send();
    expect(toldBeforeReply).toBeNull();
    await written;
    // Told in the reply's handling, before the write's own callbacks.
    expect(toldBeforeReply).toBe(true);
    batch.close();
  });

  it('after its connection closed, tells only after the reply again', async () => {
    const c = client();
    const batch = new RedisBatch(c, null);
    await entry(batch, `${prefix}c`);
    // The server drops the connection; ioredis reconnects by itself.
    const killer = client();
    const id = await c.client('ID');
    const closed = new Promise((resolve) => c.once('close', resolve));
    await killer.client('KILL', 'ID', String(id));
    await closed;
    const written = entry(batch, `${prefix}c`);
    let told = false;
    batch.onSent(() => (told = true));
    batch.send();
    expect(told).toBe(false);
    await written;
    expect(told).toBe(true);
    // Answered again: back to telling as the call goes.
    entry(batch, `${prefix}c`).catch(() => undefined);
    let now = false;
    batch.onSent(() => (now = true));
    batch.send();
    expect(now).toBe(true);
    expect(await c.xlen(`${prefix}c`)).toBe(3);
    batch.close();
  });
});
