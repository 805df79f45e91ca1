import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HELP, helpText, runCli } from '../../src/cli/cli.js';
import { LOG_LEVELS } from '../../src/observability/logger.js';
import type { CliIo } from '../../src/cli/cli-io.js';
import { sqliteStore } from '../../src/store/sqlite/sqlite-store.js';

interface Captured {
  readonly io: CliIo;
  readonly stdout: () => string;
  readonly stderr: () => string;
}

/** Where `axon run` writes its runs here: not the package root's ./.axon. */
const DATA_DIR = mkdtempSync(join(tmpdir(), 'axon-cli-'));

function capture(onStdout?: (text: string) => void): Captured {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: {
      // Read when the command runs: a test's vi.stubEnv is seen.
      get env() {
        return { ...process.env, AXON_DATA_DIR: DATA_DIR };
      },
      stdout: {
        write(text: string) {
          out.push(text);
          onStdout?.(text);
          return true;
        },
      },
      stderr: {
        write(text: string) {
          err.push(text);
          return true;
        },
      },
    },
    stdout: () => out.join(''),
    stderr: () => err.join(''),
  };
}

async function cli(
  argv: readonly string[],
  version = '9.9.9-test',
): Promise<{ readonly code: number; readonly stdout: string; readonly stderr: string }> {
  const c = capture();
  const code = await runCli(argv, c.io, version);
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

const PLAN =
  /^Here is your plan for Berlin\. Fly out on (\d{4}-\d{2}-\d{2}) with AX \d+, leaving LHR at \d\d:\d\d and landing at \d\d:\d\d, for EUR \d+\. .*Shall I book it\?$/m;

/** The lines of the trace tree printed after `trace:`. */
function traceLines(stdout: string): string[] {
  const at = stdout.indexOf('\ntrace:\n');
  expect(at, 'a trace section').toBeGreaterThan(-1);
  return stdout
    .slice(at + '\ntrace:\n'.length)
    .split('\n')
    .filter((l) => l.length > 0);
}

describe('axon --help, --version, list', () => {
  it.each([{ argv: ['--help'] }, { argv: ['-h'] }, { argv: ['help'] }, { argv: [] }])(
    'prints the help with the commands run, list and help: $argv',
    async ({ argv }) => {
      const { code, stdout, stderr } = await cli(argv);
      expect(code).toBe(0);
      expect(stdout).toBe(HELP);
      expect(stdout).toMatch(/^ {2}run <example> {2,}\S/m);
      expect(stdout).toMatch(/^ {2}list {2,}\S/m);
      expect(stdout).toMatch(/^ {2}help \[command\.\.\.\] {2,}\S/m);
      expect(stderr).toBe('');
    },
  );

  it.each([['--version'], ['-v']])('prints the version: %s', async (flag) => {
    const { code, stdout } = await cli([flag], '1.2.3-rc.4');
    expect(code).toBe(0);
    expect(stdout).toBe('1.2.3-rc.4\n');
  });

  it('documents the global flags in --help', () => {
    expect(HELP).toMatch(/^ {2}-h, --help {2,}\S/m);
    expect(HELP).toMatch(/^ {2}-v, --version {2,}\S/m);
  });

  it.each([
    [
      'run',
      ['--message', '--seed', '--token-ms', '--json', '--no-trace', '--router', '--data-dir'],
    ],
    [
      'serve',
      [
        '--host',
        '--port',
        '--data-dir',
        '--config',
        '--redis',
        '--redis-cluster',
        '--postgres',
        '--connect-timeout-ms',
      ],
    ],
    [
      'worker',
      [
        '--pool',
        '--tags',
        '--concurrency',
        '--redis',
        '--redis-cluster',
        '--postgres',
        '--config',
        '--connect-timeout-ms',
        '--vram-mb',
        '--features',
        '--grace-ms',
        '--lock-ms',
        '--stalled-ms',
        '--heartbeat-ms',
        '--ttl-ms',
      ],
    ],
    ['list', ['--config']],
  ])('axon %s --help documents each of its flags, and only those', async (command, flags) => {
    const { code, stdout, stderr } = await cli([command, '--help']);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toBe(helpText([command]));
    expect(stdout).toMatch(new RegExp(`^Usage: axon ${command} \\[options\\]`, 'm'));
    const documented = [...stdout.matchAll(/^ {2}(--[a-z-]+)/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual([...flags].sort());
  });

  it('refuses --trace, which it does not document', async () => {
    const { code, stderr } = await cli(['run', 'trip-planner', '--trace']);
    expect(code).toBe(2);
    expect(stderr).toContain("'--trace'");
  });

  it('lists the examples axon run takes, with their descriptions, among what serve registers', async () => {
    // A table now (issue 48), not `name<TAB>description`: test/cli/list-served.test.ts has the rest.
    const { code, stdout } = await cli(['list']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^example +trip-planner +examples\/trip-planner +\S.*$/m);
    expect(stdout).toMatch(/^example +help-desk +examples\/help-desk +\S.*$/m);
  });
});

describe('axon run help-desk: the front door routes between two agents', () => {
  const routed = (stdout: string): string | undefined =>
    /router\.classify → (\S+) /.exec(stdout)?.[1];

  it.each([
    ['rules', 'I was charged twice, can I get a refund?', 'billing', /^Billing here\./m],
    ['rules', 'I get an error at login', 'support', /^Support here\./m],
    ['embedding', 'send me the invoice for my payments', 'billing', /^Billing here\./m],
    ['embedding', 'the app crashes with an error after login', 'support', /^Support here\./m],
  ])('--router %s: "%s" goes to %s', async (router, message, agent, answer) => {
    const { code, stdout } = await cli([
      'run',
      'help-desk',
      '--router',
      router,
      '--message',
      message,
    ]);
    expect(code).toBe(0);
    expect(routed(stdout)).toBe(agent);
    expect(stdout).toMatch(answer);
  });

  it("a message no rule matches goes to the example's default agent at 0.50", async () => {
    const { code, stdout } = await cli(['run', 'help-desk', '--message', 'hello']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/router\.classify → support 0\.50 /);
  });

  it('with --router embedding, a message like no description answers wrong_handler and exits 1', async () => {
    const { code, stdout } = await cli([
      'run',
      'help-desk',
      '--router',
      'embedding',
      '--message',
      'zzz',
    ]);
    expect(code).toBe(1);
    expect(stdout).toMatch(/^status: wrong_handler /m);
    expect(stdout).toMatch(/router\.classify → unknown 0\.00 /);
  });

  it('refuses an unknown --router with exit 2', async () => {
    const { code, stderr } = await cli(['run', 'help-desk', '--router', 'coin']);
    expect(code).toBe(2);
    expect(stderr).toContain('--router must be one of rules, embedding, got "coin"');
  });
});

describe('axon run trip-planner', () => {
  it('streams the plan, prints status: success and the trace tree, and exits 0', async () => {
    const { code, stdout } = await cli(['run', 'trip-planner', '--token-ms', '0']);

    expect(code).toBe(0);
    expect(stdout).toContain('> Plan a trip to Berlin next Tuesday\n');
    expect(stdout).toMatch(/^ {2}· planner: Checking the calendar for next tuesday$/m);
    const plan = PLAN.exec(stdout);
    expect(plan, 'the streamed plan text').not.toBeNull();
    // The plan's date is the next Tuesday, within a week.
    const date = Date.parse(`${plan?.[1] ?? ''}T00:00:00Z`);
    expect(new Date(date).getUTCDay()).toBe(2);
    expect(date - Date.now()).toBeGreaterThan(-86_400_000);
    expect(date - Date.now()).toBeLessThan(8 * 86_400_000);
    expect(stdout).toMatch(/^status: success \([\d,]+ ms, \d+ tokens\)$/m);

    // The front door's stages, the agents' steps under runtime.invoke (seed 000's tree).
    const lines = traceLines(stdout);
    const id = '\\[t_[0-9a-f]{6}';
    const expected = [
      `^${id}\\] front door \\(\\d+ms, \\d+ tok\\)$`,
      `^\\+-- ${id}\\.1\\] memory\\.recall \\(`,
      `^\\+-- ${id}\\.2\\] router\\.classify → planner 1\\.00 \\(`,
      `^\\+-- ${id}\\.3\\] runtime\\.invoke planner \\(`,
      `^\\|   \\+-- ${id}\\.3\\.1\\] agent planner \\(`,
      `^\\|       \\+-- ${id}\\.3\\.1\\.1\\] agent calendar \\(`,
      `^\\|       \\+-- ${id}\\.3\\.1\\.2\\] agent flights \\(`,
      `^\\|           \\+-- ${id}\\.3\\.1\\.2\\.1\\] tool search_flights \\(`,
      `^\\+-- ${id}\\.4\\] memory\\.store \\(`,
      `^\\+-- ${id}\\.5\\] responder\\.format \\(`,
    ];
    expect(lines).toHaveLength(expected.length);
    expected.forEach((re, i) => {
      expect(lines[i]).toMatch(new RegExp(re));
    });
  });

  it('prints the same plan text on every run', async () => {
    const a = await cli(['run', 'trip-planner', '--token-ms', '0', '--no-trace']);
    const b = await cli(['run', 'trip-planner', '--token-ms', '0', '--no-trace']);
    expect(PLAN.exec(a.stdout)?.[0]).toBeDefined();
    expect(PLAN.exec(b.stdout)?.[0]).toBe(PLAN.exec(a.stdout)?.[0]);
  });

  it('regression: --seed 1 and --seed 2 printed the same plan; each seed now has its own, byte for byte', async () => {
    const run = async (seed: string): Promise<string> => {
      const { code, stdout } = await cli(['run', 'trip-planner', '--token-ms=0', '--seed', seed]);
      expect(code).toBe(0);
      // Only the run's duration on the status line, its id and the trace tree (ids, timings) vary.
      return stdout
        .slice(0, stdout.indexOf('\ntrace:\n'))
        .replace(/\([\d,]+ ms, /, '(N ms, ')
        .replace(/axon trace run_\w+/, 'axon trace RUN');
    };
    const one = await run('1');
    const two = await run('2');

    expect(PLAN.exec(one)?.[0]).toBeDefined();
    expect(PLAN.exec(two)?.[0]).toBeDefined();
    expect(PLAN.exec(two)?.[0]).not.toBe(PLAN.exec(one)?.[0]);
    expect(await run('1')).toBe(one);
    expect(await run('2')).toBe(two);
  });

  it('regression: its run stored seed null though --seed defaults to 42; it stores the seed it ran with', async () => {
    const seedOfRun = async (argv: readonly string[]): Promise<number | null | undefined> => {
      const { code, stdout } = await cli(['run', 'trip-planner', '--token-ms=0', ...argv]);
      expect(code).toBe(0);
      const runId = /axon trace (run_\w+)/.exec(stdout)?.[1] ?? '';
      const store = sqliteStore(join(DATA_DIR, 'axon.db'));
      try {
        return (await store.getRun(runId))?.seed;
      } finally {
        await store.close();
      }
    };
    expect(await seedOfRun(['--no-trace'])).toBe(42);
    expect(await seedOfRun(['--no-trace', '--seed', '7'])).toBe(7);
  });

  it('sends --message instead of the default', async () => {
    const { code, stdout } = await cli([
      'run',
      'trip-planner',
      '--token-ms=0',
      '--message',
      'Plan a trip to Paris next Friday',
    ]);
    expect(code).toBe(0);
    expect(stdout).toContain('> Plan a trip to Paris next Friday\n');
    expect(stdout).toMatch(/^ {2}· planner: Searching flights to CDG on \d{4}-\d{2}-\d{2}$/m);
    expect(stdout).toMatch(/^Here is your plan for Paris\. /m);
  });

  it('omits the trace tree with --no-trace', async () => {
    const { code, stdout } = await cli(['run', 'trip-planner', '--token-ms', '0', '--no-trace']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^status: success /m);
    expect(stdout).not.toContain('trace:');
    expect(stdout).not.toContain('agent planner');
  });

  it('prints one JSON object per line with --json: every event with path and type, then the result', async () => {
    const { code, stdout } = await cli(['run', 'trip-planner', '--token-ms', '0', '--json']);
    expect(code).toBe(0);

    const lines = stdout.split('\n');
    expect(lines.at(-1)).toBe('');
    const objects = lines.slice(0, -1).map((l) => JSON.parse(l) as Record<string, unknown>);
    const last = objects.at(-1);
    expect(last).toMatchObject({ result: { status: 'success', error: null } });
    const events = objects.slice(0, -1);
    expect(events.length).toBeGreaterThan(10);
    for (const e of events) {
      expect(Array.isArray(e['path'])).toBe(true);
      expect(typeof e['type']).toBe('string');
    }
    const at = (path: string, type: string): number =>
      events.filter((e) => (e['path'] as string[]).join('>') === path && e['type'] === type).length;
    expect(at('planner', 'started')).toBe(1);
    expect(at('planner', 'narration')).toBe(2);
    expect(at('planner', 'token')).toBeGreaterThan(10);
    expect(at('planner', 'end')).toBe(1);
    expect(at('planner>calendar', 'end')).toBe(1);
    expect(at('planner>flights', 'end')).toBe(1);
    expect(at('planner>flights>search_flights', 'end')).toBe(1);
    const text = events.map((e) => (e['type'] === 'token' ? String(e['t']) : '')).join('');
    expect(text).toMatch(PLAN);
  });

  it('reports a cancelled run as status: error CANCELLED when its signal aborts mid-stream', async () => {
    const controller = new AbortController();
    const c = capture((text) => {
      if (text === 'Here') controller.abort();
    });
    // 1 ms a token: at 0 the whole answer can be produced (and written to the SQLite store)
    // before the abort is seen, as it would be before a person's Ctrl-C.
    const code = await runCli(
      ['run', 'trip-planner', '--token-ms', '1'],
      c.io,
      '0.0.0',
      controller.signal,
    );
    const stdout = c.stdout();
    expect(controller.signal.aborted).toBe(true);
    expect(stdout).not.toContain('Shall I book it?');
    expect(code).toBe(1);
    expect(stdout).toMatch(/^status: error CANCELLED: /m);
  });
});

describe('axon usage errors', () => {
  it('exits 2 with the help on stderr for an unknown command', async () => {
    const { code, stdout, stderr } = await cli(['frobnicate']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain('unknown command "frobnicate"');
    expect(stderr).toContain(HELP);
  });

  it('exits 1 naming the available examples for an unknown example', async () => {
    const { code, stdout, stderr } = await cli(['run', 'moon-landing']);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toContain('"moon-landing"');
    expect(stderr).toMatch(/Examples: .*trip-planner/);
  });

  it('exits 2 when run names no example', async () => {
    const { code, stderr } = await cli(['run']);
    expect(code).toBe(2);
    expect(stderr).toContain('trip-planner');
  });

  it.each([
    [['run', 'trip-planner', '--seed', 'abc'], '--seed'],
    [['run', 'trip-planner', '--seed=1.5'], '--seed'],
    [['run', 'trip-planner', '--token-ms=-5'], '--token-ms'],
    [['run', 'trip-planner', '--seed='], '--seed'],
    [['run', 'trip-planner', '--seed= 7'], '--seed'],
    [['run', 'trip-planner', '--seed=0x10'], '--seed'],
    [['run', 'trip-planner', '--seed=1e3'], '--seed'],
    [['run', 'trip-planner', '--seed=99999999999999999999'], '--seed'],
  ])('exits 2 on a bad number: %j', async (argv, flag) => {
    const { code, stdout, stderr } = await cli(argv);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain(flag);
  });

  it('exits 2 with the help on stderr for an unknown flag', async () => {
    const { code, stdout, stderr } = await cli(['run', 'trip-planner', '--bogus']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain('--bogus');
    expect(stderr).toContain(helpText(['run']));
  });

  it.each([
    [['run', 'trip-planner', 'extra', 'junk'], 'run', 'extra'],
    [['run', 'trip-planner', '--token-ms', '0', 'extra'], 'run', 'extra'],
    [['list', 'all'], 'list', 'all'],
    [['trace', 'run_1', 'run_2'], 'trace', 'run_2'],
  ])(
    'regression: extra arguments were ignored; exits 2 with one line and the help: %j',
    async (argv, command, extra) => {
      const { code, stdout, stderr } = await cli(argv);
      expect(code).toBe(2);
      expect(stdout).toBe('');
      expect(stderr).toBe(
        `axon ${command}: unexpected argument "${extra}"\n\n${helpText([command]) ?? ''}`,
      );
    },
  );

  it("axon help <command> prints that command's help; an unknown one exits 2", async () => {
    expect(await cli(['help', 'run'])).toEqual({ code: 0, stdout: helpText(['run']), stderr: '' });
    expect(await cli(['help', 'runs', 'list'])).toMatchObject({
      code: 0,
      stdout: helpText(['runs', 'list']),
    });
    expect(await cli(['help', 'moon'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'axon help: unknown command "moon"\n',
    });
  });

  it.each([
    [['list', '--seed', '3'], 'list', 'seed', 'run'],
    [
      ['list', '--json'],
      'list',
      'json',
      'run, runs list, trace, workflow, thread, agents, schedules, image build and store copy',
    ],
    [['help', '--message', 'hi'], 'help', 'message', 'run'],
  ])('refuses an option of another command: %j', async (argv, command, option, owners) => {
    const { code, stdout, stderr } = await cli(argv);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      `axon ${command}: --${option} applies to ${owners} only\n\n${helpText([command]) ?? ''}`,
    );
  });
});

describe('AXON_LOG_LEVEL', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('regression: an unknown level printed a pino stack trace; exits 2 with one line naming the levels', async () => {
    vi.stubEnv('AXON_LOG_LEVEL', 'loud');
    const { code, stdout, stderr } = await cli(['run', 'trip-planner', '--token-ms', '0']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      `axon: AXON_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}; got "loud"\n`,
    );
  });

  it('runs at a valid level given in capitals, as pino takes them', async () => {
    vi.stubEnv('AXON_LOG_LEVEL', 'ERROR');
    const { code, stderr } = await cli(['run', 'trip-planner', '--token-ms', '0', '--no-trace']);
    expect(code).toBe(0);
    expect(stderr).toBe('');
  });
});
