import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PRICE_TABLE } from '../../../src/engines/price-table.js';
import { ServeConfigError } from '../../../src/cli/serve/config-problems.js';
import {
  loadServeConfig,
  type LoadServeConfigOptions,
} from '../../../src/cli/serve/serve-config.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), `axon-serve-config-${randomUUID().slice(0, 8)}-`));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Writes `text` to `name` under the test's folder; returns its path. */
function file(name: string, text: string): string {
  const path = join(dir, name);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
  return path;
}

/** loadServeConfig in the test's folder, with an empty environment unless given. */
function load(options: LoadServeConfigOptions = {}): ReturnType<typeof loadServeConfig> {
  return loadServeConfig({ cwd: dir, env: {}, ...options });
}

/** The error message of a refused configuration. */
function refused(options: LoadServeConfigOptions = {}): string {
  try {
    load(options);
  } catch (err) {
    expect(err).toBeInstanceOf(ServeConfigError);
    return (err as Error).message;
  }
  throw new Error('expected the configuration to be refused');
}

const KEY = 'k-0123456789abcdef';
const OTHER_KEY = 'k-fedcba9876543210';

const FULL = `# every key
server:
  host: 0.0.0.0
  port: 8080
  keep_alive_ms: 5000
  body_limit_bytes: 2048
  max_steps_per_run: 8
  drain_ms: 2500
  sse_flush_ms: 0
data_dir: ./state
auth:
  keys:
    - { key: ${KEY}, user_id: alice }
    - { key: ${OTHER_KEY}, user_id: ops, permissions: [read, admin] }
engines:
  openai:
    url: http://127.0.0.1:11434/v1
    model: llama3.1
    key_env: MY_ENGINE_KEY
prices:
  version: acme-2026-11
  models:
    llama3.1: { inputPerMTok: 0.5, outputPerMTok: 0.75 }
policy:
  tools: { deny: [rm] }
  execution: { max_depth: 3 }
memory:
  warm: { backend: sqlite }
  cold: { backend: sqlite, path: ./cold.db }
  token_budget: 2000
`;

describe('loadServeConfig: defaults and the file', () => {
  it('with no file, no variables and no flags: API.md embedded defaults', () => {
    const c = load();
    expect(c).toMatchObject({
      configFile: null,
      host: '127.0.0.1',
      port: 7070,
      dataDir: join(dir, '.axon'),
      keys: [],
      openai: null,
      policy: null,
      memory: null,
    });
    expect(c.keepAliveMs).toBeUndefined();
    expect(c.drainMs).toBeUndefined();
  });

  it('reads ./axon.yaml when there is one and --config names none', () => {
    file('axon.yaml', 'server: { port: 9001 }\n');
    const c = load();
    expect(c.configFile).toBe(join(dir, 'axon.yaml'));
    expect(c.port).toBe(9001);
  });

  it('reads every key of the file', () => {
    const path = file('conf/axon.yaml', FULL);
    const c = load({ flags: { config: 'conf/axon.yaml' }, env: { MY_ENGINE_KEY: 'sk-local' } });
    expect(c.configFile).toBe(path);
    expect(c).toMatchObject({
      host: '0.0.0.0',
      port: 8080,
      keepAliveMs: 5000,
      bodyLimitBytes: 2048,
      maxStepsPerRun: 8,
      drainMs: 2500,
      sseFlushMs: 0,
      // Relative to the file's folder.
      dataDir: join(dir, 'conf/state'),
    });
    expect(c.keys).toEqual([
      { key: KEY, user_id: 'alice', permissions: ['read', 'write'] },
      { key: OTHER_KEY, user_id: 'ops', permissions: ['read', 'admin'] },
    ]);
    expect(c.openai).toMatchObject({
      baseURL: 'http://127.0.0.1:11434/v1',
      model: 'llama3.1',
      apiKey: 'sk-local',
    });
    expect(c.priceTable?.version).toBe('acme-2026-11');
    expect(c.priceTable?.models['llama3.1']).toEqual({
      inputPerMTok: 0.5,
      outputPerMTok: 0.75,
    });
    // Added to the shipped table, not instead of it.
    expect(c.priceTable?.models['gpt-4o']).toEqual(PRICE_TABLE.models['gpt-4o']);
    expect(c.policy).toMatchObject({ tools: { deny: ['rm'] }, execution: { max_depth: 3 } });
    expect(c.memory).toMatchObject({
      // No path: the data dir's memory.db; a relative one: from the file's folder.
      warm: { backend: 'sqlite', path: join(dir, 'conf/state/memory.db') },
      cold: { backend: 'sqlite', path: join(dir, 'conf/cold.db') },
      token_budget: 2000,
    });
    // The line of a key, for what createMemory refuses later (it names the key, not the line).
    const coldLine = FULL.split('\n').findIndex((l) => l.includes('cold:')) + 1;
    expect(c.lineOf('memory.cold.path')).toBe(coldLine);
    expect(coldLine).toBeGreaterThan(20);
  });

  it('reads a policy given as the path of a policy YAML file, relative to the config file', () => {
    file('conf/policy.yaml', 'rate_limits:\n  per_user: { requests_per_minute: 60 }\n');
    file('conf/axon.yaml', 'policy: ./policy.yaml\n');
    const c = load({ flags: { config: 'conf/axon.yaml' } });
    expect(c.policy).toMatchObject({
      rate_limits: { per_user: { requests_per_minute: 60, on_exceed: 'reject' } },
    });
  });

  it('an empty file is the defaults', () => {
    file('axon.yaml', '# nothing yet\n');
    expect(load()).toMatchObject({ host: '127.0.0.1', port: 7070, keys: [] });
  });
});

