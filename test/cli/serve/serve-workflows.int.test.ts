/**
 * `axon serve` runs workflows: the config file's `workflows:` plus the example `code-review`
 * (a configured one of that name replaces it), a bad `workflows:` key refused like any config
 * problem (exit 2, its line), and a thread a stopped process left running resumed on start.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { codeReview } from '../../../examples/code-review/index.js';
import { createLogger } from '../../../src/observability/logger.js';
import { createRuntime } from '../../../src/runtime/runtime.js';
import { sqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { WorkflowEngine } from '../../../src/workflows/workflow-engine.js';
import { clearRedisPrefix } from '../../support/redis.js';
import { serveOnFreePort } from '../../support/serve-cli.js';
import { serveCommand } from '../../../src/cli/serve/serve-command.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), `axon-serve-wf-${randomUUID().slice(0, 8)}-`));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const serve = (flags: Record<string, string>) => serveOnFreePort(flags, dir);

describe('axon serve with workflows', () => {
  it("serves the config file's workflows and the example, and runs a thread of the example", async () => {
    writeFileSync(
      join(dir, 'axon.yaml'),
      [
        'workflows:',
        '  echo:',
        '    max_rounds: 1',
        '    roles:',
        '      a: { engine: scripted, prompt: "You echo." }',
        '    moderator:',
        '      order: [a]',
      ].join('\n'),
    );
    const s = await serve({ dataDir: 'data' });
    try {
      expect(s.stdout()).toContain('axon serve: workflows: echo, code-review\n');
      const list = (await (await fetch(`${s.url}/v1/workflows`)).json()) as { name: string }[];
      expect(list.map((w) => w.name)).toEqual(['echo', 'code-review']);
      const post = await fetch(`${s.url}/v1/workflows/code-review/threads`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ input: 'Write add(a, b) in JavaScript' }),
      });
      expect(post.status).toBe(201);
      const { thread_id } = (await post.json()) as { thread_id: string };
      let status = '';
      for (let i = 0; i < 500 && !['completed', 'failed'].includes(status); i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        status = (
          (await (await fetch(`${s.url}/v1/threads/${thread_id}`)).json()) as { status: string }
        ).status;
      }
      expect(status).toBe('completed');
    } finally {
      expect(await s.stop()).toBe(0);
    }
  });

  it('a configured workflow named code-review replaces the example, and says so', async () => {
    writeFileSync(
      join(dir, 'axon.yaml'),
      [
        'workflows:',
        '  code-review:',
        '    roles:',
        '      a: { engine: scripted, prompt: "p" }',
        '    moderator:',
        '      order: [a]',
      ].join('\n'),
    );
    const s = await serve({ dataDir: 'data' });
    try {
      expect(s.stdout()).toContain(
        'axon serve: workflows: code-review (code-review from the config file)\n',
      );
      const list = (await (await fetch(`${s.url}/v1/workflows`)).json()) as {
        roles: { name: string }[];
      }[];
      expect(list.map((w) => w.roles.map((r) => r.name))).toEqual([['a']]);
    } finally {
      await s.stop();
    }
  });

  it('a bad workflows: key exits 2 with one line naming the key and its line', async () => {
    writeFileSync(
      join(dir, 'axon.yaml'),
      ['workflows:', '  w:', '    roles: {}', '    moderator:', '      order: [nobody]'].join('\n'),
    );
    const err: string[] = [];
    const code = await serveCommand(
      { flags: { port: '0' }, env: {}, cwd: dir, version: '0', signal: AbortSignal.abort() },
      { stdout: { write: () => true }, stderr: { write: (t: string) => err.push(t) } },
    );
    expect(code).toBe(2);
    expect(err.join('')).toBe(
      'axon serve: axon.yaml line 5: workflows.w.moderator.order.0: no role "nobody"\n',
    );
  });

  it('serves workflows with --redis too, and refuses a role placed on a pool without a fleet (exit 2)', async () => {
    const workflows = [
      'workflows:',
      '  w:',
      '    roles: { a: { engine: scripted, prompt: p, placement: { pool: gpu } } }',
      '    moderator: { order: [a] }',
    ].join('\n');
    writeFileSync(join(dir, 'axon.yaml'), workflows);
    const err: string[] = [];
    const code = await serveCommand(
      { flags: { port: '0' }, env: {}, cwd: dir, version: '0', signal: AbortSignal.abort() },
      { stdout: { write: () => true }, stderr: { write: (t: string) => err.push(t) } },
    );
    expect(code).toBe(2);
    expect(err.join('')).toBe(
      'axon serve: register(w): role "a" is placed on a pool, and this runtime has no fleet (createRuntime({ fleet }), axon serve --redis)\n',
    );
    const prefix = `axon-test:${randomUUID()}:`;
    writeFileSync(
      join(dir, 'axon.yaml'),
      `redis:\n  url: redis://127.0.0.1:6379\n  prefix: "${prefix}"\n${workflows}\n`,
    );
    const s = await serve({ redis: 'redis://127.0.0.1:6379' });
    try {
      expect(s.stdout()).toContain('workflows: w, code-review');
      const listed = (await (await fetch(`${s.url}/v1/workflows`)).json()) as {
        name: string;
        roles: unknown[];
      }[];
      expect(listed.map((w) => w.name)).toEqual(['w', 'code-review']);
      expect(listed[0]?.roles).toEqual([{ name: 'a', kind: 'engine', placement: 'pool:gpu' }]);
    } finally {
      expect(await s.stop()).toBe(0);
      await clearRedisPrefix(prefix);
    }
  });

  it('resumes on start a thread a stopped process left running, and says so', async () => {
    const data = join(dir, 'data');
    mkdirSync(data);
    const example = codeReview({ tokenDelayMs: 20 });
    const runtime = createRuntime({
      store: sqliteStore(join(data, 'axon.db')),
      engines: [...example.engines],
      logger: createLogger({ level: 'silent' }),
    });
    const engine = new WorkflowEngine(runtime, [example.workflow]);
    const t = await engine.trigger('code-review', 'Write add(a, b) in JavaScript');
    // Stopped mid-thread: it stays `started` in the store.
    await engine.close();
    await runtime.close();

    const s = await serve({ dataDir: 'data' });
    try {
      expect(s.stdout()).toContain('axon serve: workflows: resumed 1 thread\n');
      let status = '';
      for (let i = 0; i < 500 && status !== 'completed'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        status = (
          (await (await fetch(`${s.url}/v1/threads/${t.thread_id}`)).json()) as { status: string }
        ).status;
      }
      expect(status).toBe('completed');
    } finally {
      await s.stop();
    }
  });
});
