/**
 * The service endpoints of `axon serve` over real HTTP: pools with live figures, provision
 * (501), `/healthz`, `/metrics` (Prometheus text), and `/openapi.json` — valid OpenAPI 3.1,
 * checked against the OpenAPI Initiative's schema for 3.1 documents (vendored in
 * test/fixtures/openapi-3.1-schema.json, from https://spec.openapis.org/oas/3.1/schema/2022-10-07,
 * Apache-2.0, with its four `$dynamicRef: "#meta"` written as `$ref: "#/$defs/schema"`, which
 * Ajv resolves), and listing every path of API.md.
 */
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { expectApiError, parseSse, useTestServers, POLL } from '../support/server.js';

const servers = useTestServers('server-service');

const read = (relative: string): string => readFileSync(new URL(relative, import.meta.url), 'utf8');

/** Every `METHOD /path` API.md names, its parameters as `{name}`. */
function apiMdRoutes(): { method: string; path: string }[] {
  const text = read('../../docs/spec/API.md');
  const routes = new Map<string, { method: string; path: string }>();
  for (const m of text.matchAll(/`(GET|POST) (\/[^`\s?]+)(?:\?[^`]*)?`/g)) {
    const [, method = '', path = ''] = m;
    routes.set(`${method} ${path}`, { method, path });
  }
  return [...routes.values()];
}

describe('pools', () => {
  it('GET /v1/pools lists the embedded pool `local` with live figures; GET /v1/pools/{id} returns it; an unknown pool is 404', async () => {
    const s = await servers.start();
    const pools = await s.api('GET', '/v1/pools');
    expect(pools.status).toBe(200);
    expect(pools.body).toEqual([
      {
        pool_id: 'local',
        tags: expect.any(Array) as unknown[],
        capabilities: expect.any(Object) as object,
        engines: expect.arrayContaining(['scripted']) as string[],
        replicas: [
          {
            replica_id: expect.any(String) as string,
            health: 'healthy',
            load: expect.objectContaining({ steps_in_flight: 0 }) as object,
          },
        ],
      },
    ]);
    const inFlight = async (): Promise<number> =>
      (
        (await s.api('GET', '/v1/pools/local')).body as {
          replicas: { load: { steps_in_flight: number } }[];
        }
      ).replicas[0]?.load.steps_in_flight ?? -1;
    const run = await s.newRun();
    const gates = await Promise.all(
      [1, 2].map(() =>
        s.submit(run.run_id, { type: 'gate_eval', input: { fact_type: 'go', wait_ms: 600_000 } }),
      ),
    );
    expect(await inFlight()).toBe(2);
    await s.api('POST', `/v1/runs/${run.run_id}/facts`, { type: 'go', data: {} });
    for (const id of gates)
      expect(parseSse(await s.streamText(id)).frames.at(-1)?.event).toBe('end');
    await expect.poll(inFlight, POLL).toBe(0);
    expectApiError(await s.api('GET', '/v1/pools/gpu'), 404, 'NOT_FOUND');
  });

  it('POST /v1/pools/provision is 501 NOT_IMPLEMENTED: no provisioner is configured', async () => {
    const s = await servers.start();
    expectApiError(
      await s.api('POST', '/v1/pools/provision', { tags: ['gpu'] }),
      501,
      'NOT_IMPLEMENTED',
    );
    expectApiError(await s.api('POST', '/v1/pools/provision'), 501, 'NOT_IMPLEMENTED');
  });
});

describe('healthz and metrics', () => {
  it('GET /healthz is 200 {"status":"ok"}', async () => {
    const s = await servers.start();
    const res = await s.api('GET', '/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('GET /metrics is Prometheus text with the server series: steps, steps in flight, SSE clients, queue depth, dropped frames, breakers, requests, process', async () => {
    const s = await servers.start();
    const run = await s.newRun();
    const stepId = await s.submit(run.run_id, {
      type: 'llm_call',
      input: { messages: [{ role: 'user', content: 'x' }], params: { max_tokens: 3 } },
    });
    await s.streamText(stepId);
    await s.api('GET', '/v1/runs/run_nope');
    const res = await fetch(`${s.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    // Every line is a comment or `name{labels} value`.
    for (const line of text.split('\n').filter((l) => l !== '')) {
      expect(line).toMatch(
        /^(# (HELP|TYPE) \w+ .+|[a-zA-Z_:][\w:]*(\{[^}]*\})? [-+\d.eE]+|[a-zA-Z_:][\w:]*(\{[^}]*\})? (NaN|[+-]Inf))$/,
      );
    }
    for (const [name, type] of [
      ['axon_steps_total', 'counter'],
      ['axon_steps_in_flight', 'gauge'],
      ['axon_sse_clients', 'gauge'],
      ['axon_queue_depth', 'gauge'],
      ['axon_worker_threads', 'gauge'],
      ['axon_sse_dropped_events_total', 'counter'],
      ['axon_breaker_state', 'gauge'],
      ['axon_http_requests_total', 'counter'],
      ['axon_process_cpu_seconds_total', 'counter'],
      ['axon_nodejs_heap_size_used_bytes', 'gauge'],
    ]) {
      expect(text).toContain(`# TYPE ${name} ${type}`);
    }
    expect(text).toMatch(/^axon_steps_total\{type="llm_call",status="succeeded"\} 1$/m);
    expect(text).toMatch(
      /^axon_http_requests_total\{method="GET",route="\/v1\/runs\/:run_id",status="404"\} 1$/m,
    );
    expect(text).toMatch(/^axon_steps_in_flight 0$/m);
    expect(text).toMatch(/^axon_sse_clients 0$/m);
  });
});

describe('openapi.json', () => {
  it('is a valid OpenAPI 3.1 document (the OpenAPI Initiative schema) with every path and method of API.md', async () => {
    const s = await servers.start();
    const res = await s.api('GET', '/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body as {
      openapi: string;
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      components: { schemas: Record<string, unknown> };
    };
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);

    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    const validate = ajv.compile(JSON.parse(read('../fixtures/openapi-3.1-schema.json')) as object);
    expect(validate(doc), JSON.stringify(validate.errors?.slice(0, 5))).toBe(true);

    const routes = apiMdRoutes();
    expect(routes.length).toBeGreaterThanOrEqual(20);
    for (const { method, path } of routes) {
      expect(doc.paths[path], `${method} ${path} in openapi.json`).toBeDefined();
      expect(doc.paths[path]?.[method.toLowerCase()], `${method} ${path}`).toBeDefined();
    }
    // Every reference resolves, and every component schema is a JSON Schema 2020-12.
    const refs = JSON.stringify(doc).match(/"\$ref":"#\/components\/schemas\/[^"]+"/g) ?? [];
    for (const ref of refs) {
      const name = ref.slice('"$ref":"#/components/schemas/'.length, -1);
      expect(doc.components.schemas, ref).toHaveProperty(name);
    }
    const schemas = new Ajv2020({ strict: false });
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      expect(() => schemas.compile(schema as object), name).not.toThrow();
    }
  });
});
