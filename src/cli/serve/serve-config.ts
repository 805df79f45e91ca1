/**
 * @module `axon serve`'s configuration: an optional YAML file (`axon.yaml`), then the
 * environment, then the flags — each overriding the one before, key by key — all checked
 * with one strict zod schema. A refused value is named by where it came from: the file's
 * line and key (as `policy-config.ts` does for a policy file), the environment variable, or
 * the flag. Nothing here starts anything: it only reads files and returns plain values,
 * which `serve-command.ts` builds the runtime and the server from.
 */
import { containedOf } from './served-behaviours.js';
import { codeEntriesOf } from './served-code.js';
import { mcpOptionsOf } from './served-mcp.js';
import { a2aOptionsOf } from './served-a2a.js';
import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import {
  extendPriceTable,
  loadPriceTable,
  PRICE_TABLE,
  type PriceTable,
} from '../../engines/price-table.js';
import type { MemoryConfigInput } from '../../memory/memory-config.js';
import { createSandbox } from '../../policy/sandbox.js';
import {
  loadPolicyYaml,
  PolicyConfigError,
  type PolicyConfig,
} from '../../policy/policy-config.js';
import { keysFromEnv, type ApiKey } from '../../server/auth.js';
import type { WorkflowDefinition } from '../../workflows/workflow-definition.js';
import { WorkflowConfigError, workflowsFromConfig } from '../../workflows/workflow-config.js';
import { pickRedis, type RedisConfig } from './redis-config.js';
import {
  readYaml,
  ServeConfigError,
  zodProblems,
  type ServeConfigProblem,
  type YamlSource,
} from './config-problems.js';

import {
  FIELDS,
  MEMORY_FILE,
  SERVE_DEFAULTS,
  serveConfigSchema,
  type Field,
  type OpenAIEngineConfig,
  type ServeConfig,
  type ServeConfigFile,
  type ServeEnv,
  type ServeFlags,
} from './serve-config-schema.js';

export {
  MEMORY_FILE,
  SERVE_DEFAULTS,
  serveConfigSchema,
  STORE_FILE,
  type OpenAIEngineConfig,
  type PostgresConfig,
  type ServeConfig,
  type ServeConfigFile,
  type ServeEnv,
  type ServeFlags,
} from './serve-config-schema.js';
export type { RedisConfig } from './redis-config.js';

/** A value from the environment or a flag, before it is merged. */
interface Override {
  readonly field: Field;
  /** `AXON_PORT`, `--port`. */
  readonly source: string;
  readonly value: string;
}

const INTEGER_FIELDS: ReadonlySet<Field> = new Set([
  'server.port',
  'server.keep_alive_ms',
  'connect_timeout_ms',
] as const);

/** `overrides` checked against their fields' schemas: values by field, or problems. */
function checkOverrides(
  overrides: readonly Override[],
  problems: ServeConfigProblem[],
): Map<Field, string | number> {
  const values = new Map<Field, string | number>();
  for (const o of overrides) {
    let value: string | number = o.value;
    if (INTEGER_FIELDS.has(o.field)) {
      // Digits only: Number() would also take '', ' 7', '0x10' and '1e3'.
      if (!/^\d{1,15}$/.test(o.value)) {
        problems.push({
          source: o.source,
          line: null,
          key: o.source,
          message: `must be a whole number, got ${JSON.stringify(o.value)}`,
        });
        continue;
      }
      value = Number(o.value);
    }
    const parsed = FIELDS[o.field].safeParse(value);
    if (parsed.success) values.set(o.field, value);
    else problems.push(...zodProblems(parsed.error, o.source, null));
  }
  return values;
}

