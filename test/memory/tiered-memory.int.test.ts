/**
 * TieredMemory (seed 002): recall within the token budget in priority order, consolidation,
 * configuration, and scope isolation — a property test over every tier and backend that no
 * recall under user A's context returns an item stored by user B.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createContext } from '../../src/context/create-context.js';
import type { ExecContext, MemoryScope } from '../../src/context/exec-context.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { InvalidParamsError } from '../../src/errors/invalid-params-error.js';
import { memoryHotTier } from '../../src/memory/hot-tier.js';
import { createMemory } from '../../src/memory/memory-config.js';
import type { MemoryContext } from '../../src/memory/memory-types.js';
import { redisHotTier } from '../../src/memory/redis-hot-tier.js';
import { redisWarmTier } from '../../src/memory/redis-warm-tier.js';
import { sqliteColdTier } from '../../src/memory/sqlite-cold-tier.js';
import { sqliteWarmTier } from '../../src/memory/sqlite-warm-tier.js';
import { engineSummarizer, TieredMemory } from '../../src/memory/tiered-memory.js';
import { heuristicTokens, tiktokenCounter } from '../../src/memory/token-counter.js';
import { isImmutable } from '../../src/store/deep-copy.js';
import { clearRedisPrefix, redisUrl } from '../support/redis.js';

const dir = mkdtempSync(join(tmpdir(), 'axon-tiered-'));
const redisBase = `axon-test:${randomUUID()}:`;
const postgresUrl =
  process.env['AXON_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const postgresSchemas: string[] = [];
afterAll(async () => {
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  for (const s of postgresSchemas) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await admin.end();
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await clearRedisPrefix(redisBase);
});
const file = (): string => join(dir, `${randomUUID()}.db`);

function ctxOf(userId: string | null, sessionId: string | null = 's1', scope?: MemoryScope) {
  return createContext({ userId, sessionId, ...(scope ? { memoryScope: scope } : {}) });
}

/** Every text a recall returned. */
function texts(m: MemoryContext): string[] {
  return [...m.conversation.map((c) => c.content), ...m.facts, ...m.episodes, ...m.knowledge];
}

function embedded(budget = 4000): TieredMemory {
  const path = file();
  return new TieredMemory({
    hot: memoryHotTier(),
    warm: sqliteWarmTier(path),
    cold: sqliteColdTier(path),
    tokenBudget: budget,
  });
}

