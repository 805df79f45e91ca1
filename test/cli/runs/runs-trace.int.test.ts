/**
 * `axon runs list` and `axon trace` against a real `axon serve` (`--url`): the same rows and
 * tree as from its data dir, the API key sent as `Authorization: Bearer`, and the exit codes
 * of a server that refuses, does not answer, or is not axon at all.
 */
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type AxonServer } from '../../../src/server/create-server.js';
import { axon, createDataDir, invokeRun, tableRows, type DataDir } from '../run-fixtures.js';

/** A server over a fresh data dir with three runs: lead, broken, lead. */
async function serve(options: Parameters<typeof createServer>[1] = {}): Promise<{
  readonly data: DataDir;
  readonly server: AxonServer;
  readonly ids: { first: string; broken: string; last: string };
}> {
  const data = createDataDir();
  const ids = {
    first: await invokeRun(data, 'lead', 'go'),
    broken: await invokeRun(data, 'broken', 'now'),
    last: await invokeRun(data, 'lead', 'again'),
  };
  const server = await createServer(data.runtime, { port: 0, version: '0.0.0-test', ...options });
  return { data, server, ids };
}

/** Stops the server (which closes the runtime and its store), then removes the data dir. */
async function stop(s: { data: DataDir; server: AxonServer } | undefined): Promise<void> {
  await s?.server.close();
  await s?.data.dispose();
}

describe('against a server without keys', () => {
  let s: Awaited<ReturnType<typeof serve>>;
  beforeAll(async () => {
    s = await serve();
  });
  afterAll(() => stop(s));

  it('runs list --url: the runs the data dir holds, newest first, the same rows and JSON', async () => {
    const fromServer = await axon(['runs', 'list', '--url', s.server.url]);
    expect(fromServer.stderr).toBe('');
    expect(fromServer.code).toBe(0);
    const rows = tableRows(fromServer.stdout);
    expect(rows[0]).toEqual(['RUN', 'ENTRY', 'STATUS', 'CREATED', 'DURATION', 'TOKENS', 'COST']);
    expect(rows.slice(1).map((r) => r.slice(0, 3))).toEqual([
      [s.ids.last, 'lead', 'completed'],
      [s.ids.broken, 'broken', 'failed · 1 failed step'],
      [s.ids.first, 'lead', 'completed'],
    ]);
    expect(fromServer.stdout).toBe((await axon(['runs', 'list', '--data-dir', s.data.dir])).stdout);

    const json = await axon(['runs', 'list', '--url', s.server.url, '--json']);
    const disk = await axon(['runs', 'list', '--data-dir', s.data.dir, '--json']);
    expect(JSON.parse(json.stdout)).toEqual(JSON.parse(disk.stdout));
  });

  it.each([
    [['--status', 'failed'], ['broken']],
    [
      ['--status', 'completed,failed', '--limit', '2'],
      ['last', 'broken'],
    ],
    [['--limit', '1'], ['last']],
  ] as const)('runs list --url %j: the server filters and limits', async (flags, which) => {
    const { code, stdout } = await axon(['runs', 'list', '--url', s.server.url, ...flags]);
    expect(code).toBe(0);
    expect(
      tableRows(stdout)
        .slice(1)
        .map((r) => r[0]),
    ).toEqual(which.map((w) => s.ids[w]));
  });

  it('trace --url: the same tree, figures and totals as from the data dir', async () => {
    const json = await axon(['trace', s.ids.first, '--url', `${s.server.url}/`, '--json']);
    expect(json.stderr).toBe('');
    expect(json.code).toBe(0);
    const disk = await axon(['trace', s.ids.first, '--data-dir', s.data.dir, '--json']);
    expect(JSON.parse(json.stdout)).toEqual(JSON.parse(disk.stdout));

    const text = await axon(['trace', s.ids.first, '--url', s.server.url]);
    expect(text.code).toBe(0);
    const lines = text.stdout.split('\n');
    const width = lines[2]?.indexOf('STATUS') ?? 0;
    expect(lines.slice(3, 7).map((l) => l.slice(0, width).trimEnd())).toEqual([
      'agent lead',
      '+-- agent helper',
      '    +-- tool lookup',
      'total: 3 steps',
    ]);
    expect(text.stdout).toBe((await axon(['trace', s.ids.first, '--data-dir', s.data.dir])).stdout);
  });

  it('trace --url of an unknown run: one line naming it, exit 1', async () => {
    expect(await axon(['trace', 'run_nope', '--url', s.server.url])).toEqual({
      code: 1,
      stdout: '',
      stderr: `axon trace: no run "run_nope" at ${s.server.url} (or not one this key may see)\n`,
    });
  });
});