/** The fleet's Redis of the flags, the environment and the file (see `pickRedis`). */
function redisOf(
  file: ServeConfigFile['redis'],
  fromFlags: ReadonlyMap<Field, string | number>,
  fromEnv: ReadonlyMap<Field, string | number>,
  fileLine: (key: string) => number | null,
  shown: string,
  problems: ServeConfigProblem[],
): RedisConfig | null {
  const cluster = file?.cluster;
  return pickRedis(
    [
      {
        source: '--redis / --redis-cluster',
        names: { url: '--redis', cluster: '--redis-cluster' },
        url: fromFlags.get('redis.url') as string | undefined,
        cluster: fromFlags.get('redis.cluster') as string | undefined,
      },
      {
        source: 'AXON_REDIS_URL / AXON_REDIS_CLUSTER',
        names: { url: 'AXON_REDIS_URL', cluster: 'AXON_REDIS_CLUSTER' },
        url: fromEnv.get('redis.url') as string | undefined,
        cluster: fromEnv.get('redis.cluster') as string | undefined,
      },
      {
        source: shown,
        names: { url: `${shown} redis.url`, cluster: `${shown} redis.cluster` },
        url: file?.url,
        cluster: Array.isArray(cluster) ? cluster.join(',') : cluster,
      },
    ],
    file?.prefix,
    fileLine('redis.prefix'),
    problems,
  );
}

/** Options of {@link loadServeConfig}. */
export interface LoadServeConfigOptions {
  readonly flags?: ServeFlags;
  /** Default `process.env`. */
  readonly env?: ServeEnv;
  /** What relative flags and variables resolve against; default `process.cwd()`. */
  readonly cwd?: string;
}

/**
 * Reads `axon serve`'s configuration: the file (`--config`, else `./axon.yaml` if it
 * exists), the environment (`AXON_HOST`, `AXON_PORT`, `AXON_DATA_DIR`, `AXON_API_KEYS`,
 * `AXON_KEEP_ALIVE_MS`, `AXON_REDIS_URL`, `AXON_REDIS_CLUSTER`, `AXON_POSTGRES_URL`,
 * `AXON_CONNECT_TIMEOUT_MS`, and the engine's `AXON_ENGINE_URL`, `AXON_ENGINE_MODEL`,
 * `AXON_ENGINE_KEY`, `AXON_PRICE_TABLE`), then the flags; each overrides the one before.
 * Throws {@link ServeConfigError} naming every problem's source, line and key.
 *
 * Gotchas: relative paths in the file (`data_dir`, a `policy` file, memory paths) resolve
 * against the file's folder, those of flags and variables against `cwd`. `AXON_API_KEYS`
 * replaces the file's keys rather than adding to them. `engines.openai.key_env` names a
 * variable that must be set.
 *
 * @example
 * const config = loadServeConfig({ flags: { port: '0' } });
 * const server = await createServer(runtime, { host: config.host, port: config.port });
 */
