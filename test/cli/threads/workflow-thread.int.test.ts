/**
 * `axon workflow` and `axon thread` on a data dir: `workflow trigger code-review` runs the
 * example in-process on a fresh data dir (the linter a real child process), and the other
 * commands read back what it stored — the tables, the JSON, the exit codes, and the progress
 * line only on a terminal.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/observability/logger.js';
import { createRuntime } from '../../../src/runtime/runtime.js';
import { sqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { WorkflowEngine } from '../../../src/workflows/workflow-engine.js';
import { defineWorkflow } from '../../../src/workflows/workflow-definition.js';
import { axon, tableRows } from '../run-fixtures.js';

/** `text` with its escape characters shown as `<ESC>`. */
const escaped = (text: string): string => text.replaceAll('\u001b', '<ESC>');

const ENV = { AXON_SCRIPTED_TOKEN_MS: '0' };
const ROLES = ['coder', 'linter', 'reviewer', 'coder', 'linter', 'reviewer'];

describe('on a fresh data dir', () => {
  let dir: string;
  let threadId: string;

  beforeAll(() => {
    dir = join(mkdtempSync(join(tmpdir(), `axon-cli-wf-${randomUUID().slice(0, 8)}-`)), 'data');
  });
  afterAll(() => {
    rmSync(join(dir, '..'), { recursive: true, force: true });
  });

  it('thread list before anything ran: exit 3, naming the missing data dir', async () => {
    const out = await axon(['thread', 'list', '--data-dir', dir], { env: ENV });
    expect(out.code).toBe(3);
    expect(out.stderr).toMatch(/^axon thread list: no data dir .*data \(give the --data-dir/);
  });

  it('workflow list needs no store: the example, its roles, max rounds and concurrency', async () => {
    const out = await axon(['workflow', 'list', '--data-dir', dir], { env: ENV });
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    expect(tableRows(out.stdout)).toEqual([
      ['WORKFLOW', 'ROLES', 'MAX ROUNDS', 'CONCURRENCY', 'RUNNING', 'QUEUED'],
      ['code-review', 'coder,linter,reviewer', '9', '4 (queue 100)', '0', '0'],
    ]);
  });

  it('workflow trigger code-review: runs it here with the default input, prints its turns, exit 0; no progress line off a terminal', async () => {
    const out = await axon(['workflow', 'trigger', 'code-review', '--data-dir', dir], {
      env: ENV,
    });
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    const lines = out.stdout.split('\n');
    const m = /^thread (run_[0-9a-f]+): code-review, completed \(end\), created .*, took \S+$/.exec(
      lines[0] ?? '',
    );
    expect(m).not.toBeNull();
    threadId = m?.[1] ?? '';
    expect(lines[1]).toBe('input: Write add(a, b) in JavaScript');
    const rows = tableRows(lines.slice(3).join('\n'));
    expect(rows[0]).toEqual(['TURN', 'ROLE', 'STATUS', 'DURATION', 'TOKENS', 'COST', 'TEXT']);
    expect(rows.slice(1, 7).map((r) => r.slice(0, 3))).toEqual(
      ROLES.map((role, i) => [String(i + 1), role, 'succeeded']),
    );
    // Each turn's text on one line, cut to 60 characters.
    expect(rows[2]?.[6]).toBe('checked 4 lines {"ok":false,"problems":["use const or let, …');
    expect(rows[6]?.[6]).toBe('{"approved":true,"comment":"Clean and simple. Approved."}');
    expect(rows[7]?.slice(0, 2)).toEqual(['total', 'completed']);
    expect(out.stdout).not.toContain('\u001b[');
  });

  it('on a terminal, stderr shows a progress line (turn, role, tokens) that is cleared at the end', async () => {
    const out = await axon(['workflow', 'trigger', 'code-review', '--data-dir', dir], {
      env: ENV,
      stderrTty: true,
    });
    expect(out.code).toBe(0);
    expect(out.stderr).toMatch(/^thread run_[0-9a-f]+ of code-review: (started|queued)\n/);
    expect(escaped(out.stderr)).toMatch(/\r<ESC>\[Kturn 1 coder … \d+ tokens?/);
    expect(escaped(out.stderr)).toMatch(/\r<ESC>\[Kturn 6 reviewer … \d+ tokens?/);
    expect(out.stderr.endsWith('\r\u001b[K')).toBe(true);
  });

  it('thread list: both threads, newest first; --json, --status and --workflow filter', async () => {
    const out = await axon(['thread', 'list', '--data-dir', dir]);
    expect(out.code).toBe(0);
    const rows = tableRows(out.stdout);
    expect(rows[0]).toEqual([
      'THREAD',
      'WORKFLOW',
      'STATUS',
      'TURNS',
      'CREATED',
      'DURATION',
      'TOKENS',
      'COST',
    ]);
    expect(rows).toHaveLength(3);
    expect(rows[2]?.slice(0, 4)).toEqual([threadId, 'code-review', 'completed', '6']);
    const json = JSON.parse(
      (await axon(['thread', 'list', '--data-dir', dir, '--json'])).stdout,
    ) as {
      thread_id: string;
      status: string;
    }[];
    expect(json.map((t) => t.status)).toEqual(['completed', 'completed']);
    expect(json[1]?.thread_id).toBe(threadId);
    const none = await axon(['thread', 'list', '--data-dir', dir, '--status', 'failed']);
    expect(none).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/^no threads with status failed in data dir /) as unknown,
    });
    const bad = await axon(['thread', 'list', '--data-dir', dir, '--status', 'done']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--status must be one or more of queued, started, completed');
  });

  it('workflow status: the workflow, its threads by status and the latest ones', async () => {
    const out = await axon(['workflow', 'status', 'code-review', '--data-dir', dir]);
    expect(out.code).toBe(0);
    expect(out.stdout).toContain(
      '  roles        coder (engine), linter (role), reviewer (engine)\n',
    );
    expect(out.stdout).toContain('  threads      2 completed\n');
    expect(out.stdout).toContain(threadId);
    const json = JSON.parse(
      (await axon(['workflow', 'status', 'code-review', '--data-dir', dir, '--json'])).stdout,
    ) as { threads_by_status: Record<string, number>; latest_threads: unknown[] };
    expect(json.threads_by_status).toMatchObject({ completed: 2, failed: 0 });
    expect(json.latest_threads).toHaveLength(2);
    const unknown = await axon(['workflow', 'status', 'nope', '--data-dir', dir]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(
      /^axon workflow status: no workflow "nope" in data dir .*\(there are: code-review\)\n$/,
    );
  });

  it('thread show, inspect and their --json; an unknown id is exit 1', async () => {
    const show = await axon(['thread', 'show', threadId, '--data-dir', dir]);
    expect(show.code).toBe(0);
    expect(show.stdout.split('\n')[0]).toMatch(
      new RegExp(`^thread ${threadId}: code-review, completed`),
    );
    const inspect = await axon(['thread', 'inspect', threadId, '--data-dir', dir]);
    expect(inspect.code).toBe(0);
    expect(inspect.stdout).toContain('turn 2: linter, succeeded');
    // The full raw text and the typed output.
    expect(inspect.stdout).toContain('    var total = 0;\n');
    expect(inspect.stdout).toContain('  output:\n    {\n      "ok": false,');
    const json = JSON.parse(
      (await axon(['thread', 'inspect', threadId, '--data-dir', dir, '--json'])).stdout,
    ) as { thread_id: string; turns: { role: string; raw: string }[] };
    expect(json.thread_id).toBe(threadId);
    expect(json.turns.map((t) => t.role)).toEqual(ROLES);
    expect(json).not.toHaveProperty('user_id');
    const none = await axon(['thread', 'show', 'run_nope', '--data-dir', dir]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^axon thread show: no thread "run_nope" in data dir /);
  });

  it('trace <thread_id>: a thread is a run, its turns the steps', async () => {
    const out = await axon(['trace', threadId, '--data-dir', dir]);
    expect(out.code).toBe(0);
    expect(out.stdout).toContain(`run ${threadId}: workflow:code-review, completed`);
    expect(out.stdout).toMatch(/^agent workflow\.code-review\.linter +succeeded/m);
  });

  it('thread kill of an ended thread: exit 1, saying so', async () => {
    const out = await axon(['thread', 'kill', threadId, '--data-dir', dir]);
    expect(out.code).toBe(1);
    expect(out.stderr).toBe(
      `axon thread kill: thread ${threadId} is completed: there is nothing to kill\n`,
    );
  });

  it('trigger an unknown workflow: exit 1, named as unknown with --input or without', async () => {
    const out = await axon(['workflow', 'trigger', 'nope', '--data-dir', dir, '--input', 'x']);
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/no workflow "nope"/);
    const noInput = await axon(['workflow', 'trigger', 'nope', '--data-dir', dir]);
    expect(noInput.code).toBe(1);
    expect(noInput.stderr).toMatch(/no workflow "nope"/);
  });
});

describe('with a config file', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), `axon-cli-wfc-${randomUUID().slice(0, 8)}-`));
  });
  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it("--config adds its workflows: to the example; a failing turn's thread is exit 1", async () => {
    const config = join(root, 'axon.yaml');
    writeFileSync(
      config,
      [
        'workflows:',
        '  pair:',
        '    max_rounds: 2',
        '    roles:',
        '      a: { engine: scripted, prompt: "You are a." }',
        '      broken: { engine: no-such-engine, prompt: "x" }',
        '    moderator:',
        '      order: [a, broken]',
      ].join('\n'),
    );
    const dir = join(root, 'data');
    const list = await axon(['workflow', 'list', '--data-dir', dir, '--config', config]);
    expect(tableRows(list.stdout).map((r) => r[0])).toEqual(['WORKFLOW', 'pair', 'code-review']);
    // A workflow with no default input needs --input: exit 2.
    const noInput = await axon([
      'workflow',
      'trigger',
      'pair',
      '--data-dir',
      dir,
      '--config',
      config,
    ]);
    expect(noInput.code).toBe(2);
    expect(noInput.stderr).toContain('--input is needed: workflow "pair" has no default input');
    const run = await axon(
      ['workflow', 'trigger', 'pair', '--input', 'hi', '--data-dir', dir, '--config', config],
      { env: ENV },
    );
    expect(run.code).toBe(1);
    expect(run.stdout.split('\n')[0]).toMatch(/^thread run_\w+: pair, failed \(turn_failed\)/);
    expect(run.stdout).toMatch(/^error: /m);
  });

  it('a bad workflows: key is exit 2, naming the key and its line', async () => {
    const config = join(root, 'bad.yaml');
    writeFileSync(
      config,
      [
        'workflows:',
        '  w:',
        '    roles:',
        '      a: { engine: scripted, prompt: p }',
        '    moderator:',
        '      order: [b]',
      ].join('\n'),
    );
    const out = await axon(['workflow', 'list', '--data-dir', root, '--config', config]);
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(
      /^axon workflow list: .*bad\.yaml line 6: workflows\.w\.moderator\.order\.0: no role "b"\n$/,
    );
  });
});

