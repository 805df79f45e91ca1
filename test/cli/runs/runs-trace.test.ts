/**
 * `axon runs list` and `axon trace` on a data dir: the SQLite store a real runtime wrote
 * (`run-fixtures.ts`), read as a user reads it — the table's rows, the tree's shape and
 * figures, the JSON, the exit codes, and colour only on a terminal without NO_COLOR.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { formatDuration, formatRunStatus } from '../../../src/cli/human-format.js';
import { stripStyle } from '../../../src/cli/terminal-style.js';
import type { RunRecord, StepRecord } from '../../../src/store/records.js';
import { axon, createDataDir, invokeRun, tableRows, type DataDir } from '../run-fixtures.js';

const usd = (n: number): string => (n === 0 ? '$0' : `$${n.toFixed(4)}`);
const tokens = (r: RunRecord | StepRecord): number =>
  r.budget_usage.tokens_in + r.budget_usage.tokens_out;
/** How the tables show the time from `from` to `to` (formatDuration has its own tests). */
const ms = (from: string, to: string | null): string =>
  formatDuration(Date.parse(to ?? '') - Date.parse(from));

describe('on a data dir a runtime wrote: three runs, one of them failed', () => {
  let data: DataDir;
  /** The runs, oldest first. */
  let ids: { first: string; broken: string; last: string };

  beforeAll(async () => {
    data = createDataDir();
    ids = {
      first: await invokeRun(data, 'lead', 'go'),
      broken: await invokeRun(data, 'broken', 'now'),
      last: await invokeRun(data, 'lead', 'again'),
    };
  });
  afterAll(() => data.dispose());

  it('runs list: a table of the runs, newest first, with their entry, status, times, tokens and cost', async () => {
    const { code, stdout, stderr } = await axon(['runs', 'list', '--data-dir', data.dir]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const [header, ...rows] = tableRows(stdout);
    expect(header).toEqual(['RUN', 'ENTRY', 'STATUS', 'CREATED', 'DURATION', 'TOKENS', 'COST']);
    const expected = await Promise.all(
      [ids.last, ids.broken, ids.first].map(async (id) => {
        const run = await data.run(id);
        const failed = (await data.steps(id)).filter((st) => st.status === 'failed').length;
        return [
          id,
          run.entry,
          formatRunStatus(run.status, failed),
          `${run.created_at.slice(0, 10)} ${run.created_at.slice(11, 19)}Z`,
          ms(run.created_at, run.ended_at),
          String(tokens(run)),
          usd(run.budget_usage.cost_usd),
        ];
      }),
    );
    expect(rows).toEqual(expected);
    expect(rows.map((r) => r.slice(1, 3))).toEqual([
      ['lead', 'completed'],
      ['broken', 'failed · 1 failed step'],
      ['lead', 'completed'],
    ]);
    // The priced engine answered: lead's run cost something; broken's nothing.
    expect(rows[0]?.[6]).toMatch(/^\$0\.0\d{3}$/);
    expect(rows[1]?.[6]).toBe('$0');
    // Aligned: every row's STATUS starts in the header's column.
    const lines = stdout.split('\n').filter((l) => l !== '');
    const at = lines[0]?.indexOf('STATUS') ?? -1;
    for (const line of lines.slice(1)) expect(line.slice(at)).toMatch(/^(completed|failed) /);
    expect(stdout).not.toContain('\u001b[');
  });

  it.each([
    [['--status', 'failed'], ['broken']],
    [
      ['--status', 'completed'],
      ['last', 'first'],
    ],
    [
      ['--status', 'failed,completed'],
      ['last', 'broken', 'first'],
    ],
    [['--limit', '1'], ['last']],
    [
      ['--limit', '2', '--status', 'completed'],
      ['last', 'first'],
    ],
  ] as const)('runs list %j keeps the runs asked for, newest first', async (flags, which) => {
    const { code, stdout } = await axon(['runs', 'list', '--data-dir', data.dir, ...flags]);
    expect(code).toBe(0);
    expect(
      tableRows(stdout)
        .slice(1)
        .map((r) => r[0]),
    ).toEqual(which.map((w) => ids[w]));
  });

  it('runs list --json: one JSON array on stdout, the raw figures', async () => {
    const { code, stdout, stderr } = await axon(['runs', 'list', '--data-dir', data.dir, '--json']);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    const runs = JSON.parse(stdout) as Record<string, unknown>[];
    expect(runs.map((r) => r['run_id'])).toEqual([ids.last, ids.broken, ids.first]);
    const first = await data.run(ids.first);
    expect(runs[2]).toEqual({
      run_id: ids.first,
      entry: 'lead',
      flow_id: null,
      status: 'completed',
      failed_steps: 0,
      mode: 'record',
      created_at: first.created_at,
      ended_at: first.ended_at,
      duration_ms: Date.parse(first.ended_at ?? '') - Date.parse(first.created_at),
      tokens_in: first.budget_usage.tokens_in,
      tokens_out: first.budget_usage.tokens_out,
      cost_usd: first.budget_usage.cost_usd,
    });
  });

  it('runs list says so when no run matches; --json prints []', async () => {
    const text = await axon(['runs', 'list', '--data-dir', data.dir, '--status', 'cancelled']);
    expect(text).toEqual({
      code: 0,
      stdout: `no runs with status cancelled in data dir ${data.dir}\n`,
      stderr: '',
    });
    const json = await axon([
      'runs',
      'list',
      '--data-dir',
      data.dir,
      '--status',
      'waiting',
      '--json',
    ]);
    expect(json).toEqual({ code: 0, stdout: '[]\n', stderr: '' });
  });

  it("trace: the run's line, then its steps as a tree — agent lead > agent helper > tool lookup — and the totals", async () => {
    const { code, stdout, stderr } = await axon(['trace', ids.first, '--data-dir', data.dir]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const run = await data.run(ids.first);
    const [lead, helper, lookup] = await data.steps(ids.first);
    if (!lead || !helper || !lookup) throw new Error('three steps expected');
    const lines = stdout.split('\n');
    expect(lines[0]).toBe(
      `run ${ids.first}: lead, completed, created ${run.created_at.slice(0, 10)} ${run.created_at.slice(11, 19)}Z, took ${ms(run.created_at, run.ended_at)}`,
    );
    expect(lines[1]).toBe('');
    // The tree drawn as seed 000 draws it, in the first column.
    const width = lines[2]?.indexOf('STATUS') ?? 0;
    expect(lines.slice(3, 7).map((l) => l.slice(0, width).trimEnd())).toEqual([
      'agent lead',
      '+-- agent helper',
      '    +-- tool lookup',
      'total: 3 steps',
    ]);
    const row = (s: StepRecord): string[] => [
      s.status,
      ms(s.started_at ?? s.created_at, s.ended_at),
      String(s.budget_usage.tokens_in),
      String(s.budget_usage.tokens_out),
      usd(s.budget_usage.cost_usd),
    ];
    const rows = tableRows(lines.slice(2).join('\n'));
    expect(rows[0]).toEqual(['STEP', 'STATUS', 'DURATION', 'TOKENS IN', 'TOKENS OUT', 'COST']);
    expect(rows.slice(1, 4)).toEqual([
      ['agent lead', ...row(lead)],
      ['+-- agent helper', ...row(helper)],
      ['+-- tool lookup', ...row(lookup)],
    ]);
    // A delegation's use is the delegator's too: the total adds the top step only.
    expect(tokens(lead)).toBeGreaterThan(tokens(helper));
    expect(helper.budget_usage.cost_usd).toBeGreaterThan(0);
    const end = Math.max(...[lead, helper, lookup].map((s) => Date.parse(s.ended_at ?? '')));
    expect(rows[4]).toEqual([
      'total: 3 steps',
      'completed',
      formatDuration(end - Date.parse(lead.started_at ?? '')),
      String(run.budget_usage.tokens_in),
      String(run.budget_usage.tokens_out),
      usd(run.budget_usage.cost_usd),
    ]);
    expect(run.budget_usage.tokens_in).toBe(lead.budget_usage.tokens_in);
  });

  it('trace of a failed run: its status, and an ERROR column with the code and message', async () => {
    const { code, stdout } = await axon(['trace', ids.broken, '--data-dir', data.dir]);
    expect(code).toBe(0);
    expect(stdout.split('\n')[0]).toMatch(/^run \S+: broken, failed · 1 failed step, created /);
    const rows = tableRows(stdout.split('\n').slice(2).join('\n'));
    expect(rows[0]?.at(-1)).toBe('ERROR');
    expect(rows[1]?.[0]).toBe('agent broken');
    expect(rows[1]?.[1]).toBe('failed');
    expect(rows[1]?.at(-1)).toMatch(/^[A-Z_]+: the disk is on fire$/);
    expect(rows[2]?.slice(0, 2)).toEqual(['total: 1 step', 'failed']);
  });

  it('trace --json: the run, the nested tree and the totals in one document', async () => {
    const { code, stdout } = await axon(['trace', ids.last, '--data-dir', data.dir, '--json']);
    expect(code).toBe(0);
    const doc = JSON.parse(stdout) as {
      run: { run_id: string; status: string };
      steps: { name: string; type: string; children: { name: string; children: unknown[] }[] }[];
      totals: Record<string, number>;
    };
    const run = await data.run(ids.last);
    expect(doc.run).toMatchObject({
      run_id: ids.last,
      status: 'completed',
      entry: 'lead',
      failed_steps: 0,
    });
    const shape = (n: { type: string; name: string; children: unknown[] }): unknown => [
      `${n.type} ${n.name}`,
      (n.children as (typeof n)[]).map(shape),
    ];
    expect(doc.steps.map((s) => shape(s as never))).toEqual([
      ['agent lead', [['agent helper', [['tool_call lookup', []]]]]],
    ]);
    expect(doc.totals).toMatchObject({
      steps: 3,
      tokens_in: run.budget_usage.tokens_in,
      tokens_out: run.budget_usage.tokens_out,
      cost_usd: run.budget_usage.cost_usd,
    });
  });

  it('an unknown run id: one line naming it, exit 1, nothing on stdout', async () => {
    expect(await axon(['trace', 'run_nope', '--data-dir', data.dir])).toEqual({
      code: 1,
      stdout: '',
      stderr: `axon trace: no run "run_nope" in data dir ${data.dir}\n`,
    });
  });

  it('reads the data dir from AXON_DATA_DIR when no --data-dir is given', async () => {
    const { code, stdout } = await axon(['runs', 'list', '--limit', '1'], {
      env: { AXON_DATA_DIR: data.dir },
    });
    expect(code).toBe(0);
    expect(tableRows(stdout)[1]?.[0]).toBe(ids.last);
  });

  describe('colour', () => {
    const ESC = '\u001b[';

    it('on a terminal: the header bold, statuses green and red; the text the same without the codes', async () => {
      const plain = await axon(['runs', 'list', '--data-dir', data.dir]);
      const tty = await axon(['runs', 'list', '--data-dir', data.dir], { tty: true });
      expect(tty.code).toBe(0);
      expect(tty.stdout).toContain(`${ESC}1mRUN`);
      expect(tty.stdout).toContain(`${ESC}32mcompleted${ESC}39m`);
      expect(tty.stdout).toContain(`${ESC}31mfailed · 1 failed step${ESC}39m`);
      expect(stripStyle(tty.stdout)).toBe(plain.stdout);
      const trace = await axon(['trace', ids.broken, '--data-dir', data.dir], { tty: true });
      const code = /([A-Z_]+): the disk is on fire/.exec(stripStyle(trace.stdout))?.[1] ?? '';
      expect(trace.stdout).toContain(`${ESC}31m${code}: the disk is on fire${ESC}39m`);
    });

    it.each([
      ['NO_COLOR set', { tty: true, env: { NO_COLOR: '1' } }],
      ['TERM=dumb', { tty: true, env: { TERM: 'dumb' } }],
      ['not a terminal', { tty: false, env: {} }],
    ])('none with %s', async (_why, options) => {
      const list = await axon(['runs', 'list', '--data-dir', data.dir], options);
      const trace = await axon(['trace', ids.first, '--data-dir', data.dir], options);
      expect(list.stdout).toContain('completed');
      expect(list.stdout).not.toContain(ESC);
      expect(trace.stdout).not.toContain(ESC);
    });

    it('an empty NO_COLOR does not turn colour off (no-color.org)', async () => {
      const { stdout } = await axon(['runs', 'list', '--data-dir', data.dir], {
        tty: true,
        env: { NO_COLOR: '' },
      });
      expect(stdout).toContain(ESC);
    });

    it('--json has no colour, even on a terminal', async () => {
      const { stdout } = await axon(['trace', ids.first, '--data-dir', data.dir, '--json'], {
        tty: true,
      });
      expect(stdout).not.toContain(ESC);
      expect(() => JSON.parse(stdout) as unknown).not.toThrow();
    });
  });
});

describe('a run still going', () => {
  let data: DataDir | undefined;
  afterEach(async () => {
    await data?.dispose();
  });

  it('is listed running with no duration yet, its step running in the trace, while the runtime writes the store', async () => {
    data = createDataDir();
    const going = data.runtime.invoke('waiter', 'wait');
    let runId: string | undefined;
    for (let i = 0; i < 100 && runId === undefined; i++) {
      await new Promise((r) => setTimeout(r, 10));
      runId = (await data.runtime.store.listRuns({ status: ['running'] }))[0]?.run_id;
    }
    if (runId === undefined) throw new Error('the run did not start');
    const list = await axon(['runs', 'list', '--data-dir', data.dir]);
    expect(tableRows(list.stdout)[1]).toEqual([
      runId,
      'waiter',
      'running',
      expect.stringMatching(/Z$/) as unknown,
      '-',
      '0',
      '$0',
    ]);
    const trace = await axon(['trace', runId, '--data-dir', data.dir]);
    expect(trace.stdout.split('\n')[0]).toMatch(
      /^run \S+: waiter, running, created [\d-]+ [\d:]+Z$/,
    );
    expect(tableRows(trace.stdout.split('\n').slice(2).join('\n')).slice(1)).toEqual([
      ['agent waiter', 'running', '-', '0', '0', '$0'],
      ['total: 1 step', 'running', '-', '0', '0', '$0'],
    ]);
    data.release();
    await going;
    const done = await axon(['runs', 'list', '--data-dir', data.dir, '--json']);
    expect((JSON.parse(done.stdout) as { status: string }[])[0]?.status).toBe('completed');
  });
});

describe('exit codes', () => {
  let data: DataDir | undefined;
  afterEach(async () => {
    await data?.dispose();
    data = undefined;
  });

  it('3 when the data dir is missing, and nothing is created', async () => {
    data = createDataDir();
    const missing = join(data.dir, 'nothing-here');
    for (const argv of [
      ['runs', 'list', '--data-dir', missing],
      ['trace', 'run_1', '--data-dir', missing],
    ]) {
      const { code, stdout, stderr } = await axon(argv);
      expect(code).toBe(3);
      expect(stdout).toBe('');
      expect(stderr).toBe(
        `axon ${argv[0] === 'runs' ? 'runs list' : 'trace'}: no data dir ${missing} (give the --data-dir axon serve uses, or --url of a server)\n`,
      );
    }
    expect(existsSync(missing)).toBe(false);
  });

  it('3 when the data dir holds no axon.db, and none is made', async () => {
    data = createDataDir();
    const empty = join(data.dir, 'empty');
    mkdirSync(empty);
    const { code, stderr } = await axon(['runs', 'list', '--data-dir', empty]);
    expect(code).toBe(3);
    expect(stderr).toBe(
      `axon runs list: ${empty} holds no axon.db: axon serve has not used it as its data dir\n`,
    );
    expect(existsSync(join(empty, 'axon.db'))).toBe(false);
  });

  it('3 when axon.db is not a database, left as it was', async () => {
    data = createDataDir();
    const bad = join(data.dir, 'bad');
    mkdirSync(bad);
    writeFileSync(join(bad, 'axon.db'), 'not a database');
    const { code, stdout, stderr } = await axon(['trace', 'run_1', '--data-dir', bad]);
    expect(code).toBe(3);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^axon trace: cannot open \S*axon\.db: file is not a database\n$/);
    expect(readFileSync(join(bad, 'axon.db'), 'utf8')).toBe('not a database');
  });

  // The data dir does not exist: the usage error comes first.
  const nowhere = ['--data-dir', '/nonexistent/axon'];
  it.each([
    [['--limit', '0'], '--limit must be an integer from 1 to 500, got "0"'],
    [['--limit', '501'], '--limit must be an integer from 1 to 500, got "501"'],
    [['--limit', 'ten'], '--limit must be an integer from 1 to 500, got "ten"'],
    [['--limit=-1'], '--limit must be an integer from 1 to 500, got "-1"'],
    [['--limit', '1.5'], '--limit must be an integer from 1 to 500, got "1.5"'],
    [
      ['--status', 'done'],
      '--status must be one or more of running, waiting, cancelling, cancelled, completed, failed (comma-separated), got "done"',
    ],
    [['--api-key', 'k'], '--api-key goes with --url (a data dir needs no key)'],
  ])('2 for a bad value, before any source is opened: %j', async (flags, message) => {
    const { code, stdout, stderr } = await axon(['runs', 'list', ...nowhere, ...flags]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe(`axon runs list: ${message}\n`);
  });

  it('2 for a --url that is not http(s)', async () => {
    const { code, stdout, stderr } = await axon(['trace', 'run_1', '--url', 'ftp://example.com']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      'axon trace: --url must be an http:// or https:// URL, got "ftp://example.com"\n',
    );
  });

  it('2 for an option of runs list given to trace, naming whose it is', async () => {
    const { code, stdout, stderr } = await axon(['trace', 'run_1', '--limit', '3', ...nowhere]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.split('\n')[0]).toBe(
      'axon trace: --limit applies to runs list, thread list and agents list only',
    );
    expect(stderr).toContain('Usage: axon trace [options] <run_id>');
  });

  it('2 for --url with --data-dir, the command line and its help on stderr', async () => {
    const { code, stdout, stderr } = await axon([
      'runs',
      'list',
      '--url',
      'http://127.0.0.1:7070',
      '--data-dir',
      '.axon',
    ]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.split('\n')[0]).toBe(
      "axon runs list: option '--url <base>' cannot be used with option '--data-dir <dir>'",
    );
    expect(stderr).toContain('Usage: axon runs list [options]');
  });

  it('2 for trace without a run id', async () => {
    const { code, stderr } = await axon(['trace']);
    expect(code).toBe(2);
    expect(stderr.split('\n')[0]).toBe("axon trace: missing required argument 'run_id'");
  });

  it('every new command has --help, on stdout with exit 0, listing its exit codes in axon --help', async () => {
    for (const argv of [['runs', 'list'], ['trace'], ['runs']]) {
      const { code, stdout, stderr } = await axon([...argv, '--help']);
      expect(code).toBe(0);
      expect(stderr).toBe('');
      expect(stdout).toMatch(new RegExp(`^Usage: axon ${argv.join(' ')} `));
    }
    const { stdout } = await axon(['--help']);
    expect(stdout).toMatch(/^ {2}runs list {2,}\S/m);
    expect(stdout).toMatch(/^ {2}trace <run_id> {2,}\S/m);
    for (const code of [0, 1, 2, 3])
      expect(stdout).toMatch(new RegExp(`^ {2}${code} {2,}\\S`, 'm'));
  });
});
