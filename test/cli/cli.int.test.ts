import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

/** The package root (/work/main), where `npm run build` writes dist/. */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BUILT_MAIN = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));
const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Where `axon run` writes its runs here: not the package root's ./.axon. */
const DATA_DIR = mkdtempSync(join(tmpdir(), 'axon-cli-int-'));

/** The child's environment: the test's own, minus anything that would change the output. */
function childEnv(overrides: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    AXON_LOG_LEVEL: 'warn',
    AXON_DATA_DIR: DATA_DIR,
    ...overrides,
  };
  delete env['AXON_SCRIPTED_TOKEN_MS'];
  delete env['NODE_OPTIONS'];
  return env;
}

/** Spawns `command args` in the package root and resolves how it exited. */
function start(
  command: string,
  args: readonly string[],
  onStdout?: (soFar: string, child: ChildProcess) => void,
  env: NodeJS.ProcessEnv = {},
): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...args], {
      cwd: ROOT,
      env: childEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
      onStdout?.(stdout, child);
    });
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      resolve({ code, signal, stdout, stderr });
    });
  });
}

const PLAN =
  /^Here is your plan for Berlin\. Fly out on \d{4}-\d{2}-\d{2} with AX \d+, leaving LHR at \d\d:\d\d and landing at \d\d:\d\d, for EUR \d+\. .*Shall I book it\?$/m;

function expectSuccessfulRun(exit: Exit): void {
  expect(exit.stderr).toBe('');
  expect(exit.code).toBe(0);
  expect(exit.stdout).toMatch(/^axon run trip-planner: /);
  expect(exit.stdout).toMatch(/^ {2}· planner: Searching flights to BER on \d{4}-\d{2}-\d{2}$/m);
  expect(exit.stdout).toMatch(PLAN);
  expect(exit.stdout).toMatch(/^status: success \([\d,]+ ms, \d+ tokens\)$/m);
  const trace = exit.stdout.slice(exit.stdout.indexOf('\ntrace:\n'));
  // Through the front door: its stages, the agents' steps under runtime.invoke.
  expect(trace).toMatch(
    /\ntrace:\n\[t_[0-9a-f]{6}\] front door \(.*\)\n\+-- .*memory\.recall .*\n\+-- .*router\.classify → planner 1\.00 .*\n\+-- .*runtime\.invoke planner .*\n\| {3}\+-- .*agent planner .*\n\| {7}\+-- .*agent calendar .*\n\| {7}\+-- .*agent flights .*\n\| {11}\+-- .*tool search_flights .*\n\+-- .*memory\.store .*\n\+-- .*responder\.format .*\n$/,
  );
}

describe('axon from source (node --import tsx src/cli/main.ts)', () => {
  it('runs trip-planner, exits 0 and prints the plan, the status and the trace tree', async () => {
    const exit = await start('node', [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'run',
      'trip-planner',
      '--token-ms',
      '0',
    ]);
    expectSuccessfulRun(exit);
  });

  it('workflow trigger code-review: the first command a new user runs — the example to its end on a new data dir, exit 0', async () => {
    const data = mkdtempSync(join(tmpdir(), 'axon-cli-first-'));
    try {
      const exit = await start('node', [
        '--import',
        'tsx',
        'src/cli/main.ts',
        'workflow',
        'trigger',
        'code-review',
        '--data-dir',
        join(data, 'new'),
      ]);
      expect(exit.stderr).toBe('');
      expect(exit.code).toBe(0);
      expect(exit.stdout).toMatch(/^thread run_\w+: code-review, completed \(end\), created /);
      expect(exit.stdout).toContain('input: Write add(a, b) in JavaScript\n');
      expect(exit.stdout).toMatch(/^6 +reviewer +succeeded .*Approved\."}$/m);
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  });

  it('exits 2 with the help on stderr for an unknown command', async () => {
    const exit = await start('node', ['--import', 'tsx', 'src/cli/main.ts', 'frobnicate']);
    expect(exit.code).toBe(2);
    expect(exit.stdout).toBe('');
    expect(exit.stderr).toContain('unknown command "frobnicate"');
    expect(exit.stderr).toContain('Commands:');
  });

  it('regression: AXON_LOG_LEVEL=loud printed a stack trace; exits 2 with one line naming the levels', async () => {
    const exit = await start(
      'node',
      ['--import', 'tsx', 'src/cli/main.ts', 'run', 'trip-planner', '--token-ms', '0'],
      undefined,
      { AXON_LOG_LEVEL: 'loud' },
    );
    expect(exit.code).toBe(2);
    expect(exit.stdout).toBe('');
    expect(exit.stderr).toBe(
      'axon: AXON_LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent; got "loud"\n',
    );
  });

  it('regression: extra arguments were ignored; exits 2 with one line and the help', async () => {
    const exit = await start('node', [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'run',
      'trip-planner',
      'extra',
      'junk',
    ]);
    expect(exit.code).toBe(2);
    expect(exit.stdout).toBe('');
    expect(exit.stderr.split('\n')[0]).toBe('axon run: unexpected argument "extra"');
    expect(exit.stderr).toContain('Usage: axon run [options] <example>');
  });

  it('on SIGINT after the first streamed token, cancels the run: exit 130 and status: error CANCELLED', async () => {
    let sent = false;
    const exit = await start(
      'node',
      ['--import', 'tsx', 'src/cli/main.ts', 'run', 'trip-planner', '--token-ms', '50'],
      (soFar, child) => {
        if (!sent && /\nHere/.test(soFar)) {
          sent = true;
          child.kill('SIGINT');
        }
      },
    );
    expect(sent).toBe(true);
    expect(exit.signal).toBeNull();
    expect(exit.code).toBe(130);
    // The stream stopped: the plan was not finished.
    expect(exit.stdout).not.toContain('Shall I book it?');
    expect(exit.stdout).toMatch(/^status: error CANCELLED: /m);
    expect(exit.stdout).toMatch(/agent planner \(.*\) !CANCELLED$/m);
  });
});

describe('axon built (node bin/axon.js)', () => {
  beforeAll(async () => {
    // Built every time: a dist/ left from older sources would test what no longer exists.
    const build = await start('npm', ['run', 'build']);
    expect(build.code, `npm run build failed:\n${build.stdout}\n${build.stderr}`).toBe(0);
    expect(existsSync(BUILT_MAIN)).toBe(true);
  }, 120_000);

  it('prints the package version', async () => {
    const exit = await start('node', ['bin/axon.js', '--version']);
    expect(exit.code).toBe(0);
    expect(exit.stdout).toBe(`${VERSION}\n`);
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('runs trip-planner with a 1 ms token delay', async () => {
    const exit = await start('node', ['bin/axon.js', 'run', 'trip-planner', '--token-ms', '1']);
    expectSuccessfulRun(exit);
  });

  it('runs the code-review workflow to its end, its linter process and all (the package holds only dist/)', async () => {
    const data = mkdtempSync(join(tmpdir(), 'axon-cli-built-'));
    try {
      const exit = await start('node', [
        'bin/axon.js',
        'workflow',
        'trigger',
        'code-review',
        '--data-dir',
        join(data, 'new'),
      ]);
      expect(exit.stderr).toBe('');
      expect(exit.code).toBe(0);
      expect(exit.stdout).toMatch(/^thread run_\w+: code-review, completed \(end\), created /);
      expect(exit.stdout).toMatch(/^5 +linter +succeeded .*"ok":true/m);
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  });
});
