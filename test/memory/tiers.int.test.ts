/**
 * One conformance suite per tier interface of seed 002, run against every backend: hot
 * (in-process, Redis), warm (SQLite FTS5, Redis), cold (SQLite with the hashed embedder,
 * and with an OpenAI-compatible embeddings endpoint).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../src/context/clock.js';
import { ConflictError } from '../../src/errors/conflict-error.js';
import { hashedEmbedder, openAIEmbedder } from '../../src/memory/embedders.js';
import { memoryHotTier } from '../../src/memory/hot-tier.js';
import type {
  ColdItem,
  ColdTier,
  HotTier,
  WarmItem,
  WarmTier,
} from '../../src/memory/memory-types.js';
import { postgresColdTier, postgresWarmTier } from '../../src/memory/postgres-tiers.js';
import { redisHotTier } from '../../src/memory/redis-hot-tier.js';
import { redisWarmTier } from '../../src/memory/redis-warm-tier.js';
import { sqliteColdTier } from '../../src/memory/sqlite-cold-tier.js';
import { sqliteWarmTier } from '../../src/memory/sqlite-warm-tier.js';
import { clearClusterPrefix, redisCluster, redisUrl } from '../support/redis.js';
import { useTestResources } from '../support/test-resources.js';

const resources = useTestResources('memory');
const { file, prefix } = resources;
/** A prefix on the tests' Redis Cluster: under a hash tag, as a cluster needs. */
const clusterBase = `{axon-test-mem:${randomUUID()}}:`;
const clusterPrefix = (): string => `${clusterBase}${randomUUID()}:`;
const postgresUrl =
  process.env['AXON_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const postgresSchemas: string[] = [];
/** A schema of its own on the tests' PostgreSQL, dropped after the file. */
const pgSchema = (): string => {
  const s = `axon_test_mem_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  postgresSchemas.push(s);
  return s;
};
afterAll(async () => {
  await clearClusterPrefix(clusterBase);
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  for (const s of postgresSchemas) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await admin.end();
});

describe.each([
  ['inmemory', (max: number): HotTier => memoryHotTier({ maxMessages: max })],
  [
    'redis',
    (max: number): HotTier => redisHotTier({ url: redisUrl(), maxMessages: max, prefix: prefix() }),
  ],
  [
    'redis cluster',
    (max: number): HotTier =>
      redisHotTier({ cluster: redisCluster(), maxMessages: max, prefix: clusterPrefix() }),
  ],
])('hot tier conformance: %s', (_name, make) => {
  it('keeps each conversation in order, capped at max_messages (the oldest dropped)', async () => {
    const hot = make(3);
    for (let i = 1; i <= 5; i++)
      await hot.append('session:a:1', { role: 'user', content: `m${i}` }, i);
    await hot.append('session:b:1', { role: 'user', content: 'other' }, 6);

    const mine = await hot.conversation(['session:a:1'], 10);
    expect(mine.map((m) => m.content)).toEqual(['m3', 'm4', 'm5']);
    expect(await hot.conversation(['session:a:1'], 2)).toMatchObject([
      { content: 'm4' },
      { content: 'm5' },
    ]);
    expect((await hot.conversation(['session:b:1'], 10)).map((m) => m.content)).toEqual(['other']);
    expect(await hot.conversation(['session:nobody:1'], 10)).toEqual([]);
    await hot.close();
  });

  it('merges the conversations of several keys by time, oldest first', async () => {
    const hot = make(10);
    await hot.append('user:a', { role: 'user', content: 'u1' }, 10);
    await hot.append('global', { role: 'assistant', content: 'g1' }, 20);
    await hot.append('user:a', { role: 'user', content: 'u2' }, 30);

    const merged = await hot.conversation(['user:a', 'global'], 10);
    expect(merged.map((m) => `${m.role}:${m.content}`)).toEqual([
      'user:u1',
      'assistant:g1',
      'user:u2',
    ]);
    await hot.close();
  });
});

describe('in-process hot tier', () => {
  it('evicts conversations idle past idleMs', async () => {
    const clock = new SimulatedClock(0);
    const hot = memoryHotTier({ idleMs: 1_000, clock });
    await hot.append('session:a:1', { role: 'user', content: 'old' }, 1);
    clock.advance(500);
    await hot.append('session:b:1', { role: 'user', content: 'newer' }, 2);
    clock.advance(600);

    expect(await hot.conversation(['session:a:1'], 10)).toEqual([]);
    expect(await hot.conversation(['session:b:1'], 10)).toHaveLength(1);
  });
});

describe('redis hot tier', () => {
  it('expires an idle conversation (a TTL on its list)', async () => {
    const hot = redisHotTier({ url: redisUrl(), idleMs: 50, prefix: prefix() });
    await hot.append('session:a:1', { role: 'user', content: 'soon gone' }, 1);
    expect(await hot.conversation(['session:a:1'], 10)).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(await hot.conversation(['session:a:1'], 10)).toEqual([]);
    await hot.close();
  });
});

function coldItem(
  id: string,
  key: string,
  content: string,
  ts: number,
  tags: string[] = [],
  source = '',
): ColdItem {
  return { id, key, content, tags, source, ts };
}

function warmItem(key: string, content: string, kind: 'fact' | 'episode' = 'fact'): WarmItem {
  return { id: randomUUID(), key, kind, content, tags: ['t'], source: 'test', ts: Date.now() };
}

describe.each([
  ['sqlite', (): WarmTier => sqliteWarmTier(file())],
  ['redis', (): WarmTier => redisWarmTier({ url: redisUrl(), prefix: prefix() })],
  [
    'redis cluster',
    (): WarmTier => redisWarmTier({ cluster: redisCluster(), prefix: clusterPrefix() }),
  ],
  ['postgres', (): WarmTier => postgresWarmTier({ connection: postgresUrl, schema: pgSchema() })],
])('warm tier conformance: %s', (_name, make) => {
  it('ranks by text relevance within the asked keys and kind', async () => {
    const warm = make();
    const best = warmItem('user:a', 'the user prefers metric units for weather reports');
    await warm.put(best);
    await warm.put(warmItem('user:a', 'the user lives in Berlin'));
    await warm.put(warmItem('user:a', 'weather is nice'));
    await warm.put(warmItem('user:b', 'metric units weather preferences of someone else'));
    await warm.put(warmItem('user:a', 'an episode about metric weather units', 'episode'));

    const found = await warm.search('metric weather units', ['user:a'], 'fact', 10);
    expect(found[0]?.item).toEqual(best);
    expect(found.map((r) => r.item.content)).toEqual([
      'the user prefers metric units for weather reports',
      'weather is nice',
    ]);
    expect(found[0]?.score).toBeGreaterThan(found[1]?.score ?? Infinity);
    expect(await warm.search('metric', ['user:a'], 'episode', 10)).toHaveLength(1);
    expect(await warm.search('metric', ['user:c'], 'fact', 10)).toEqual([]);
    expect(await warm.search('', ['user:a'], 'fact', 10)).toEqual([]);
    expect(await warm.search('berlin', ['user:a'], 'fact', 1)).toHaveLength(1);
    await warm.close();
  });

  it('with tags, searches only items that carry every one of them', async () => {
    const warm = make();
    const tagged = (content: string, tags: string[]): WarmItem => ({
      ...warmItem('user:a', content),
      tags,
    });
    await warm.put(tagged('metric units for weather', ['pref', 'weather']));
    await warm.put(tagged('metric units everywhere', ['pref']));
    await warm.put(tagged('weather units are metric', ['weather']));
    const both = await warm.search('metric units weather', ['user:a'], 'fact', 10, [
      'weather',
      'pref',
    ]);
    expect(both.map((r) => r.item.content)).toEqual(['metric units for weather']);
    const pref = await warm.search('metric units', ['user:a'], 'fact', 1, ['pref']);
    expect(pref).toHaveLength(1);
    expect(pref[0]?.item.tags).toContain('pref');
    expect(await warm.search('metric', ['user:a'], 'fact', 10, ['nope'])).toEqual([]);
    await warm.close();
  });

  it('stores an id once, lists a key oldest first, and keeps marks', async () => {
    const warm = make();
    const a = warmItem('user:a', 'first fact');
    const b = warmItem('user:a', 'second fact');
    expect(await warm.put(a)).toBe(true);
    expect(await warm.put(b)).toBe(true);
    expect(await warm.put({ ...a, content: 'changed' })).toBe(false);

    expect(await warm.list('user:a', 'fact')).toEqual([a, b]);
    expect(await warm.list('user:b', 'fact')).toEqual([]);
    expect(await warm.getMark('m')).toBe(0);
    await warm.setMark('m', 42);
    expect(await warm.getMark('m')).toBe(42);
    await warm.close();
  });

  it('finds words in any case and ignores punctuation in the query', async () => {
    const warm = make();
    await warm.put(warmItem('global', 'Invoices are due on the FIRST of the month'));
    const found = await warm.search('when are "invoices" due?!', ['global'], 'fact', 5);
    expect(found.map((r) => r.item.content)).toEqual([
      'Invoices are due on the FIRST of the month',
    ]);
    await warm.close();
  });
});

describe.each([
  ['sqlite + hashed embedder', (): ColdTier => sqliteColdTier(file())],
  [
    'postgres + hashed embedder',
    (): ColdTier => postgresColdTier({ connection: postgresUrl, schema: pgSchema() }),
  ],
  [
    'sqlite + OpenAI-compatible embeddings endpoint',
    (): ColdTier =>
      sqliteColdTier(file(), {
        embedder: openAIEmbedder({
          baseURL: resources.server.baseURL,
          apiKey: 'k',
          dimensions: 64,
        }),
      }),
  ],
])('cold tier conformance: %s', (_name, make) => {
  it('finds the nearest knowledge within the asked keys, best first', async () => {
    const cold = make();
    const texts = [
      'the deployment pipeline runs on kubernetes',
      'kubernetes clusters need monitoring',
      'bananas are yellow fruit',
      'the office closes at six',
    ];
    for (const [i, content] of texts.entries()) {
      expect(await cold.put(coldItem(`k${i}`, 'global', content, i))).toBe(true);
    }
    await cold.put(coldItem('private', 'user:b', 'kubernetes secrets of b', 9));
    expect(await cold.put(coldItem('k0', 'global', 'again', 10))).toBe(false);

    const found = await cold.search('kubernetes pipeline', ['global'], 2);
    expect(found).toHaveLength(2);
    expect(found[0]?.item.content).toBe('the deployment pipeline runs on kubernetes');
    expect(found[0]?.score).toBeGreaterThanOrEqual(found[1]?.score ?? Infinity);
    expect(found.map((r) => r.item.key)).toEqual(['global', 'global']);
    expect(await cold.search('kubernetes', ['user:c'], 5)).toEqual([]);
    await cold.close();
  });

  it('with tags, finds only the nearest items that carry every one of them', async () => {
    const cold = make();
    await cold.put(coldItem('a', 'global', 'kubernetes pods restart on failure', 1, ['ops']));
    await cold.put(
      coldItem('b', 'global', 'kubernetes pods and services', 2, ['ops', 'k8s'], 'wiki'),
    );
    await cold.put(coldItem('c', 'global', 'kubernetes pods', 3, ['dev']));
    const found = await cold.search('kubernetes pods', ['global'], 5, ['ops', 'k8s']);
    expect(found.map((r) => r.item)).toEqual([
      coldItem('b', 'global', 'kubernetes pods and services', 2, ['ops', 'k8s'], 'wiki'),
    ]);
    expect(
      (await cold.search('kubernetes pods', ['global'], 5, ['ops'])).map((r) => r.item.id).sort(),
    ).toEqual(['a', 'b']);
    expect(await cold.search('kubernetes pods', ['global'], 5, ['none'])).toEqual([]);
    await cold.close();
  });
});

describe('embedded cold tier', () => {
  it('persists knowledge in its file: a tier opened again finds it', async () => {
    const path = file();
    const first = sqliteColdTier(path);
    await first.put(coldItem('a', 'global', 'postgres runs on port 5432', 1, ['db'], 'ops'));
    await first.close();

    const again = sqliteColdTier(path);
    const [hit] = await again.search('which port does postgres use', ['global'], 1);
    expect(hit?.item).toMatchObject({
      content: 'postgres runs on port 5432',
      tags: ['db'],
      source: 'ops',
    });
    await again.close();
  });

  it('hands its index options to the vector index, and refuses one it does not know', async () => {
    const path = file();
    const exact = sqliteColdTier(path);
    for (let i = 0; i < 40; i++) {
      await exact.put(coldItem(`n${i}`, 'global', `kubernetes note number ${i}`, i));
    }
    expect(await exact.search('kubernetes note', ['global'], 10)).toHaveLength(10);
    await exact.close();
    // Past trainAt the scope goes through the codes; a shortlist of one keeps one candidate.
    const narrow = sqliteColdTier(path, { trainAt: 10, shortlist: 1, rerank: 1 });
    expect(await narrow.search('kubernetes note', ['global'], 10)).toHaveLength(1);
    await narrow.close();
    expect(() => sqliteColdTier(file(), { probe: 0.1 } as never)).toThrow(/unknown option probe/);
  });

  it('refuses a file written with another embedder', async () => {
    const path = file();
    await sqliteColdTier(path).close();
    expect(() => sqliteColdTier(path, { embedder: hashedEmbedder({ dimensions: 64 }) })).toThrow(
      ConflictError,
    );
  });

  it('the OpenAI embedder goes through the endpoint', async () => {
    const before = resources.server.requests.filter((r) => r.path === '/v1/embeddings').length;
    const embedder = openAIEmbedder({
      baseURL: resources.server.baseURL,
      apiKey: 'k',
      dimensions: 64,
    });
    const [v] = await embedder.embed(['hello world']);
    expect(v).toHaveLength(64);
    expect(resources.server.requests.filter((r) => r.path === '/v1/embeddings').length).toBe(
      before + 1,
    );
    const wrong = openAIEmbedder({
      baseURL: resources.server.baseURL,
      apiKey: 'k',
      dimensions: 32,
    });
    await expect(wrong.embed(['x'])).rejects.toThrow(RangeError);
  });
});

describe('PostgreSQL cold tier', () => {
  it('finds knowledge another process stored after it opened, and keeps it across a reopen', async () => {
    const schema = pgSchema();
    const a = postgresColdTier({ connection: postgresUrl, schema });
    const b = postgresColdTier({ connection: postgresUrl, schema });
    // b has searched (and loaded) before a stores anything.
    expect(await b.search('refund policy', ['kb'], 3)).toEqual([]);
    const item = coldItem('c1', 'kb', 'refunds are paid within thirty days of the request', 1);
    expect(await a.put(item)).toBe(true);
    expect(await b.put(item)).toBe(false);
    const found = await b.search('refund within thirty days', ['kb'], 3);
    expect(found.map((r) => r.item)).toEqual([item]);
    await Promise.all([a.close(), b.close()]);
    const again = postgresColdTier({ connection: postgresUrl, schema });
    expect((await again.search('refunds', ['kb'], 3)).map((r) => r.item.id)).toEqual([item.id]);
    await again.close();
  });

  it('refuses tables written with another embedder, and a schema newer than it knows', async () => {
    const schema = pgSchema();
    const first = postgresColdTier({ connection: postgresUrl, schema });
    await first.put(coldItem('c1', 'kb', 'something', 1));
    await first.close();
    const other = postgresColdTier({
      connection: postgresUrl,
      schema,
      embedder: hashedEmbedder({ dimensions: 64 }),
    });
    await expect(other.search('something', ['kb'], 1)).rejects.toBeInstanceOf(ConflictError);
    await other.close();

    const newer = pgSchema();
    const admin = new pg.Client({ connectionString: postgresUrl });
    await admin.connect();
    await admin.query(`CREATE SCHEMA "${newer}"`);
    await admin.query(
      `CREATE TABLE "${newer}".memory_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)`,
    );
    await admin.query(`INSERT INTO "${newer}".memory_meta VALUES ('version', '9')`);
    await admin.end();
    const warm = postgresWarmTier({ connection: postgresUrl, schema: newer });
    await expect(warm.list('k', 'fact')).rejects.toThrow(/version 9, newer than this axon knows/);
    await warm.close();
  });
});