describe('TieredMemory recall', () => {
  it('assembles conversation, facts, episodes and knowledge; token_count is what they cost', async () => {
    const memory = embedded();
    const ctx = ctxOf('ann');
    await memory.store({ content: 'What is the weather in Berlin?', role: 'user' }, ctx);
    await memory.store({ content: '22C and sunny', role: 'assistant' }, ctx);
    await memory.store({ content: 'User prefers metric units', tier: 'warm' }, ctx);
    await memory.store(
      { content: 'Asked about weather twice', tier: 'warm', kind: 'episode' },
      ctx,
    );
    await memory.store({ content: 'Berlin weather is mild in May', tier: 'cold' }, ctx);

    const m = await memory.recall('weather preferences metric', ctx);

    expect(m.conversation).toEqual([
      { role: 'user', content: 'What is the weather in Berlin?' },
      { role: 'assistant', content: '22C and sunny' },
    ]);
    expect(m.facts).toEqual(['User prefers metric units']);
    expect(m.episodes).toEqual(['Asked about weather twice']);
    expect(m.knowledge).toEqual(['Berlin weather is mild in May']);
    const expected =
      heuristicTokens('user: What is the weather in Berlin?') +
      heuristicTokens('assistant: 22C and sunny') +
      heuristicTokens('User prefers metric units') +
      heuristicTokens('Asked about weather twice') +
      heuristicTokens('Berlin weather is mild in May');
    expect(m.token_count).toBe(expected);
    await memory.close();
  });

  it('fills the budget in priority order, trimming each category from its tail', async () => {
    const ctx = ctxOf('ann');
    // Each message is 'user: m<i> ' + 30 chars = 10 tokens by the heuristic.
    const msg = (i: number): string => `m${i} ${'x'.repeat(32 - String(i).length)}`;
    const memory = embedded(35);
    for (let i = 1; i <= 5; i++) await memory.store({ content: msg(i) }, ctx);
    await memory.store({ content: 'fact about budgets', tier: 'warm' }, ctx);

    const m = await memory.recall('budgets', ctx);

    // The three most recent messages fit (30 tokens); the fact (5) fits exactly after them.
    expect(m.conversation.map((c) => c.content)).toEqual([msg(3), msg(4), msg(5)]);
    expect(m.facts).toEqual(['fact about budgets']);
    expect(m.token_count).toBe(35);

    const tight = embedded(12);
    for (let i = 1; i <= 5; i++) await tight.store({ content: msg(i) }, ctx);
    await tight.store({ content: 'fact about budgets', tier: 'warm' }, ctx);
    const t = await tight.recall('budgets', ctx);
    expect(t.conversation.map((c) => c.content)).toEqual([msg(5)]);
    expect(t.facts).toEqual([]);
    expect(t.token_count).toBe(10);
    await memory.close();
    await tight.close();
  });

  it('returns the conversation immutable, and counts each in-process message once, however often recalled', async () => {
    const counted: string[] = [];
    const memory = new TieredMemory({
      hot: memoryHotTier(),
      countTokens: (text) => {
        counted.push(text);
        return heuristicTokens(text);
      },
    });
    const ctx = ctxOf('ann');
    await memory.store({ content: 'first', role: 'user' }, ctx);
    await memory.store({ content: 'second', role: 'assistant' }, ctx);
    const a = await memory.recall('q', ctx);
    const b = await memory.recall('q', ctx);
    expect(b.conversation).toEqual([
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'second' },
    ]);
    expect(isImmutable(a.conversation)).toBe(true);
    expect(() => {
      (a.conversation as { role: string; content: string }[]).push({ role: 'user', content: 'x' });
    }).toThrow(TypeError);
    expect(() => {
      (a.conversation[0] as { content: string }).content = 'changed';
    }).toThrow(TypeError);
    // The same messages, worked out once: two texts counted for two recalls.
    expect(b.conversation[0]).toBe(a.conversation[0]);
    expect(counted).toEqual(['assistant: second', 'user: first']);
    expect(b.token_count).toBe(a.token_count);
    await memory.close();
  });

  it('counts with an exact tokenizer when given one', async () => {
    const count = tiktokenCounter('cl100k_base');
    const memory = new TieredMemory({ hot: memoryHotTier(), tokenBudget: 100, countTokens: count });
    const ctx = ctxOf('ann');
    await memory.store({ content: 'hello tokenizer world' }, ctx);
    const m = await memory.recall('', ctx);
    expect(m.token_count).toBe(count('user: hello tokenizer world'));
    expect(m.token_count).not.toBe(heuristicTokens('user: hello tokenizer world'));
  });

  it('refuses empty content, a tier it does not have, and a scope the context cannot give', async () => {
    const memory = new TieredMemory({ hot: memoryHotTier() });
    await expect(memory.store({ content: '' }, ctxOf('ann'))).rejects.toBeInstanceOf(
      InvalidParamsError,
    );
    await expect(memory.store({ content: 'x', tier: 'warm' }, ctxOf('ann'))).rejects.toThrow(
      /no warm tier/,
    );
    await expect(memory.store({ content: 'x', scope: 'user' }, ctxOf(null))).rejects.toThrow(
      /needs a context with a user id/,
    );
  });

  it('filters warm and cold items by tags; every recalled item carries its source and tags', async () => {
    const memory = embedded();
    const ctx = ctxOf('ann');
    await memory.store({ content: 'What about the weather?', role: 'user' }, ctx);
    await memory.store(
      {
        content: 'ann prefers metric weather units',
        tier: 'warm',
        tags: ['pref', 'weather'],
        source: 'extractor',
      },
      ctx,
    );
    await memory.store(
      { content: 'ann dislikes weather small talk', tier: 'warm', tags: ['pref'] },
      ctx,
    );
    await memory.store(
      {
        content: 'weather stations report hourly',
        tier: 'cold',
        tags: ['weather'],
        source: 'wiki',
      },
      ctx,
    );
    const all = await memory.recall('weather', ctx);
    expect(all.facts).toHaveLength(2);
    expect(all.items).toContainEqual(
      expect.objectContaining({
        category: 'fact',
        content: 'ann prefers metric weather units',
        source: 'extractor',
        tags: ['pref', 'weather'],
      }),
    );
    expect(all.items).toContainEqual(
      expect.objectContaining({ category: 'knowledge', source: 'wiki', tags: ['weather'] }),
    );
    expect(all.items.map((i) => i.content)).toEqual([
      ...all.facts,
      ...all.episodes,
      ...all.knowledge,
    ]);

    const filtered = await memory.recall('weather', ctx, { tags: ['weather'] });
    expect(filtered.facts).toEqual(['ann prefers metric weather units']);
    expect(filtered.knowledge).toEqual(['weather stations report hourly']);
    // The conversation is recalled as always.
    expect(filtered.conversation).toEqual([{ role: 'user', content: 'What about the weather?' }]);
    expect((await memory.recall('weather', ctx, { tags: ['nope'] })).facts).toEqual([]);
  });

  it('refuses tags or a source on a conversation message, and tags that are not strings', async () => {
    const memory = embedded();
    const ctx = ctxOf('ann');
    await expect(memory.store({ content: 'hi', tags: ['x'] }, ctx)).rejects.toMatchObject({
      code: 'INVALID_PARAMS',
      details: { param: 'tags' },
    });
    await expect(memory.store({ content: 'hi', source: 'bot' }, ctx)).rejects.toBeInstanceOf(
      InvalidParamsError,
    );
    await expect(
      memory.store({ content: 'x', tier: 'warm', tags: [''] }, ctx),
    ).rejects.toBeInstanceOf(InvalidParamsError);
    await expect(memory.recall('x', ctx, { tags: 'pref' as never })).rejects.toBeInstanceOf(
      InvalidParamsError,
    );
  });
});

