import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serveCommand } from '../../src/cli/serve/serve-command.js';
import { axon, tableRows } from './run-fixtures.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'axon-findable-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** `axon serve` in this process on `dataDir`, once it listens; `stop` ends it. */
async function serve(dataDir: string): Promise<{
  readonly url: string;
  readonly stdout: () => string;
  stop(): Promise<number>;
}> {
  const stop = new AbortController();
  const out: string[] = [];
  const io = {
    stdout: { write: (t: string) => out.push(t) },
    stderr: { write: (t: string) => out.push(t) },
  };
  const exited = serveCommand(
    {
      flags: { port: '0', dataDir },
      env: {},
      cwd: dir,
      version: '0.0.0-test',
      signal: stop.signal,
    },
    io,
  );
  for (let i = 0; i < 400 && !/listening on/.test(out.join('')); i++) {
    await new Promise((r) => setTimeout(r, 25));
  }
  const url = /listening on (http:\/\/\S+)/.exec(out.join(''))?.[1];
  if (url === undefined) throw new Error(`axon serve did not listen:\n${out.join('')}`);
  return {
    url,
    stdout: () => out.join(''),
    stop: async () => {
      stop.abort('SIGTERM');
      return exited;
    },
  };
}

describe('axon run writes its run to the data dir', () => {
  it('runs list, trace and a later axon serve (API and UI) show the run axon run made', async () => {
    const data = join(dir, 'data');
    const ran = await axon(['run', 'help-desk', '--data-dir', data, '--token-ms', '0']);
    expect(ran.code).toBe(0);
    const runId = /kept in \S+: axon trace (run_\w+) --data-dir \S+/.exec(ran.stdout)?.[1];
    expect(runId, ran.stdout).toBeDefined();

    const listed = await axon(['runs', 'list', '--data-dir', data]);
    expect(listed.code).toBe(0);
    const rows = tableRows(listed.stdout);
    expect(rows[0]?.slice(0, 3)).toEqual(['RUN', 'ENTRY', 'STATUS']);
    expect(rows.slice(1).map((r) => [r[0], r[2]])).toEqual([[runId, 'completed']]);

    const traced = await axon(['trace', runId ?? '', '--data-dir', data, '--json']);
    expect(traced.code).toBe(0);
    const tree = JSON.parse(traced.stdout) as { run: { run_id: string }; steps: unknown[] };
    expect(tree.run.run_id).toBe(runId);
    expect(tree.steps.length).toBeGreaterThan(0);

    // AXON_DATA_DIR stands for --data-dir, as for runs list.
    const second = await axon(['run', 'trip-planner', '--token-ms', '0', '--no-trace'], {
      env: { AXON_DATA_DIR: data },
    });
    expect(second.code).toBe(0);
    expect((await axon(['runs', 'list', '--data-dir', data, '--json'])).stdout).toContain(
      '"entry"',
    );
    expect(
      (JSON.parse((await axon(['runs', 'list', '--data-dir', data, '--json'])).stdout) as unknown[])
        .length,
    ).toBe(2);

    const server = await serve(data);
    try {
      const run = await fetch(`${server.url}/v1/runs/${runId ?? ''}`);
      expect(run.status).toBe(200);
      expect(((await run.json()) as { run_id: string }).run_id).toBe(runId);
      expect(server.stdout()).toContain(`trace UI: ${server.url}/ui\n`);
      expect((await fetch(`${server.url}/ui`)).status).toBe(200);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});

describe('axon workflow trigger on the data dir of a running server', () => {
  it('refuses with exit 2 naming --url while the server runs; runs once it stopped', async () => {
    const data = join(dir, 'data');
    const server = await serve(data);
    let stopped = false;
    try {
      const refused = await axon(['workflow', 'trigger', 'code-review', '--data-dir', data]);
      expect(refused.code).toBe(2);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toBe(
        `axon workflow trigger: axon serve (pid ${process.pid}) is running on the data dir ${data}: trigger through it with --url ${server.url} (or stop it first)\n`,
      );
      // Nothing was written: the server's store has no thread.
      const threads = (await (await fetch(`${server.url}/v1/threads`)).json()) as unknown[];
      expect(threads).toEqual([]);
      // Through the server, as the message says, it works.
      const through = await axon([
        'workflow',
        'trigger',
        'code-review',
        '--url',
        server.url,
        '--wait',
        '--json',
      ]);
      expect(through.code).toBe(0);
      expect(await server.stop()).toBe(0);
      stopped = true;
      const here = await axon(['workflow', 'trigger', 'code-review', '--data-dir', data, '--json']);
      expect(here.stderr).toBe('');
      expect(here.code).toBe(0);
    } finally {
      if (!stopped) await server.stop();
    }
  });

  it('ignores the mark of a server that is gone (killed, its pid dead)', async () => {
    const data = join(dir, 'data');
    const first = await axon(['workflow', 'trigger', 'code-review', '--data-dir', data, '--json']);
    expect(first.code).toBe(0);
    // What a server killed with SIGKILL leaves: its mark, naming a pid no process has.
    writeFileSync(
      join(data, 'server.json'),
      JSON.stringify({ pid: 2 ** 22 + 1, url: 'http://127.0.0.1:1', started_at: '' }),
    );
    const again = await axon(['workflow', 'trigger', 'code-review', '--data-dir', data, '--json']);
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
  });
});
