/**
 * Two processes on one data dir (issue 29): `axon serve` drives a thread while
 * `axon workflow trigger --data-dir` runs another thread on the same SQLite file. The thread
 * leases are in the file, so the second process leaves the server's live thread alone — it
 * does not mark it crashed nor drive it — and each thread ends where it started. Since issue
 * 33 the trigger first refuses a data dir whose server left its mark (`server.json`); the
 * leases are proven with the mark removed.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnAxon, type FleetProcess } from '../support/axon-process.js';
import { request } from '../support/server.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'axon-shared-dir-'));
const spawned: FleetProcess[] = [];
afterAll(async () => {
  for (const p of spawned) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  await Promise.all(spawned.map((p) => p.exited));
  rmSync(dir, { recursive: true, force: true });
});

/** `axon <args>` from source, to its exit: its code and output. */
function axonOnce(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, AXON_LOG_LEVEL: 'warn', ...env };
  delete childEnv['NODE_OPTIONS'];
  return new Promise((resolve) => {
    execFile(
      'node',
      ['--import', 'tsx', 'src/cli/main.ts', ...args],
      { cwd: ROOT, env: childEnv },
      (err, stdout, stderr) => {
        resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

/** The JSON body of a request to the API at `url`. */
async function json(url: string, method = 'GET', body?: unknown): Promise<unknown> {
  const { origin, pathname, search } = new URL(url);
  return (await request(origin, method, pathname + search, body)).body;
}

/** The statuses a thread's run went through (its `axon.thread` facts). */
async function statuses(url: string, threadId: string): Promise<string[]> {
  const facts = (await json(`${url}/v1/runs/${threadId}/facts?type=axon.thread`)) as {
    data: { status: string };
  }[];
  return facts.map((f) => f.data.status);
}

describe('a data dir shared by a server and a CLI trigger', () => {
  it("the trigger leaves the server's live thread alone: not crashed, not driven; both threads complete", async () => {
    const data = join(dir, 'data');
    const { match } = await spawnAxon(
      ['serve', '--port', '0', '--data-dir', data],
      // Slow tokens: the server's thread is still running while the trigger runs.
      { AXON_SCRIPTED_TOKEN_MS: '150' },
      /listening on (http:\/\/\S+) /,
      spawned,
    );
    const url = match[1] as string;
    const t = (await json(`${url}/v1/workflows/code-review/threads`, 'POST', {
      input: 'Write add(a, b) in JavaScript',
    })) as { thread_id: string };
    // Running: its first turn has begun.
    for (let i = 0; ; i++) {
      const now = (await json(`${url}/v1/threads/${t.thread_id}`)) as { turns: unknown[] };
      if (now.turns.length > 0) break;
      if (i > 200) throw new Error('the server never started its thread');
      await new Promise((r) => setTimeout(r, 25));
    }
    // The server's mark in the data dir sends the trigger through the server (issue 33)…
    const refused = await axonOnce(['workflow', 'trigger', 'code-review', '--data-dir', data], {
      AXON_SCRIPTED_TOKEN_MS: '0',
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `is running on the data dir ${data}: trigger through it with --url ${url}`,
    );
    // …and without the mark (deleted, or a server from before it) the thread leases still
    // keep the two processes apart.
    rmSync(join(data, 'server.json'));
    const cli = await axonOnce(['workflow', 'trigger', 'code-review', '--data-dir', data], {
      AXON_SCRIPTED_TOKEN_MS: '0',
    });
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    expect(cli.stdout).toMatch(/^thread run_[0-9a-f]+: code-review, completed/);
    expect(cli.stdout).not.toContain(t.thread_id);
    // The server's thread was neither marked crashed nor taken over.
    expect(await statuses(url, t.thread_id)).toEqual(['queued', 'started']);
    for (let i = 0; ; i++) {
      const now = (await json(`${url}/v1/threads/${t.thread_id}`)) as { status: string };
      if (now.status !== 'started') {
        expect(now.status).toBe('completed');
        break;
      }
      if (i > 1200) throw new Error('the server never ended its thread');
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await statuses(url, t.thread_id)).toEqual(['queued', 'started', 'completed']);
  });
});