describe('TieredMemory consolidate', () => {
  it('turns conversation into one episode and facts into knowledge; a second run changes nothing', async () => {
    const memory = embedded();
    const ctx = ctxOf('ann', 's1', 'session');
    await memory.store({ content: 'I need a flight to Lisbon. Next Friday.', role: 'user' }, ctx);
    await memory.store({ content: 'Booked TAP 123 for Friday.', role: 'assistant' }, ctx);
    await memory.store(
      { content: 'Ann flies TAP', tier: 'warm', tags: ['travel'], source: 'extractor' },
      ctx,
    );

    expect(await memory.consolidate(ctx)).toEqual({ episodes: 1, promoted: 1 });
    const m = await memory.recall('flight Lisbon TAP', ctx);
    expect(m.episodes).toEqual([
      'user: I need a flight to Lisbon.\nassistant: Booked TAP 123 for Friday.',
    ]);
    expect(m.knowledge).toEqual(['Ann flies TAP']);
    // Promoted knowledge keeps the fact's tags and source; the episode says where it came from.
    expect(m.items).toContainEqual(
      expect.objectContaining({ category: 'knowledge', tags: ['travel'], source: 'extractor' }),
    );
    expect(m.items).toContainEqual(
      expect.objectContaining({
        category: 'episode',
        tags: ['consolidated'],
        source: 'consolidate',
      }),
    );

    expect(await memory.consolidate(ctx)).toEqual({ episodes: 0, promoted: 0 });
    await memory.store({ content: 'Also a hotel, please.', role: 'user' }, ctx);
    expect(await memory.consolidate(ctx)).toEqual({ episodes: 1, promoted: 0 });
    expect((await memory.recall('hotel', ctx)).episodes).toEqual(['user: Also a hotel, please.']);
    await memory.close();
  });

  it('summarises with the given summarizer (an engine call, say)', async () => {
    const path = file();
    const seen: number[] = [];
    const memory = new TieredMemory({
      hot: memoryHotTier(),
      warm: sqliteWarmTier(path),
      summarize: (messages) => {
        seen.push(messages.length);
        return Promise.resolve(`summary of ${messages.length} messages about invoices`);
      },
    });
    const ctx = ctxOf('ann', 's1', 'session');
    await memory.store({ content: 'invoice 7 is late' }, ctx);
    await memory.store({ content: 'invoice 8 too', role: 'assistant' }, ctx);
    await memory.consolidate(ctx);
    expect(seen).toEqual([2]);
    expect((await memory.recall('invoices', ctx)).episodes).toEqual([
      'summary of 2 messages about invoices',
    ]);
    await memory.close();
  });
});