export function loadServeConfig(options: LoadServeConfigOptions = {}): ServeConfig {
  const flags = options.flags ?? {};
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const given = (name: string): string | undefined => {
    const v = env[name];
    // An empty variable counts as unset (`AXON_PORT= axon serve`).
    return v === undefined || v === '' ? undefined : v;
  };

  // The file: named by --config (then it must exist), else ./axon.yaml when there is one.
  const named = flags.config;
  const fallback = resolve(cwd, SERVE_DEFAULTS.configFile);
  const configFile =
    named !== undefined ? resolve(cwd, named) : existsSync(fallback) ? fallback : null;
  const shown = named ?? SERVE_DEFAULTS.configFile;
  let file: ServeConfigFile = {};
  let lineOf: YamlSource['lineOf'] = () => null;
  if (configFile !== null) {
    const source = readYaml(configFile, shown);
    lineOf = source.lineOf;
    const parsed = serveConfigSchema.safeParse(source.raw);
    if (!parsed.success) throw new ServeConfigError(zodProblems(parsed.error, shown, lineOf));
    file = parsed.data;
  }
  const fileDir = configFile === null ? cwd : dirname(configFile);
  const fromFile = (p: string): string => (isAbsolute(p) ? p : resolve(fileDir, p));
  const fileLine = (key: string): number | null => lineOf(key.split('.'));

  const problems: ServeConfigProblem[] = [];
  const overrides = (list: readonly (readonly [Field, string, string | undefined])[]): Override[] =>
    list.flatMap(([field, source, value]) =>
      value === undefined ? [] : [{ field, source, value }],
    );
  const fromEnv = checkOverrides(
    overrides([
      ['server.host', 'AXON_HOST', given('AXON_HOST')],
      ['server.port', 'AXON_PORT', given('AXON_PORT')],
      ['server.keep_alive_ms', 'AXON_KEEP_ALIVE_MS', given('AXON_KEEP_ALIVE_MS')],
      ['data_dir', 'AXON_DATA_DIR', given('AXON_DATA_DIR')],
      ['engines.openai.url', 'AXON_ENGINE_URL', given('AXON_ENGINE_URL')],
      ['engines.openai.model', 'AXON_ENGINE_MODEL', given('AXON_ENGINE_MODEL')],
      ['redis.url', 'AXON_REDIS_URL', given('AXON_REDIS_URL')],
      ['redis.cluster', 'AXON_REDIS_CLUSTER', given('AXON_REDIS_CLUSTER')],
      ['store.postgres', 'AXON_POSTGRES_URL', given('AXON_POSTGRES_URL')],
      ['connect_timeout_ms', 'AXON_CONNECT_TIMEOUT_MS', given('AXON_CONNECT_TIMEOUT_MS')],
    ]),
    problems,
  );
  const fromFlags = checkOverrides(
    overrides([
      ['server.host', '--host', flags.host],
      ['server.port', '--port', flags.port],
      ['data_dir', '--data-dir', flags.dataDir],
      ['redis.url', '--redis', flags.redis],
      ['redis.cluster', '--redis-cluster', flags.redisCluster],
      ['store.postgres', '--postgres', flags.postgres],
      ['connect_timeout_ms', '--connect-timeout-ms', flags.connectTimeoutMs],
    ]),
    problems,
  );
  const pick = <T extends string | number>(field: Field, inFile: T | undefined): T | undefined =>
    (fromFlags.get(field) ?? fromEnv.get(field) ?? inFile) as T | undefined;

  const host = pick<string>('server.host', file.server?.host) ?? SERVE_DEFAULTS.host;
  const port = pick<number>('server.port', file.server?.port) ?? SERVE_DEFAULTS.port;
  const keepAliveMs = pick<number>('server.keep_alive_ms', file.server?.keep_alive_ms);
  const redis = redisOf(file.redis, fromFlags, fromEnv, fileLine, shown, problems);
  const postgresUrl = pick<string>('store.postgres', file.store?.postgres);
  const postgres =
    postgresUrl === undefined
      ? null
      : {
          url: postgresUrl,
          schema: file.store?.schema ?? 'axon',
          source: fromFlags.has('store.postgres')
            ? '--postgres'
            : fromEnv.has('store.postgres')
              ? 'AXON_POSTGRES_URL'
              : `${shown} store.postgres`,
        };
  const connectTimeoutMs =
    pick<number>('connect_timeout_ms', file.connect_timeout_ms) ?? SERVE_DEFAULTS.connectTimeoutMs;
  const dirOverride = (fromFlags.get('data_dir') ?? fromEnv.get('data_dir')) as string | undefined;
  const dataDir =
    dirOverride !== undefined
      ? resolve(cwd, dirOverride)
      : file.data_dir !== undefined
        ? fromFile(file.data_dir)
        : resolve(cwd, SERVE_DEFAULTS.dataDir);

  let keys: readonly ApiKey[] = file.auth?.keys ?? [];
  try {
    const envKeys = keysFromEnv(given('AXON_API_KEYS'));
    if (envKeys.length > 0) keys = envKeys;
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    const message = err.message.replace(/^AXON_API_KEYS /, '');
    problems.push({ source: 'AXON_API_KEYS', line: null, key: '', message });
  }

  const openai = openAIEngineOf(file, env, given, fromEnv, fileLine, shown, problems);
  const priceTable = priceTableOf(file, given, fileLine, shown, problems);
  const policy = policyOf(file, fromFile, fileLine, shown, problems);
  const workflows = workflowsOf(file, fileLine, shown, problems);
  const memory = file.memory === undefined ? null : memoryOf(file.memory, fromFile, dataDir);
  const contained = containedOf(file, fromFile, (key, message, named) => {
    problems.push({ source: shown, line: fileLine(key), key: named ? key : '', message });
  });
  const fsRoots = file.fs === undefined ? null : file.fs.roots.map(fromFile);
  if (fsRoots !== null) {
    // Checked here too (createRuntime does it again) to name the file's line.
    try {
      createSandbox({ dataDir, roots: fsRoots, guarded: guardedPaths(configFile, memory) });
    } catch (err) {
      if (!(err instanceof RangeError)) throw err;
      problems.push({ source: shown, line: fileLine('fs.roots'), key: '', message: err.message });
    }
  }
  if (problems.length > 0) throw new ServeConfigError(problems);

  const s = file.server;
  return {
    configFile,
    host,
    port,
    dataDir,
    fsRoots,
    ...(keepAliveMs === undefined ? {} : { keepAliveMs }),
    ...(s?.body_limit_bytes === undefined ? {} : { bodyLimitBytes: s.body_limit_bytes }),
    ...(s?.max_steps_per_run === undefined ? {} : { maxStepsPerRun: s.max_steps_per_run }),
    ...(s?.drain_ms === undefined ? {} : { drainMs: s.drain_ms }),
    ...(s?.sse_flush_ms === undefined ? {} : { sseFlushMs: s.sse_flush_ms }),
    ...(s?.max_streams === undefined ? {} : { maxStreams: s.max_streams }),
    ...(s?.max_streams_per_user === undefined ? {} : { maxStreamsPerUser: s.max_streams_per_user }),
    ...(s?.allowed_hosts === undefined ? {} : { allowedHosts: s.allowed_hosts }),
    keys,
    redis,
    postgres,
    connectTimeoutMs,
    openai,
    priceTable,
    policy,
    memory,
    workflows,
    ...contained,
    code: codeEntriesOf(file.code, fromFile, fileLine, shown),
    schedules: file.schedules ?? [],
    durableAgents: (file.durable_agents ?? []).map((entry, i) => ({
      module: fromFile(entry.module),
      export: entry.export,
      line: fileLine(`durable_agents.${i}`),
      source: shown,
    })),
    mcp: mcpOptionsOf(file.mcp),
    a2a: a2aOptionsOf(file.a2a),
    openaiApi: file.openai_api ?? true,
    lineOf: fileLine,
  };
}

