/**
 * @module Memory from configuration: seed 002's keys as one object — what a config file's
 * `memory:` section holds.
 *
 * ```yaml
 * memory:
 *   hot: { backend: inmemory, max_messages: 50 }      # or redis (url, prefix)
 *   warm: { backend: sqlite, path: ./.axon/memory.db } # or redis, or postgres (url, schema)
 *   cold: { backend: sqlite, embedding_model: hashed } # or postgres; or an OpenAI embeddings model
 *   token_budget: 4000
 *   tokenizer: heuristic                               # or cl100k_base, o200k_base
 * ```
 *
 * A backend that axon does not have (qdrant, pinecone, chromadb, …) is refused
 * with an error naming the key and the backends there are.
 */
import { z } from 'zod';
import type { Clock } from '../context/clock.js';
import type { Engine } from '../engines/chat-request.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { hashedEmbedder, openAIEmbedder, type Embedder } from './embedders.js';
import { memoryHotTier } from './hot-tier.js';
import type { ColdTier, ConversationMessage, HotTier, WarmTier } from './memory-types.js';
import { redisHotTier } from './redis-hot-tier.js';
import { postgresColdTier, postgresWarmTier } from './postgres-tiers.js';
import { redisWarmTier } from './redis-warm-tier.js';
import { sqliteColdTier } from './sqlite-cold-tier.js';
import { DEFAULT_MEMORY_PATH, sqliteWarmTier } from './sqlite-warm-tier.js';
import { engineSummarizer, TieredMemory } from './tiered-memory.js';
import { heuristicTokens, tiktokenCounter } from './token-counter.js';

const redisKeys = {
  url: z.string().optional(),
  /** A Redis Cluster's nodes (`host:port`), a list or one comma-separated string. */
  cluster: z.union([z.string(), z.array(z.string()).min(1)]).optional(),
  prefix: z.string().optional(),
};

/** The keys of a tier that only backends of some kinds read. */
const ONLY_FOR: Readonly<Record<string, readonly string[]>> = {
  url: ['redis', 'postgres'],
  cluster: ['redis'],
  prefix: ['redis'],
  path: ['sqlite'],
  schema: ['postgres'],
};

/** A PostgreSQL tier's keys: its server (a `postgres://` URL) and schema. */
const postgresKeys = {
  schema: z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case SQL identifier')
    .optional(),
};

/** Refuses a key of `tier` its backend would not read (`url` of an inmemory hot tier, ...). */
function checkTierKeys(
  tier: string,
  c: Readonly<Record<string, unknown>> & { backend: string },
): void {
  for (const [key, backends] of Object.entries(ONLY_FOR)) {
    if (c[key] !== undefined && !backends.includes(c.backend)) {
      throw new InvalidParamsError(
        `memory.${tier}.${key} is read only with backend ${backends.join(' or ')}, not ${c.backend}`,
        { param: `memory.${tier}.${key}` },
      );
    }
  }
}

/** The `memory:` section. */
export const memoryConfigSchema = z
  .object({
    hot: z
      .object({
        backend: z.string().default('inmemory'),
        max_messages: z.number().int().min(1).default(50),
        idle_seconds: z.number().positive().optional(),
        ...redisKeys,
      })
      .strict()
      .default({ backend: 'inmemory', max_messages: 50 }),
    warm: z
      .object({
        backend: z.string(),
        path: z.string().optional(),
        ...redisKeys,
        ...postgresKeys,
      })
      .strict()
      .optional(),
    cold: z
      .object({
        backend: z.string(),
        path: z.string().optional(),
        url: z.string().optional(),
        ...postgresKeys,
        /** `hashed` (default, no model) or an embeddings model of an OpenAI-compatible endpoint. */
        embedding_model: z.string().default('hashed'),
        embedding_dimensions: z.number().int().min(8).optional(),
        base_url: z.string().optional(),
      })
      .strict()
      .optional(),
    token_budget: z.number().int().min(0).default(4000),
    tokenizer: z.enum(['heuristic', 'cl100k_base', 'o200k_base']).default('heuristic'),
  })
  .strict();

/** What a caller may write. */
export type MemoryConfigInput = z.input<typeof memoryConfigSchema>;

/** Where the tiers' defaults come from, besides the configuration. */
export interface MemoryDeps {
  readonly clock?: Clock;
  /** Makes an episode of messages; default: `engine`'s summary when given, else extractive. */
  readonly summarize?: (messages: readonly ConversationMessage[]) => Promise<string>;
  /** The engine consolidation summarises with (`engineSummarizer`), when no `summarize`. */
  readonly engine?: Engine;
}

const SUPPORTED = {
  hot: ['inmemory', 'redis'],
  warm: ['sqlite', 'redis', 'postgres'],
  cold: ['sqlite', 'postgres'],
} as const;

function unsupported(tier: keyof typeof SUPPORTED, backend: string): never {
  throw new InvalidParamsError(
    `memory.${tier}.backend "${backend}" is not supported: axon has ${SUPPORTED[tier].join(', ')}`,
    { param: `memory.${tier}.backend`, details: { backend, supported: SUPPORTED[tier] } },
  );
}

/**
 * A `TieredMemory` made from `config` (seed 002's keys). `InvalidParamsError` naming the key
 * for an unknown key, a bad value, or a backend axon does not have.
 *
 * @example
 * const memory = createMemory({ warm: { backend: 'sqlite' }, cold: { backend: 'sqlite' }, token_budget: 2000 });
 */