describe('loadServeConfig: precedence (flags > environment > file > defaults)', () => {
  const FILE = `server: { host: 10.0.0.1, port: 1111, keep_alive_ms: 1000 }
data_dir: ./from-file
auth: { keys: [{ key: ${KEY}, user_id: alice }] }
`;

  it('the file overrides the defaults', () => {
    file('axon.yaml', FILE);
    expect(load()).toMatchObject({
      host: '10.0.0.1',
      port: 1111,
      keepAliveMs: 1000,
      dataDir: join(dir, 'from-file'),
    });
  });

  it('the environment overrides the file', () => {
    file('axon.yaml', FILE);
    const c = load({
      env: {
        AXON_HOST: '10.0.0.2',
        AXON_PORT: '2222',
        AXON_KEEP_ALIVE_MS: '2000',
        AXON_DATA_DIR: 'from-env',
        AXON_API_KEYS: `${OTHER_KEY}:bob:read`,
      },
    });
    expect(c).toMatchObject({
      host: '10.0.0.2',
      port: 2222,
      keepAliveMs: 2000,
      dataDir: join(dir, 'from-env'),
    });
    // AXON_API_KEYS replaces the file's keys.
    expect(c.keys).toEqual([{ key: OTHER_KEY, user_id: 'bob', permissions: ['read'] }]);
  });

  it('the flags override the environment', () => {
    file('axon.yaml', FILE);
    const c = load({
      env: { AXON_HOST: '10.0.0.2', AXON_PORT: '2222', AXON_DATA_DIR: 'from-env' },
      flags: { host: '127.0.0.1', port: '0', dataDir: 'from-flag' },
    });
    expect(c).toMatchObject({ host: '127.0.0.1', port: 0, dataDir: join(dir, 'from-flag') });
  });

  it('an empty variable counts as unset', () => {
    file('axon.yaml', FILE);
    expect(load({ env: { AXON_PORT: '', AXON_HOST: '', AXON_API_KEYS: '' } })).toMatchObject({
      host: '10.0.0.1',
      port: 1111,
      keys: [{ user_id: 'alice' }],
    });
  });

  it('AXON_ENGINE_URL, AXON_ENGINE_MODEL and AXON_ENGINE_KEY override engines.openai; AXON_PRICE_TABLE overrides prices', () => {
    const prices = file('prices.yaml', 'version: env-prices\nmodels: {}\n');
    file(
      'axon.yaml',
      'engines: { openai: { url: "http://a.example/v1", model: m1, key_env: K } }\nprices: { version: file-prices, models: {} }\n',
    );
    const fromFile = load({ env: { K: 'from-file-env' } });
    expect(fromFile.openai).toMatchObject({
      baseURL: 'http://a.example/v1',
      model: 'm1',
      apiKey: 'from-file-env',
    });
    expect(fromFile.priceTable?.version).toBe('file-prices');
    const fromEnv = load({
      env: {
        K: 'from-file-env',
        AXON_ENGINE_URL: 'http://b.example/v1',
        AXON_ENGINE_MODEL: 'm2',
        AXON_ENGINE_KEY: 'from-env',
        AXON_PRICE_TABLE: prices,
      },
    });
    expect(fromEnv.openai).toMatchObject({
      baseURL: 'http://b.example/v1',
      model: 'm2',
      apiKey: 'from-env',
    });
    expect(fromEnv.priceTable?.version).toBe('env-prices');
  });

  it('AXON_ENGINE_URL alone registers openai with the default model and the shipped prices', () => {
    const c = load({ env: { AXON_ENGINE_URL: 'http://127.0.0.1:8000/v1' } });
    expect(c.openai).toEqual({ baseURL: 'http://127.0.0.1:8000/v1', model: 'gpt-4o-mini' });
    expect(c.priceTable).toBeNull();
  });

  it('prices and AXON_PRICE_TABLE are read without an openai engine: they cost the scripted one and the rest', () => {
    file(
      'axon.yaml',
      'prices: { version: file-prices, models: { scripted: { inputPerMTok: 1, outputPerMTok: 2 } } }\n',
    );
    const c = load();
    expect(c.openai).toBeNull();
    expect(c.priceTable?.version).toBe('file-prices');
    expect(c.priceTable?.models['scripted']).toEqual({ inputPerMTok: 1, outputPerMTok: 2 });
    const prices = file('prices.yaml', 'version: env-prices\nmodels: {}\n');
    expect(load({ env: { AXON_PRICE_TABLE: prices } }).priceTable?.version).toBe('env-prices');
    // A file that is not a price table is refused even so, naming the variable.
    const bad = file(
      'bad.yaml',
      'version: v\nmodels: { m: { inputPerMTok: -1, outputPerMTok: 0 } }\n',
    );
    expect(refused({ env: { AXON_PRICE_TABLE: bad } })).toMatch(
      /^AXON_PRICE_TABLE: price table .*bad\.yaml: models\.m\.inputPerMTok/,
    );
  });
});