/**
 * The files of a configuration no sandbox root may hold besides the data dir: the config
 * file (it holds the API keys) and the memory tiers' files.
 */
export function guardedPaths(
  configFile: string | null,
  memory: MemoryConfigInput | null,
): string[] {
  const memoryFiles = [memory?.warm, memory?.cold].flatMap((tier) =>
    tier && 'path' in tier && typeof tier.path === 'string' ? [tier.path] : [],
  );
  return [...(configFile === null ? [] : [configFile]), ...memoryFiles];
}

/** The `openai` engine: the file's `engines.openai`, each part overridden by the environment. */
function openAIEngineOf(
  file: ServeConfigFile,
  env: ServeEnv,
  given: (name: string) => string | undefined,
  fromEnv: Map<Field, string | number>,
  fileLine: (key: string) => number | null,
  shown: string,
  problems: ServeConfigProblem[],
): OpenAIEngineConfig | null {
  const section = file.engines?.openai;
  const baseURL = (fromEnv.get('engines.openai.url') as string | undefined) ?? section?.url;
  if (baseURL === undefined) return null;
  const model =
    (fromEnv.get('engines.openai.model') as string | undefined) ??
    section?.model ??
    SERVE_DEFAULTS.model;
  let apiKey = given('AXON_ENGINE_KEY');
  if (apiKey === undefined && section?.key_env !== undefined) {
    apiKey = env[section.key_env] || undefined;
    if (apiKey === undefined) {
      problems.push({
        source: shown,
        line: fileLine('engines.openai.key_env'),
        key: 'engines.openai.key_env',
        message: `the environment variable ${section.key_env} is not set`,
      });
    }
  }
  return { baseURL, model, ...(apiKey === undefined ? {} : { apiKey }) };
}

