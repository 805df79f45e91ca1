/**
 * `axon serve` runs the agents and tools `axon.yaml` declares in containers (issue 31):
 * `container:` sets container placement's options, `agents:` and `tools:` name a module
 * relative to the file; over HTTP an agent step and a tool_call step run in containers. A
 * placement other than `container` in the file is refused, naming its line.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serveCommand } from '../../../src/cli/serve/serve-command.js';
import { serveOnFreePort } from '../../support/serve-cli.js';

const image = process.env['AXON_TEST_IMAGE'] ?? 'localhost/axon-node:test';
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), `axon-serve-box-${randomUUID().slice(0, 8)}-`));
  copyFileSync(
    new URL('../../fixtures/container-agents.mjs', import.meta.url),
    join(dir, 'boxed.mjs'),
  );
});
afterEach(() => {
  chmodSync(dir, 0o700);
  rmSync(dir, { recursive: true, force: true });
});

async function call(url: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return (await res.json()) as Record<string, unknown>;
}

async function stepEnd(url: string, runId: string, body: object) {
  const step = await call(url, 'POST', `/v1/runs/${runId}/steps`, body);
  for (let i = 0; i < 400; i++) {
    const now = await call(url, 'GET', `/v1/steps/${String(step['step_id'])}`);
    if (['succeeded', 'failed', 'cancelled'].includes(String(now['status']))) return now;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(
    `the step did not end: ${JSON.stringify(await call(url, 'GET', `/v1/steps/${String(step['step_id'])}`))}`,
  );
}

describe('axon serve with container agents and tools', () => {
  it('a module folder the container user cannot read is refused, saying why', async () => {
    writeFileSync(
      join(dir, 'axon.yaml'),
      [
        `container: { image: ${image} }`,
        'agents:',
        '  - { name: boxed-echo, placement: container, module: ./boxed.mjs, export: echo }',
      ].join('\n'),
    );
    const server = await serveOnFreePort({ dataDir: join(dir, 'data') }, dir);
    try {
      const flow = await call(server.url, 'POST', '/v1/flows', { name: 'boxed' });
      const run = await call(server.url, 'POST', `/v1/flows/${String(flow['flow_id'])}/runs`, {});
      const step = await stepEnd(server.url, String(run['run_id']), {
        type: 'agent',
        input: { agent: 'boxed-echo', message: 'x' },
      });
      expect(step['error']).toMatchObject({
        code: 'POOL_UNAVAILABLE',
        message: expect.stringMatching(/must be readable .* by other users/) as unknown,
      });
    } finally {
      await server.stop();
    }
  });

  it('runs the agent and the tool axon.yaml declares in containers', async () => {
    // The container's user (nobody) reads the module: the operator's to allow.
    chmodSync(dir, 0o755);
    writeFileSync(
      join(dir, 'axon.yaml'),
      [
        'container:',
        `  image: ${image}`,
        '  memory_mb: 128',
        '  max_containers: 2',
        'agents:',
        '  - { name: boxed-echo, placement: container, module: ./boxed.mjs, export: echo }',
        'tools:',
        '  - name: boxed-shout',
        '    description: The text in capitals',
        '    placement: container',
        '    module: ./boxed.mjs',
        '    export: shout',
        '    parameters:',
        '      type: object',
        '      properties: { text: { type: string } }',
        '      required: [text]',
        '      additionalProperties: false',
      ].join('\n'),
    );
    const server = await serveOnFreePort({ dataDir: join(dir, 'data') }, dir);
    try {
      const flow = await call(server.url, 'POST', '/v1/flows', { name: 'boxed' });
      const run = await call(server.url, 'POST', `/v1/flows/${String(flow['flow_id'])}/runs`, {});
      const runId = String(run['run_id']);
      const agent = await stepEnd(server.url, runId, {
        type: 'agent',
        input: { agent: 'boxed-echo', message: 'over http' },
      });
      expect(agent['error']).toBeNull();
      expect(agent).toMatchObject({
        status: 'succeeded',
        output: { echo: 'over http', uid: 65534 },
        placement: 'container',
      });
      const tool = await stepEnd(server.url, runId, {
        type: 'tool_call',
        input: { tool: 'boxed-shout', args: { text: 'loud' } },
      });
      expect(tool).toMatchObject({ status: 'succeeded', output: { text: 'LOUD', uid: 65534 } });
      const refused = await stepEnd(server.url, runId, {
        type: 'tool_call',
        input: { tool: 'boxed-shout', args: { text: 1 } },
      });
      expect(refused['error']).toMatchObject({ code: 'SCHEMA_VIOLATION' });
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it('a placement other than container in axon.yaml is refused, naming its line', async () => {
    writeFileSync(
      join(dir, 'axon.yaml'),
      ['agents:', '  - { name: a, placement: worker, module: ./boxed.mjs, export: echo }'].join(
        '\n',
      ),
    );
    const err: string[] = [];
    const code = await serveCommand(
      { flags: { port: '0' }, env: {}, cwd: dir, version: '0', signal: AbortSignal.abort() },
      { stdout: { write: () => true }, stderr: { write: (t: string) => err.push(t) } },
    );
    expect(code).toBe(2);
    expect(err.join('')).toMatch(/axon.yaml line 2: agents\[0\]\.placement: must be "container"/);
  });

  it('a bad container option is refused, naming its line', async () => {
    writeFileSync(join(dir, 'axon.yaml'), ['container:', '  user: "0"'].join('\n'));
    const err: string[] = [];
    const code = await serveCommand(
      { flags: { port: '0' }, env: {}, cwd: dir, version: '0', signal: AbortSignal.abort() },
      { stdout: { write: () => true }, stderr: { write: (t: string) => err.push(t) } },
    );
    expect(code).toBe(2);
    expect(err.join('')).toMatch(/axon.yaml line \d+: container\.user must not be root/);
  });
});
