/**
 * @module The servers the security suite attacks, as an operator runs them: `axon serve` on
 * SQLite, or `axon serve --redis` with a real `axon worker` process taking the steps — each a
 * child process run from source on a config file of its own (keys, a sandbox folder, stream
 * bounds), in a scratch folder removed after the file. Callers are strangers over real HTTP.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { spawnAxon, type FleetProcess } from '../support/axon-process.js';
import { clearRedisPrefix, redisUrl } from '../support/redis.js';
import { request, type ApiResponse } from '../support/server.js';

/** The keys of the config, by who holds them. */
export const KEYS = {
  alice: 'alice-key-0123456789abcdef',
  bob: 'bob-key-0123456789abcdefgh',
  /** `admin`: every user's runs, and `/metrics`. */
  ops: 'ops-key-0123456789abcdefghi',
  /** `metrics` alone: a Prometheus scraper's. */
  scraper: 'scraper-key-0123456789abcdef',
} as const;
export type Who = keyof typeof KEYS;

/** The stream bounds of the config: in all, and per user. */
export const MAX_STREAMS = 3;
export const MAX_STREAMS_PER_USER = 2;

/** The `Host` names the config lets in (any port). */
export const ALLOWED_HOSTS = ['127.0.0.1', 'api.example.com'] as const;

/** Where the suite runs: one process on SQLite, or an API process and a worker on Redis. */
export type TargetKind = 'sqlite' | 'fleet';

/** A running target. */
export interface Target {
  readonly kind: TargetKind;
  readonly url: string;
  /** The scratch folder: the config, the data dir, the sandbox. */
  readonly dir: string;
  readonly configFile: string;
  readonly dataDir: string;
  /** The config's sandbox folder (`fs.roots[0]`). */
  readonly sandbox: string;
  /** The processes, the API first. */
  readonly processes: readonly FleetProcess[];
  /** A request with `who`'s key (none for `null`). */
  call(
    who: Who | null,
    method: string,
    path: string,
    body?: unknown,
    headers?: Readonly<Record<string, string>>,
  ): Promise<ApiResponse>;
  /** A new flow, then a run of it for `who` with `body`: the run, expecting 201. */
  newRun(who: Who, body?: Record<string, unknown>): Promise<{ run_id: string; seed: unknown }>;
  /** A step submitted by `who`, expecting 201: its id. */
  submit(who: Who, runId: string, step: Record<string, unknown>): Promise<string>;
  /** `who`'s step once it ended (polled). */
  ended(who: Who, stepId: string): Promise<Record<string, unknown>>;
  /** Another API process on the same config (a fleet's second front). */
  anotherApi(): Promise<string>;
}

/** The YAML of a target's config file (`extra` is appended as it is). */
function configYaml(dir: string, kind: TargetKind, prefix: string, extra: string): string {
  return [
    `data_dir: ${join(dir, 'data')}`,
    'server:',
    `  max_streams: ${MAX_STREAMS}`,
    `  max_streams_per_user: ${MAX_STREAMS_PER_USER}`,
    `  allowed_hosts: [${ALLOWED_HOSTS.join(', ')}]`,
    'auth:',
    '  keys:',
    `    - { key: ${KEYS.alice}, user_id: alice }`,
    `    - { key: ${KEYS.bob}, user_id: bob }`,
    `    - { key: ${KEYS.ops}, user_id: ops, permissions: [read, write, admin] }`,
    `    - { key: ${KEYS.scraper}, user_id: prometheus, permissions: [metrics] }`,
    'fs:',
    `  roots: [${join(dir, 'files')}]`,
    ...(kind === 'fleet' ? ['redis:', `  url: ${redisUrl()}`, `  prefix: "${prefix}"`] : []),
    extra,
  ].join('\n');
}

/**
 * A target of `kind` for this file's tests, started before them and stopped after; the
 * function returned gives it. `extra` is YAML added to its config.
 */