/**
 * The runtime's price table: the file `AXON_PRICE_TABLE` names, else the file's `prices`,
 * each added to the shipped table; `null` when neither is given. Read whether or not an
 * `openai` engine is configured: it prices the scripted engine and the rest too.
 */
function priceTableOf(
  file: ServeConfigFile,
  given: (name: string) => string | undefined,
  fileLine: (key: string) => number | null,
  shown: string,
  problems: ServeConfigProblem[],
): PriceTable | null {
  const pricesFile = given('AXON_PRICE_TABLE');
  try {
    if (pricesFile !== undefined) return loadPriceTable(pricesFile);
    if (file.prices) return extendPriceTable(PRICE_TABLE, file.prices);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    problems.push(
      pricesFile !== undefined
        ? { source: 'AXON_PRICE_TABLE', line: null, key: '', message: err.message }
        : { source: shown, line: fileLine('prices'), key: 'prices', message: err.message },
    );
  }
  return null;
}

/** The `policy` section: inline (checked with the file), or a YAML file read and checked now. */
function policyOf(
  file: ServeConfigFile,
  fromFile: (p: string) => string,
  fileLine: (key: string) => number | null,
  shown: string,
  problems: ServeConfigProblem[],
): PolicyConfig | null {
  const policy = file.policy;
  if (policy === undefined) return null;
  if (typeof policy !== 'string') return policy;
  try {
    return loadPolicyYaml({ file: fromFile(policy) });
  } catch (err) {
    if (err instanceof PolicyConfigError) {
      // The policy file's own lines and keys: it is a source of its own.
      problems.push(...err.problems.map((p) => ({ source: policy, ...p })));
    } else {
      const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : String(err);
      problems.push({
        source: shown,
        line: fileLine('policy'),
        key: 'policy',
        message: `${policy}: ${why}`,
      });
    }
    return null;
  }
}

/** The `workflows` section, checked: each problem named by its key and line in the file. */
function workflowsOf(
  file: ServeConfigFile,
  fileLine: (key: string) => number | null,
  shown: string,
  problems: ServeConfigProblem[],
): readonly WorkflowDefinition[] {
  if (file.workflows === undefined) return [];
  try {
    return workflowsFromConfig(file.workflows);
  } catch (err) {
    if (!(err instanceof WorkflowConfigError)) throw err;
    for (const issue of err.issues) {
      const key = issue.path === '' ? 'workflows' : `workflows.${issue.path}`;
      problems.push({ source: shown, line: fileLine(key), key, message: issue.message });
    }
    return [];
  }
}

/** The `memory` section with relative paths from the file's folder, and its files in the data dir. */
function memoryOf(
  memory: NonNullable<ServeConfigFile['memory']>,
  fromFile: (p: string) => string,
  dataDir: string,
): MemoryConfigInput {
  // Only SQLite tiers have a file; other backends are left as given (and refused later, by
  // createMemory, if axon has no such backend).
  const located = <T extends { readonly backend: string; readonly path?: string | undefined }>(
    tier: T,
  ): T =>
    tier.backend !== 'sqlite'
      ? tier
      : {
          ...tier,
          path: tier.path === undefined ? join(dataDir, MEMORY_FILE) : fromFile(tier.path),
        };
  return {
    ...memory,
    ...(memory.warm ? { warm: located(memory.warm) } : {}),
    ...(memory.cold ? { cold: located(memory.cold) } : {}),
  };
}