describe('consolidation by an engine', () => {
  it('createMemory with an engine summarises conversations with it', async () => {
    const engine = createScriptedEngine({ tokenDelayMs: 0 });
    const path = file();
    const memory = createMemory({ warm: { backend: 'sqlite', path } }, { engine });
    const ctx = ctxOf('ann', 's1', 'session');
    await memory.store({ content: 'book the dentist for Tuesday' }, ctx);
    await memory.store({ content: 'Booked for 10:00', role: 'assistant' }, ctx);

    expect(await memory.consolidate(ctx)).toEqual({ episodes: 1, promoted: 0 });

    const expected = await engineSummarizer(engine)([
      { role: 'user', content: 'book the dentist for Tuesday' },
      { role: 'assistant', content: 'Booked for 10:00' },
    ]);
    expect(expected.length).toBeGreaterThan(0);
    const warm = sqliteWarmTier(path);
    const [episode] = await warm.list('session:ann:s1', 'episode');
    expect(episode?.content).toBe(expected);
    await warm.close();
    await memory.close();
  });
});

describe('createMemory (seed 002 configuration)', () => {
  it('builds the tiers the keys name', async () => {
    const path = file();
    const memory = createMemory({
      hot: { backend: 'inmemory', max_messages: 2 },
      warm: { backend: 'sqlite', path },
      cold: { backend: 'sqlite', path },
      token_budget: 1000,
    });
    expect(memory.tokenBudget).toBe(1000);
    const ctx = ctxOf('ann');
    for (const c of ['a1', 'a2', 'a3']) await memory.store({ content: c }, ctx);
    await memory.store({ content: 'warm fact here', tier: 'warm' }, ctx);
    const m = await memory.recall('warm fact', ctx);
    expect(m.conversation.map((c) => c.content)).toEqual(['a2', 'a3']);
    expect(m.facts).toEqual(['warm fact here']);
    await memory.close();
  });

  it('refuses a backend axon does not have, naming it, and unknown keys', () => {
    expect(() => createMemory({ cold: { backend: 'qdrant' } })).toThrow(
      'memory.cold.backend "qdrant" is not supported: axon has sqlite, postgres',
    );
    expect(() => createMemory({ warm: { backend: 'mongodb' } })).toThrow(
      /memory.warm.backend "mongodb" is not supported: axon has sqlite, redis, postgres/,
    );
    // PostgreSQL needs its server named, as a postgres:// URL; its schema a plain identifier.
    expect(() => createMemory({ warm: { backend: 'postgres' } })).toThrow(
      'memory.warm.url: backend postgres needs a postgres:// or postgresql:// URL',
    );
    expect(() => createMemory({ cold: { backend: 'postgres', url: 'redis://x:1' } })).toThrow(
      /memory\.cold\.url: backend postgres needs a postgres:\/\/ .*, got "redis:\/\/x:1"/,
    );
    expect(() =>
      createMemory({ warm: { backend: 'postgres', url: 'postgres://h/db', schema: 'A; drop' } }),
    ).toThrow(/memory\.warm\.schema/);
    expect(() => createMemory({ warm: { backend: 'sqlite', schema: 'mem' } })).toThrow(
      'memory.warm.schema is read only with backend postgres, not sqlite',
    );
    expect(() => createMemory({ hot: { backend: 'memcached' } })).toThrow(InvalidParamsError);
    expect(() => createMemory({ hot: { max_mesages: 3 } })).toThrow(/memory\.hot.*max_mesages/);
    expect(() => createMemory({ token_budget: -1 })).toThrow(/memory\.token_budget/);
    expect(() =>
      createMemory({ cold: { backend: 'sqlite', embedding_model: 'text-embedding-3-small' } }),
    ).toThrow(/embedding_dimensions is needed/);
  });

  it('refuses a key its backend would not read, and a cluster prefix without a hash tag', () => {
    expect(() => createMemory({ hot: { backend: 'inmemory', url: 'redis://x:1' } })).toThrow(
      'memory.hot.url is read only with backend redis or postgres, not inmemory',
    );
    expect(() => createMemory({ warm: { backend: 'sqlite', cluster: 'a:1' } })).toThrow(
      /memory\.warm\.cluster is read only with backend redis/,
    );
    expect(() => createMemory({ warm: { backend: 'redis', path: './x.db' } })).toThrow(
      /memory\.warm\.path is read only with backend sqlite, not redis/,
    );
    expect(() =>
      createMemory({ hot: { backend: 'redis', cluster: '127.0.0.1:1', prefix: 'mem:' } }),
    ).toThrow(/^memory\.hot\.prefix "mem:" has no hash tag: on a Redis Cluster/);
    expect(() => createMemory({ warm: { backend: 'redis', cluster: 'nohost' } })).toThrow(
      'memory.warm.cluster: "nohost" is not host:port',
    );
    expect(() =>
      createMemory({ hot: { backend: 'redis', cluster: 'a:1', url: 'redis://x:1' } }),
    ).toThrow('memory.hot.cluster: give cluster, url or client, not more than one');
  });
});

