import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import { postgresStore } from '../../src/store/postgres/postgres-store.js';
import { redisStore } from '../../src/store/redis/redis-store.js';
import type { RunStore } from '../../src/store/run-store.js';
import { sqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { clearRedisPrefix, redisUrl } from '../support/redis.js';
import { quietRuntime } from '../support/runtime.js';

const dir = mkdtempSync(join(tmpdir(), 'axon-runtime-stores-'));
const redisBase = `axon-test:${randomUUID()}:`;
const postgresUrl =
  process.env['AXON_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const postgresSchemas: string[] = [];
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await clearRedisPrefix(redisBase);
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  for (const s of postgresSchemas) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await admin.end();
});

const writer = defineAgent({
  name: 'writer',
  async *handler(input, ctx, rt) {
    yield 'draft: ';
    const sub = await rt.delegate<string>('helper', input.message, ctx);
    return `${sub.output ?? ''}!`;
  },
});
const helper = defineAgent({ name: 'helper', handler: (input) => input.message.toUpperCase() });

describe.each([
  ['sqlite', (): RunStore => sqliteStore(join(dir, `${randomUUID()}.db`))],
  [
    'redis',
    (): RunStore => redisStore({ url: redisUrl(), prefix: `${redisBase}${randomUUID()}:` }),
  ],
  [
    'postgres',
    (): RunStore => {
      const schema = `axon_test_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
      postgresSchemas.push(schema);
      return postgresStore({ connection: postgresUrl, schema });
    },
  ],
])('a runtime on the %s store', (_name, make) => {
  it('runs a delegating agent and keeps the run, both steps and their logs', async () => {
    const store = make();
    const rt = quietRuntime({ store, agents: [writer, helper] });
    const result = await rt.invoke<string>('writer', 'hello');

    expect(result.status).toBe('success');
    expect(result.output).toBe('HELLO!');
    const run = await store.getRun(result.runId);
    expect(run?.status).toBe('completed');
    const steps = await store.listSteps(result.runId);
    expect(steps.map((s) => [s.name, s.status])).toEqual([
      ['writer', 'succeeded'],
      ['helper', 'succeeded'],
    ]);
    const log = await store.readEvents(result.stepId);
    expect(log.map((e) => e.type)).toEqual(['started', 'token', 'end']);
    expect(log.map((e) => e.seq)).toEqual([1, 2, 3]);
    await rt.close();
  });
});