export function useTarget(kind: TargetKind, extra = ''): () => Target {
  const dir = mkdtempSync(join(tmpdir(), `axon-security-${kind}-`));
  const prefix = `axon-test:security:${kind}:${process.pid}:${randomUUID().slice(0, 8)}:`;
  const configFile = join(dir, 'axon.yaml');
  const spawned: FleetProcess[] = [];
  let target: Target | null = null;

  beforeAll(async () => {
    mkdirSync(join(dir, 'files'), { recursive: true });
    writeFileSync(configFile, configYaml(dir, kind, prefix, extra));
    const api = async (): Promise<string> => {
      const { match } = await spawnAxon(
        ['serve', '--port', '0', '--config', configFile],
        { AXON_SCRIPTED_TOKEN_MS: '2' },
        /listening on (http:\/\/\S+) /,
        spawned,
      );
      return match[1] as string;
    };
    const url = await api();
    if (kind === 'fleet') {
      await spawnAxon(
        ['worker', '--pool', 'p1', '--config', configFile],
        { AXON_SCRIPTED_TOKEN_MS: '2', AXON_LOG_LEVEL: 'warn' },
        /replica (\S+) of pool/,
        spawned,
      );
    }
    const call: Target['call'] = (who, method, path, body, headers = {}) =>
      request(url, method, path, body, {
        ...(who === null ? {} : { authorization: `Bearer ${KEYS[who]}` }),
        ...headers,
      });
    // A fleet's pool is live once the API has read its worker's first heartbeat.
    for (let waited = 0; kind === 'fleet'; waited += 50) {
      const pools = (await call('ops', 'GET', '/v1/pools')).body as unknown[];
      if (pools.length > 0) break;
      if (waited > 20_000) throw new Error("the fleet's pool never showed up in GET /v1/pools");
      await new Promise((r) => setTimeout(r, 50));
    }
    target = {
      kind,
      url,
      dir,
      configFile,
      dataDir: join(dir, 'data'),
      sandbox: join(dir, 'files'),
      processes: spawned,
      call,
      async newRun(who, body = {}) {
        const flow = await call(who, 'POST', '/v1/flows', {
          name: 'attack',
          ast: { id: randomUUID() },
        });
        expect(flow.status, flow.text).toBe(201);
        const { flow_id } = flow.body as { flow_id: string };
        const run = await call(who, 'POST', `/v1/flows/${flow_id}/runs`, body);
        expect(run.status, run.text).toBe(201);
        return run.body as { run_id: string; seed: unknown };
      },
      async submit(who, runId, step) {
        const res = await call(who, 'POST', `/v1/runs/${runId}/steps`, step);
        expect(res.status, res.text).toBe(201);
        return (res.body as { step_id: string }).step_id;
      },
      async ended(who, stepId) {
        let step: Record<string, unknown> = {};
        await expect
          .poll(
            async () => {
              step = (await call(who, 'GET', `/v1/steps/${stepId}`)).body as Record<
                string,
                unknown
              >;
              return ['succeeded', 'failed', 'cancelled'].includes(String(step['status']));
            },
            { timeout: 20_000, interval: 50 },
          )
          .toBe(true);
        return step;
      },
      anotherApi: api,
    };
  });

  afterAll(async () => {
    for (const p of spawned) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await Promise.all(spawned.map((p) => p.exited));
    if (kind === 'fleet') await clearRedisPrefix(prefix);
    rmSync(dir, { recursive: true, force: true });
  });

  return () => {
    if (!target) throw new Error('the target is not started (use it inside a test)');
    return target;
  };
}

/**
 * A request with the `Host` of the test's choosing, as a browser would send it for a name
 * (`fetch` will not set one); `null` sends none. A POST carries a small JSON flow. Resolves
 * the status and the parsed body.
 */
export function withHost(
  url: string,
  method: string,
  path: string,
  host: string | null,
  headers: Readonly<Record<string, string>> = {},
): Promise<{ status: number; body: unknown }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        hostname,
        port,
        path,
        method,
        setHost: false,
        headers: {
          ...headers,
          ...(host === null ? {} : { host }),
          ...(method === 'POST' ? { 'content-type': 'application/json' } : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body: text === '' ? null : JSON.parse(text) });
        });
      },
    );
    req.on('error', reject);
    req.end(method === 'POST' ? JSON.stringify({ name: 'rebound' }) : undefined);
  });
}