describe('thread kill on a data dir', () => {
  it('marks a thread that no process runs killed (a queued thread a stopped process left)', async () => {
    const dir = mkdtempSync(join(tmpdir(), `axon-cli-wfk-${randomUUID().slice(0, 8)}-`));
    try {
      // A process that queued a thread of code-review and stopped before it ran.
      const runtime = createRuntime({
        store: sqliteStore(join(dir, 'axon.db')),
        logger: createLogger({ level: 'silent' }),
      });
      const engine = new WorkflowEngine(runtime, [
        defineWorkflow({
          name: 'code-review',
          roles: { coder: { kind: 'engine', prompt: 'p' } },
          moderator: () => 'coder',
          concurrency: { max: 1, overflow: 'queue' },
        }),
      ]);
      const first = await engine.trigger('code-review', 'one');
      const queued = await engine.trigger('code-review', 'two');
      expect(queued.status).toBe('queued');
      await engine.kill(first.thread_id);
      await engine.close();
      await runtime.close();

      const out = await axon(['thread', 'kill', queued.thread_id, '--data-dir', dir]);
      expect(out.stderr).toBe('');
      expect(out.code).toBe(0);
      expect(out.stdout).toMatch(
        new RegExp(`^thread ${queued.thread_id}: code-review, killed \\(killed\\)`),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