describe('loadServeConfig: refusals name the source, the line and the key', () => {
  it('an unknown top-level key, with its line', () => {
    file('axon.yaml', 'server:\n  port: 7070\nlisten: 0.0.0.0\n');
    expect(refused()).toBe('axon.yaml line 3: listen: unknown key "listen"');
  });

  it('an unknown nested key, with its line', () => {
    file('axon.yaml', 'server:\n  host: 127.0.0.1\n  prot: 7070\n');
    expect(refused()).toBe('axon.yaml line 3: server.prot: unknown key "prot"');
  });

  it('a value of the wrong kind and one out of range, both in one line', () => {
    file('my.yaml', 'server:\n  port: 70000\n  drain_ms: soon\n');
    const message = refused({ flags: { config: 'my.yaml' } });
    expect(message).toMatch(/^my\.yaml line 2: server\.port: .*65535/);
    expect(message).toMatch(/; my\.yaml line 3: server\.drain_ms: .*expected number/);
    expect(message).not.toContain('\n');
  });

  it('a flush window below 0, or not whole, is refused with its line', () => {
    for (const value of ['-1', '2.5']) {
      file('axon.yaml', `server:\n  sse_flush_ms: ${value}\n`);
      expect(refused()).toMatch(/^axon\.yaml line 2: server\.sse_flush_ms: /);
    }
  });

  it('reads the trust keys: stream bounds, allowed hosts and fs.roots (relative to the file); refuses a bound of 0', () => {
    file(
      'conf/axon.yaml',
      'server:\n  max_streams: 10\n  max_streams_per_user: 2\n  allowed_hosts: [api.example.com]\nfs:\n  roots: [./files]\n',
    );
    const c = load({ flags: { config: 'conf/axon.yaml' } });
    expect(c).toMatchObject({
      maxStreams: 10,
      maxStreamsPerUser: 2,
      allowedHosts: ['api.example.com'],
      fsRoots: [join(dir, 'conf', 'files')],
    });
    for (const key of ['max_streams', 'max_streams_per_user']) {
      file('axon.yaml', `server:\n  ${key}: 0\n`);
      expect(refused()).toMatch(new RegExp(`^axon\\.yaml line 2: server\\.${key}: `));
    }
    file('axon.yaml', 'fs:\n  roots: []\n');
    expect(refused()).toMatch(/^axon\.yaml line 2: fs\.roots: /);
  });

  it('a key inside a list item: auth.keys[1].key, with its line', () => {
    file(
      'axon.yaml',
      `auth:\n  keys:\n    - { key: ${KEY}, user_id: a }\n    - key: short\n      user_id: b\n`,
    );
    expect(refused()).toMatch(/^axon\.yaml line 4: auth\.keys\[1\]\.key: .*16/);
  });

  it('an unknown key of an inline policy, with its line', () => {
    file('axon.yaml', 'policy:\n  tools:\n    allow: [add]\n    forbid: [rm]\n');
    expect(refused()).toBe('axon.yaml line 4: policy.tools.forbid: unknown key "forbid"');
  });

  it("a policy file's own problem, with that file's line", () => {
    file('policy.yaml', 'execution:\n  max_depth: -1\n');
    file('axon.yaml', 'policy: policy.yaml\n');
    expect(refused()).toMatch(/^policy\.yaml line 2: execution\.max_depth: /);
  });

  it('a policy file that does not exist', () => {
    file('axon.yaml', '\npolicy: ./nope.yaml\n');
    expect(refused()).toBe('axon.yaml line 2: policy: ./nope.yaml: no such file');
  });

  it('a policy that is neither a path nor an object', () => {
    file('axon.yaml', 'policy: 42\n');
    expect(refused()).toBe(
      'axon.yaml line 1: policy: expected the path of a policy YAML file, or a policy object',
    );
  });

  it('a bad memory key, with its line', () => {
    file('axon.yaml', 'memory:\n  hot: { backend: inmemory, size: 3 }\n');
    expect(refused()).toBe('axon.yaml line 2: memory.hot.size: unknown key "size"');
  });

  it('a bad price, with its line', () => {
    file(
      'axon.yaml',
      'prices:\n  version: v1\n  models:\n    m: { inputPerMTok: -1, outputPerMTok: 1 }\n',
    );
    expect(refused()).toMatch(/^axon\.yaml line 4: prices\.models\.m\.inputPerMTok: /);
  });

  it('an engine URL that is not http(s)', () => {
    file('axon.yaml', 'engines:\n  openai:\n    url: ftp://x\n');
    expect(refused()).toBe('axon.yaml line 3: engines.openai.url: must be an http(s) URL');
  });

  it('engines.openai.key_env naming a variable that is not set', () => {
    file('axon.yaml', 'engines:\n  openai:\n    url: http://x/v1\n    key_env: NOT_SET_HERE\n');
    expect(refused()).toBe(
      'axon.yaml line 4: engines.openai.key_env: the environment variable NOT_SET_HERE is not set',
    );
  });

  it('YAML that does not parse, with its line', () => {
    file('axon.yaml', 'server:\n  port: 1\n  host: [unclosed\n');
    expect(refused()).toMatch(/^axon\.yaml line \d+: /);
  });

  it('a file that is not a map', () => {
    file('axon.yaml', '- a\n- b\n');
    expect(refused()).toMatch(/^axon\.yaml line 1: .*expected object/);
  });

  it('--config naming a file that does not exist', () => {
    expect(refused({ flags: { config: 'missing.yaml' } })).toBe('missing.yaml: no such file');
  });

  it.each([
    [{ AXON_PORT: 'abc' }, 'AXON_PORT: must be a whole number, got "abc"'],
    [{ AXON_PORT: '1e3' }, 'AXON_PORT: must be a whole number, got "1e3"'],
    [{ AXON_PORT: '70000' }, /^AXON_PORT: .*65535/],
    [{ AXON_KEEP_ALIVE_MS: '0' }, /^AXON_KEEP_ALIVE_MS: .*>0/],
    [{ AXON_ENGINE_URL: 'localhost:8000' }, 'AXON_ENGINE_URL: must be an http(s) URL'],
    [{ AXON_API_KEYS: 'short:alice' }, /^AXON_API_KEYS: item 1: expected key:user_id/],
  ])('a bad environment variable is named: %j', (env, expected) => {
    const message = refused({ env });
    if (typeof expected === 'string') expect(message).toBe(expected);
    else expect(message).toMatch(expected);
  });

  it.each([
    [{ port: '-1' }, '--port: must be a whole number, got "-1"'],
    [{ port: '65536' }, /^--port: .*65535/],
    [{ host: '' }, /^--host: /],
    [{ dataDir: '' }, /^--data-dir: /],
  ])('a bad flag is named: %j', (flags, expected) => {
    const message = refused({ flags });
    if (typeof expected === 'string') expect(message).toBe(expected);
    else expect(message).toMatch(expected);
  });

  it('every problem of the environment and the flags at once', () => {
    const message = refused({ env: { AXON_PORT: 'x' }, flags: { port: 'y' } });
    expect(message).toBe(
      'AXON_PORT: must be a whole number, got "x"; --port: must be a whole number, got "y"',
    );
  });
});