export function createMemory(config: unknown = {}, deps: MemoryDeps = {}): TieredMemory {
  const parsed = memoryConfigSchema.safeParse(config ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = ['memory', ...(issue?.path ?? []).map(String)].join('.');
    const keys = issue?.code === 'unrecognized_keys' ? ` (${issue.keys.join(', ')})` : '';
    throw new InvalidParamsError(`${where}: ${issue?.message ?? 'invalid'}${keys}`, {
      param: where,
    });
  }
  const c = parsed.data;
  checkTierKeys('hot', c.hot);
  if (c.warm) checkTierKeys('warm', c.warm);
  if (c.cold) checkTierKeys('cold', c.cold);
  const hot = hotTier(c.hot, deps);
  const warm = c.warm ? warmTier(c.warm) : undefined;
  const cold = c.cold ? coldTier(c.cold) : undefined;
  return new TieredMemory({
    hot,
    ...(warm ? { warm } : {}),
    ...(cold ? { cold } : {}),
    tokenBudget: c.token_budget,
    countTokens: c.tokenizer === 'heuristic' ? heuristicTokens : tiktokenCounter(c.tokenizer),
    ...(deps.summarize
      ? { summarize: deps.summarize }
      : deps.engine
        ? { summarize: engineSummarizer(deps.engine) }
        : {}),
    ...(deps.clock ? { now: () => (deps.clock as Clock).now() } : {}),
  });
}

type Parsed = z.output<typeof memoryConfigSchema>;

function hotTier(c: Parsed['hot'], deps: MemoryDeps): HotTier {
  const idleMs = c.idle_seconds === undefined ? undefined : Math.round(c.idle_seconds * 1000);
  const common = { maxMessages: c.max_messages, ...(idleMs === undefined ? {} : { idleMs }) };
  switch (c.backend) {
    case 'inmemory':
      return memoryHotTier({ ...common, ...(deps.clock ? { clock: deps.clock } : {}) });
    case 'redis':
      return onRedis('hot', c, () => redisHotTier({ ...common, ...redisOptions(c) }));
    default:
      return unsupported('hot', c.backend);
  }
}

function warmTier(c: NonNullable<Parsed['warm']>): WarmTier {
  switch (c.backend) {
    case 'sqlite':
      return sqliteWarmTier(c.path ?? DEFAULT_MEMORY_PATH);
    case 'redis':
      return onRedis('warm', c, () => redisWarmTier(redisOptions(c)));
    case 'postgres':
      return postgresWarmTier(postgresOptions('warm', c));
    default:
      return unsupported('warm', c.backend);
  }
}

function coldTier(c: NonNullable<Parsed['cold']>): ColdTier {
  if (c.backend !== 'sqlite' && c.backend !== 'postgres') unsupported('cold', c.backend);
  let embedder: Embedder;
  if (c.embedding_model === 'hashed') {
    embedder = hashedEmbedder(
      c.embedding_dimensions === undefined ? {} : { dimensions: c.embedding_dimensions },
    );
  } else {
    if (c.embedding_dimensions === undefined) {
      throw new InvalidParamsError(
        `memory.cold.embedding_dimensions is needed with embedding_model "${c.embedding_model}"`,
        { param: 'memory.cold.embedding_dimensions' },
      );
    }
    embedder = openAIEmbedder({
      model: c.embedding_model,
      dimensions: c.embedding_dimensions,
      ...(c.base_url === undefined ? {} : { baseURL: c.base_url }),
    });
  }
  return c.backend === 'postgres'
    ? postgresColdTier({ ...postgresOptions('cold', c), embedder })
    : sqliteColdTier(c.path ?? DEFAULT_MEMORY_PATH, { embedder });
}

/** A PostgreSQL tier's connection: its `url` (needed) and `schema`. */
function postgresOptions(
  tier: string,
  c: { url?: string | undefined; schema?: string | undefined },
): { connection: string; schema?: string } {
  if (c.url === undefined || !/^postgres(ql)?:\/\/\S+$/.test(c.url)) {
    throw new InvalidParamsError(
      `memory.${tier}.url: backend postgres needs a postgres:// or postgresql:// URL${c.url === undefined ? '' : `, got ${JSON.stringify(c.url)}`}`,
      { param: `memory.${tier}.url` },
    );
  }
  return { connection: c.url, ...(c.schema === undefined ? {} : { schema: c.schema }) };
}

/**
 * A Redis tier made by `make`; its refusal of a cluster or prefix (`TypeError`) named as the
 * key it is about, so that a configuration file's line is found.
 */
function onRedis<T>(tier: string, c: { cluster?: unknown }, make: () => T): T {
  try {
    return make();
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    // `redisTargetOf` names the option it refuses after "memory tier: " (`prefix`, `cluster`);
    // its refusal of a cluster beside a URL names none: the cluster it is, then.
    const named = /^memory tier: (prefix|cluster)\b(.*)$/s.exec(err.message);
    const key = named ? (named[1] as string) : c.cluster !== undefined ? 'cluster' : 'url';
    const rest = named ? named[2] : `: ${err.message.replace(/^memory tier: /, '')}`;
    throw new InvalidParamsError(`memory.${tier}.${key}${rest}`, {
      param: `memory.${tier}.${key}`,
    });
  }
}

function redisOptions(c: {
  url?: string | undefined;
  cluster?: string | string[] | undefined;
  prefix?: string | undefined;
}): { url?: string; cluster?: string | string[]; prefix?: string } {
  return {
    ...(c.url === undefined ? {} : { url: c.url }),
    ...(c.cluster === undefined ? {} : { cluster: c.cluster }),
    ...(c.prefix === undefined ? {} : { prefix: c.prefix }),
  };
}