/** Each backend combination, made fresh. */
const backends: [string, () => TieredMemory][] = [
  ['embedded (in-process hot, SQLite warm and cold)', () => embedded(100_000)],
  [
    'fleet (Redis hot and warm, SQLite cold)',
    () => {
      const prefix = `${redisBase}${randomUUID()}:`;
      return new TieredMemory({
        hot: redisHotTier({ url: redisUrl(), prefix }),
        warm: redisWarmTier({ url: redisUrl(), prefix }),
        cold: sqliteColdTier(file()),
        tokenBudget: 100_000,
      });
    },
  ],
  [
    'PostgreSQL warm and cold (memory.*.backend: postgres)',
    () => {
      const schema = `axon_test_mem_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
      postgresSchemas.push(schema);
      return createMemory({
        warm: { backend: 'postgres', url: postgresUrl, schema },
        cold: { backend: 'postgres', url: postgresUrl, schema },
        token_budget: 100_000,
      });
    },
  ],
];

describe.each(backends)('scope isolation: %s', (_name, make) => {
  it("no recall under user A's context returns user B's items, whatever is stored", async () => {
    const scopes: MemoryScope[] = ['user', 'session'];
    // Ids with ':' and names that are prefixes of others try to make two keys meet.
    const tiers = ['hot', 'warm', 'cold'] as const;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            owner: fc.constantFrom('alice', 'bob', 'a', 'a:b', 'alice:'),
            session: fc.constantFrom('s1', 's2', 'b:s1'),
            scope: fc.constantFrom(...scopes),
            tier: fc.constantFrom(...tiers),
            word: fc.constantFrom('invoice', 'flight', 'meeting'),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        async (events) => {
          const query = 'invoice flight meeting';
          const memory = make();
          try {
            const owners = new Map<string, string>();
            for (const [i, e] of events.entries()) {
              const content = `${e.word} note ${i} of ${e.owner}`;
              owners.set(content, e.owner);
              await memory.store(
                { content, scope: e.scope, tier: e.tier },
                ctxOf(e.owner, e.session),
              );
            }
            for (const reader of ['alice', 'bob', 'a', 'a:b', 'alice:']) {
              for (const session of ['s1', 's2', 'b:s1']) {
                const ctx: ExecContext = ctxOf(reader, session);
                const seen = texts(await memory.recall(query, ctx));
                for (const t of seen) expect(owners.get(t)).toBe(reader);
                // And not by seeing nothing: the reader's own items in this session are there.
                events.forEach((e, i) => {
                  if (e.owner === reader && (e.scope === 'user' || e.session === session)) {
                    expect(seen).toContain(`${e.word} note ${i} of ${e.owner}`);
                  }
                });
              }
            }
          } finally {
            await memory.close();
          }
        },
      ),
      { numRuns: 25 },
    );
  });
});