describe("loadServeConfig: the fleet's Redis, a server or a cluster", () => {
  it('reads redis.cluster from the file, as a list or one string, with the prefix {axon}: by default', () => {
    file('axon.yaml', 'redis:\n  cluster: [10.0.0.1:7001, "10.0.0.2:7002"]\n');
    expect(load().redis).toEqual({
      url: null,
      cluster: ['10.0.0.1:7001', '10.0.0.2:7002'],
      prefix: '{axon}:',
      source: 'axon.yaml redis.cluster',
    });
    file('axon.yaml', 'redis:\n  cluster: "h1:1,h2:2"\n  prefix: "{fleet-a}:"\n');
    expect(load().redis).toEqual({
      url: null,
      cluster: ['h1:1', 'h2:2'],
      prefix: '{fleet-a}:',
      source: 'axon.yaml redis.cluster',
    });
  });

  it('the first of the flags, the environment and the file that names a Redis decides, a URL or a cluster; its source is kept for messages', () => {
    file('axon.yaml', 'redis:\n  url: redis://file:6379\n  prefix: "{p}:"\n');
    expect(load().redis).toEqual({
      url: 'redis://file:6379',
      cluster: null,
      prefix: '{p}:',
      source: 'axon.yaml redis.url',
    });
    expect(load({ env: { AXON_REDIS_CLUSTER: 'env:7001' } }).redis).toEqual({
      url: null,
      cluster: ['env:7001'],
      prefix: '{p}:',
      source: 'AXON_REDIS_CLUSTER',
    });
    expect(
      load({ env: { AXON_REDIS_CLUSTER: 'env:7001' }, flags: { redis: 'redis://flag:1' } }).redis,
    ).toEqual({ url: 'redis://flag:1', cluster: null, prefix: '{p}:', source: '--redis' });
    expect(load({ env: { AXON_REDIS_URL: 'redis://env:1' } }).redis?.source).toBe('AXON_REDIS_URL');
    expect(
      load({ env: { AXON_REDIS_URL: 'redis://env:1' }, flags: { redisCluster: 'a:1,[::1]:2' } })
        .redis,
    ).toEqual({
      url: null,
      cluster: ['a:1', '[::1]:2'],
      prefix: '{p}:',
      source: '--redis-cluster',
    });
  });

  it.each([
    [{ redisCluster: 'nohost' }, /^--redis-cluster: must be host:port/],
    [{ redisCluster: 'a:1,,b:2' }, /^--redis-cluster: must be host:port/],
    [{ redis: 'redis://x:1', redisCluster: 'a:1' }, /names both a Redis URL and a Redis Cluster/],
  ])('refuses the flags %j', (flags, expected) => {
    expect(refused({ flags })).toMatch(expected);
  });

  it('refuses a file naming both or neither, and a cluster prefix without a hash tag, with its line', () => {
    file('axon.yaml', 'redis:\n  url: redis://x:1\n  cluster: a:1\n');
    expect(refused()).toMatch(/give url or cluster/);
    file('axon.yaml', 'redis:\n  prefix: "p:"\n');
    expect(refused()).toMatch(/give url or cluster/);
    file('axon.yaml', 'redis:\n  cluster: a:1\n  prefix: "plain:"\n');
    expect(refused()).toMatch(/^axon.yaml line 3: redis.prefix: "plain:" has no hash tag/);
  });
});

