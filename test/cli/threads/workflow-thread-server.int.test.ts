/**
 * `axon workflow` and `axon thread` against a real server (`--url`) with a WorkflowEngine:
 * the same tables as from its data dir, `trigger --wait` following the thread's stream to
 * its end (exit 0 completed, 1 failed or killed), `thread kill` of a running thread and of
 * an ended one (409: exit 1), and exit 3 when the server does not answer.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeReview } from '../../../examples/code-review/index.js';
import { createScriptedEngine } from '../../../src/engines/scripted-engine.js';
import { createLogger } from '../../../src/observability/logger.js';
import { createRuntime } from '../../../src/runtime/runtime.js';
import { createServer, type AxonServer } from '../../../src/server/create-server.js';
import { sqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { defineWorkflow, END } from '../../../src/workflows/workflow-definition.js';
import { WorkflowEngine } from '../../../src/workflows/workflow-engine.js';
import { startRelay } from '../../support/tcp-relay.js';
import { axon, tableRows } from '../run-fixtures.js';

/** `text` with its escape characters shown as `<ESC>`. */
const escaped = (text: string): string => text.replaceAll('\u001b', '<ESC>');

describe('against a server with workflows', () => {
  let dir: string;
  let server: AxonServer;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `axon-cli-wfs-${randomUUID().slice(0, 8)}-`));
    const example = codeReview({ tokenDelayMs: 0 });
    // `slow`'s model takes a minute per token: a thread to kill while it runs.
    const slowEngine = createScriptedEngine({
      name: 'slow-model',
      tokenDelayMs: 60_000,
      script: () => 'one two three',
    });
    const runtime = createRuntime({
      store: sqliteStore(join(dir, 'axon.db')),
      engines: [...example.engines, slowEngine],
      logger: createLogger({ level: 'silent' }),
    });
    const engine = new WorkflowEngine(runtime, [
      example.workflow,
      defineWorkflow({
        name: 'broken',
        roles: { a: { kind: 'engine', engine: 'no-such-engine', prompt: 'p' } },
        moderator: (t) => (t.turns.length === 0 ? 'a' : END),
      }),
      defineWorkflow({
        name: 'slow',
        roles: { waiter: { kind: 'engine', engine: 'slow-model', prompt: 'p' } },
        moderator: (t) => (t.turns.length === 0 ? 'waiter' : END),
      }),
    ]);
    server = await createServer(runtime, { port: 0, version: '0.0.0-test', workflows: engine });
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('workflow list --url: the server’s workflows', async () => {
    const out = await axon(['workflow', 'list', '--url', server.url]);
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    expect(tableRows(out.stdout).map((r) => r.slice(0, 3))).toEqual([
      ['WORKFLOW', 'ROLES', 'MAX ROUNDS'],
      ['code-review', 'coder,linter,reviewer', '9'],
      ['broken', 'a', '20'],
      ['slow', 'waiter', '20'],
    ]);
  });

  it('workflow trigger --url without --wait: prints the thread and how to follow it, exit 0', async () => {
    const out = await axon(['workflow', 'trigger', 'code-review', '--url', server.url]);
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(
      new RegExp(
        `^thread run_\\w+ of code-review: (started|queued)\\nfollow it: axon thread show run_\\w+ --url ${server.url}\\n$`,
      ),
    );
  });

  it('workflow trigger --wait --url: a stream that drops mid-thread is opened again after its last frame', async () => {
    // Cut the first thread stream after a few frames (well before the thread's end).
    const relay = await startRelay(new URL(server.url), {
      cutFirstStreamAfterBytes: 1_500,
      streamPath: /^GET \/v1\/threads\/[^/]+\/stream/,
    });
    try {
      const out = await axon([
        'workflow',
        'trigger',
        'code-review',
        '--wait',
        '--json',
        '--url',
        relay.url,
      ]);
      expect(out.stderr).toBe('');
      expect(out.code).toBe(0);
      const t = JSON.parse(out.stdout) as { status: string; turns: unknown[] };
      expect(t.status).toBe('completed');
      expect(t.turns).toHaveLength(6);
      // Two stream requests: the first cut, the second resumed after the last frame read.
      expect(relay.streamRequests).toHaveLength(2);
      expect(relay.streamRequests[0]).toBeNull();
      expect(relay.streamRequests[1]).toMatch(/^\d+\.\d+$/);
    } finally {
      await relay.close();
    }
  });

  it('workflow trigger --wait --url: follows the stream to the end, progress on a terminal, exit 0', async () => {
    const out = await axon(['workflow', 'trigger', 'code-review', '--wait', '--url', server.url], {
      stderrTty: true,
    });
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/^thread run_\w+: code-review, completed \(end\)/);
    expect(escaped(out.stderr)).toMatch(/\r<ESC>\[Kturn 3 reviewer … \d+ tokens?/);
    const json = await axon([
      'workflow',
      'trigger',
      'code-review',
      '--wait',
      '--json',
      '--url',
      server.url,
    ]);
    expect(json.code).toBe(0);
    expect(json.stderr).toBe('');
    const t = JSON.parse(json.stdout) as { status: string; turns: unknown[] };
    expect(t.status).toBe('completed');
    expect(t.turns).toHaveLength(6);
  });

  it('a thread that fails is exit 1; thread list --url shows it as the data dir does', async () => {
    const out = await axon([
      'workflow',
      'trigger',
      'broken',
      '--input',
      'x',
      '--wait',
      '--url',
      server.url,
    ]);
    expect(out.code).toBe(1);
    expect(out.stdout).toMatch(/^thread run_\w+: broken, failed \(turn_failed\)/);
    const list = await axon(['thread', 'list', '--url', server.url, '--workflow', 'broken']);
    expect(
      tableRows(list.stdout)
        .slice(1)
        .map((r) => r.slice(1, 3)),
    ).toEqual([['broken', 'failed']]);
    const disk = await axon(['thread', 'list', '--data-dir', dir, '--workflow', 'broken']);
    expect(disk.stdout).toBe(list.stdout);
  });

  it('thread kill --url: a running thread ends killed (exit 0); again, exit 1 (409)', async () => {
    const started = await axon([
      'workflow',
      'trigger',
      'slow',
      '--input',
      'x',
      '--json',
      '--url',
      server.url,
    ]);
    const id = (JSON.parse(started.stdout) as { thread_id: string }).thread_id;
    const kill = await axon(['thread', 'kill', id, '--url', server.url]);
    expect(kill.stderr).toBe('');
    expect(kill.code).toBe(0);
    expect(kill.stdout).toMatch(new RegExp(`^thread ${id}: slow, killed \\(killed\\)`));
    const again = await axon(['thread', 'kill', id, '--url', server.url]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(
      `axon thread kill: thread ${id} is killed: there is nothing to kill\n`,
    );
    const show = await axon(['thread', 'show', 'run_nope', '--url', server.url]);
    expect(show.code).toBe(1);
    expect(show.stderr).toContain('no thread "run_nope"');
  });

  it('a server that does not answer is exit 3', async () => {
    const out = await axon(['workflow', 'list', '--url', 'http://127.0.0.1:9']);
    expect(out.code).toBe(3);
    expect(out.stderr).toMatch(
      /^axon workflow list: cannot reach the server at http:\/\/127\.0\.0\.1:9: /,
    );
  });
});
