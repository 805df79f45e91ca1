import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HELP, helpText, runCli } from '../../../src/cli/cli.js';
import type { CliIo } from '../../../src/cli/cli-io.js';
import { serveCommand } from '../../../src/cli/serve/serve-command.js';

function capture(): { io: CliIo; stdout: () => string; stderr: () => string } {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: {
      stdout: { write: (t: string) => out.push(t) },
      stderr: { write: (t: string) => err.push(t) },
    },
    stdout: () => out.join(''),
    stderr: () => err.join(''),
  };
}

async function cli(
  argv: readonly string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const c = capture();
  const code = await runCli(argv, c.io, '0.0.0-test');
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), `axon-serve-cmd-${randomUUID().slice(0, 8)}-`));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('axon serve: the command line', () => {
  it('--help lists serve and documents each of its flags, its variables and its signals', () => {
    expect(HELP).toMatch(/^ {2}serve {2,}\S/m);
    const help = helpText(['serve']) ?? '';
    for (const flag of ['--host', '--port', '--data-dir', '--config', '--connect-timeout-ms'])
      expect(help).toMatch(new RegExp(`^ {2}${flag} <\\w+> +\\S`, 'm'));
    for (const name of [
      'AXON_HOST',
      'AXON_PORT',
      'AXON_DATA_DIR',
      'AXON_API_KEYS',
      'AXON_KEEP_ALIVE_MS',
      'AXON_CONNECT_TIMEOUT_MS',
    ])
      expect(help).toContain(name);
    expect(help).toMatch(/SIGTERM/);
    expect(help).toMatch(/130/);
  });

  it.each([
    [['run', 'trip-planner', '--port', '1'], 'run', 'port', 'serve'],
    [
      ['list', '--data-dir', 'x'],
      'list',
      'data-dir',
      'run, serve, mcp, runs list, trace, workflow, thread, agents and schedules',
    ],
    [
      ['help', '--config', 'a.yaml'],
      'help',
      'config',
      'serve, mcp, worker, list, workflow, thread and agents send',
    ],
    [['serve', '--pool', 'gpu'], 'serve', 'pool', 'worker'],
    [['run', 'trip-planner', '--redis', 'redis://x'], 'run', 'redis', 'serve and worker'],
    [['serve', '--seed', '3'], 'serve', 'seed', 'run'],
    [
      ['serve', '--json'],
      'serve',
      'json',
      'run, runs list, trace, workflow, thread, agents, schedules, image build and store copy',
    ],
  ])('refuses a flag of another command: %j', async (argv, command, flag, owner) => {
    const { code, stdout, stderr } = await cli(argv);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      `axon ${command}: --${flag} applies to ${owner} only\n\n${helpText([command]) ?? ''}`,
    );
  });

  it('refuses an argument: serve takes none', async () => {
    const { code, stderr } = await cli(['serve', 'now']);
    expect(code).toBe(2);
    expect(stderr).toBe(`axon serve: unexpected argument "now"\n\n${helpText(['serve']) ?? ''}`);
  });
});

describe('serveCommand: refusals before anything is opened', () => {
  const run = async (
    flags: Parameters<typeof serveCommand>[0]['flags'],
    env: Record<string, string> = {},
  ): Promise<{ code: number; stdout: string; stderr: string }> => {
    const c = capture();
    const code = await serveCommand(
      { flags, env, cwd: dir, version: '0.0.0-test', signal: AbortSignal.abort() },
      c.io,
    );
    return { code, stdout: c.stdout(), stderr: c.stderr() };
  };

  it('a bad flag: exit 2, one line naming it', async () => {
    expect(await run({ port: 'http' })).toEqual({
      code: 2,
      stdout: '',
      stderr: 'axon serve: --port: must be a whole number, got "http"\n',
    });
  });

  it('a bad variable: exit 2, one line naming it', async () => {
    expect(await run({}, { AXON_PORT: '99999' })).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^axon serve: AXON_PORT: .*65535\n$/) as unknown,
    });
  });

  it('a bad key in the file: exit 2, one line naming the key and its line, no data dir made', async () => {
    writeFileSync(join(dir, 'axon.yaml'), 'data_dir: ./d\nauth:\n  keys: []\n  users: []\n');
    expect(await run({})).toEqual({
      code: 2,
      stdout: '',
      stderr: 'axon serve: axon.yaml line 4: auth.users: unknown key "users"\n',
    });
    expect(existsSync(join(dir, 'd'))).toBe(false);
  });

  it.each([
    [
      'a memory backend axon does not have',
      'memory:\n  cold:\n    backend: qdrant\n',
      'axon serve: axon.yaml line 3: memory.cold.backend "qdrant" is not supported: axon has sqlite, postgres\n',
    ],
    [
      'a memory key its backend would not read',
      'memory:\n  hot:\n    backend: inmemory\n    url: redis://x:1\n',
      'axon serve: axon.yaml line 4: memory.hot.url is read only with backend redis or postgres, not inmemory\n',
    ],
    [
      'a memory tier on a Redis Cluster under a prefix without a hash tag',
      'memory:\n  warm:\n    backend: redis\n    cluster: "127.0.0.1:1"\n    prefix: "mem:"\n',
      `axon serve: axon.yaml line 5: memory.warm.prefix "mem:" has no hash tag: on a Redis Cluster the prefix must hold one, like "{axon}:", so that each script's keys share one slot\n`,
    ],
  ])('%s: exit 2, naming the key and its line', async (_what, yaml, message) => {
    writeFileSync(join(dir, 'axon.yaml'), yaml);
    const { code, stderr } = await run({ dataDir: 'd' });
    expect(code).toBe(2);
    expect(stderr).toBe(message);
  });
});