describe('loadServeConfig: PostgreSQL and the start-up wait', () => {
  it('keeps where the PostgreSQL URL was named: the flag, the variable or the file', () => {
    file('axon.yaml', 'store:\n  postgres: postgres://file@h/db\n  schema: app\n');
    expect(load().postgres).toEqual({
      url: 'postgres://file@h/db',
      schema: 'app',
      source: 'axon.yaml store.postgres',
    });
    expect(load({ env: { AXON_POSTGRES_URL: 'postgres://env@h/db' } }).postgres).toEqual({
      url: 'postgres://env@h/db',
      schema: 'app',
      source: 'AXON_POSTGRES_URL',
    });
    expect(
      load({
        env: { AXON_POSTGRES_URL: 'postgres://env@h/db' },
        flags: { postgres: 'postgres://flag@h/db' },
      }).postgres,
    ).toEqual({ url: 'postgres://flag@h/db', schema: 'app', source: '--postgres' });
  });

  it('connect_timeout_ms: 5000 by default; the file, then AXON_CONNECT_TIMEOUT_MS, then --connect-timeout-ms', () => {
    expect(load().connectTimeoutMs).toBe(5000);
    file('axon.yaml', 'connect_timeout_ms: 1500\n');
    expect(load().connectTimeoutMs).toBe(1500);
    expect(load({ env: { AXON_CONNECT_TIMEOUT_MS: '2500' } }).connectTimeoutMs).toBe(2500);
    expect(
      load({ env: { AXON_CONNECT_TIMEOUT_MS: '2500' }, flags: { connectTimeoutMs: '300' } })
        .connectTimeoutMs,
    ).toBe(300);
  });

  it.each([
    [
      { flags: { connectTimeoutMs: 'soon' } },
      '--connect-timeout-ms: must be a whole number, got "soon"',
    ],
    [{ flags: { connectTimeoutMs: '0' } }, /^--connect-timeout-ms: .*>0/],
    [
      { env: { AXON_CONNECT_TIMEOUT_MS: '-5' } },
      'AXON_CONNECT_TIMEOUT_MS: must be a whole number, got "-5"',
    ],
  ])(
    'refuses a start-up wait that is not a whole number of ms above 0: %j',
    (options, expected) => {
      const message = refused(options);
      if (typeof expected === 'string') expect(message).toBe(expected);
      else expect(message).toMatch(expected);
    },
  );

  it('refuses connect_timeout_ms in the file that is not a whole number above 0, with its line', () => {
    file('axon.yaml', 'server:\n  port: 1\nconnect_timeout_ms: 1.5\n');
    expect(refused()).toMatch(/^axon\.yaml line 3: connect_timeout_ms: /);
  });
});

describe('loadServeConfig: workflows', () => {
  it('reads the workflows: key into workflow definitions', () => {
    file(
      'axon.yaml',
      [
        'workflows:',
        '  review:',
        '    max_rounds: 4',
        '    roles:',
        '      coder: { engine: scripted, prompt: "You write code." }',
        '    moderator:',
        '      order: [coder]',
      ].join('\n'),
    );
    const config = load();
    expect(config.workflows.map((w) => [w.name, w.roleNames, w.maxRounds])).toEqual([
      ['review', ['coder'], 4],
    ]);
    expect(load({ flags: { config: file('empty.yaml', '{}') } }).workflows).toEqual([]);
  });

  it('a workflow that cannot run is refused with its key and line, as other keys are', () => {
    file(
      'axon.yaml',
      [
        'workflows:',
        '  review:',
        '    roles:',
        '      coder: { engine: scripted, prompt: p }',
        '    moderator:',
        '      order: [coder, reviewer]',
      ].join('\n'),
    );
    expect(refused()).toBe(
      'axon.yaml line 6: workflows.review.moderator.order.1: no role "reviewer"',
    );
  });
});