describe('against a server with API keys', () => {
  const KEY = 'ops-key-0123456789abcdef';
  let s: Awaited<ReturnType<typeof serve>>;
  beforeAll(async () => {
    s = await serve({ keys: [{ key: KEY, user_id: 'ops', permissions: ['read', 'admin'] }] });
  });
  afterAll(() => stop(s));

  it('without a key: the server refuses, exit 1, saying how to give one', async () => {
    const { code, stdout, stderr } = await axon(['runs', 'list', '--url', s.server.url]);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      'axon runs list: the server refused GET /v1/runs: 401 UNAUTHORIZED: a Bearer key is required (give --api-key or set AXON_API_KEY)\n',
    );
  });

  it('with a wrong key: exit 1', async () => {
    const { code, stderr } = await axon([
      'trace',
      s.ids.first,
      '--url',
      s.server.url,
      '--api-key',
      'not-the-key-0123456789',
    ]);
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /^axon trace: the server refused GET \/v1\/runs\/\S+: 401 UNAUTHORIZED: /,
    );
  });

  it('sends --api-key, else AXON_API_KEY, as Authorization: Bearer', async () => {
    const flag = await axon(['runs', 'list', '--url', s.server.url, '--api-key', KEY]);
    expect(flag.code).toBe(0);
    expect(tableRows(flag.stdout)).toHaveLength(4);
    const env = await axon(['trace', s.ids.last, '--url', s.server.url, '--json'], {
      env: { AXON_API_KEY: KEY },
    });
    expect(env.code).toBe(0);
    expect((JSON.parse(env.stdout) as { totals: { steps: number } }).totals.steps).toBe(3);
    // The flag wins over the variable.
    const both = await axon(
      ['runs', 'list', '--url', s.server.url, '--api-key', 'wrong-key-0123456789'],
      {
        env: { AXON_API_KEY: KEY },
      },
    );
    expect(both.code).toBe(1);
  });
});

describe('when the server cannot be used: exit 3', () => {
  /** A port nothing listens on: taken, then let go. */
  async function closedPort(): Promise<number> {
    const server = createHttpServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => {
      server.close(() => {
        resolve();
      });
    });
    return port;
  }

  /** An HTTP server that is not axon: it answers every request with `status` and `body`. */
  async function notAxon(status: number, body: string): Promise<{ url: string; server: Server }> {
    const server = createHttpServer((_req, res) => {
      res.writeHead(status, { 'content-type': 'text/html' }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    return { url: `http://127.0.0.1:${port}`, server };
  }

  it('nothing listens at --url', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    for (const argv of [
      ['runs', 'list', '--url', url],
      ['trace', 'run_1', '--url', url],
    ]) {
      const { code, stdout, stderr } = await axon(argv);
      expect(code).toBe(3);
      expect(stdout).toBe('');
      expect(stderr).toMatch(
        new RegExp(
          `^axon (runs list|trace): cannot reach the server at ${url}: .*ECONNREFUSED.*\\n$`,
        ),
      );
    }
  });

  it.each([
    [404, '<html>Not Found</html>', /could not answer GET \/v1\/runs: 404 Not Found/],
    [200, '<html>hello</html>', /answered GET \/v1\/runs with no JSON: is it axon serve\?/],
    [503, 'down for maintenance', /could not answer GET \/v1\/runs: 503 Service Unavailable/],
  ])('the server at --url is not axon (or not up): %i', async (status, body, message) => {
    const other = await notAxon(status, body);
    try {
      const { code, stdout, stderr } = await axon(['runs', 'list', '--url', other.url]);
      expect(code).toBe(3);
      expect(stdout).toBe('');
      expect(stderr).toMatch(message);
    } finally {
      await new Promise<void>((resolve) => {
        other.server.close(() => {
          resolve();
        });
      });
    }
  });
});
