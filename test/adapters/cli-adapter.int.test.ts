import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createCliAdapter, type CliAdapterOptions } from '../../src/adapters/cli-adapter.js';
import {
  createCursorAdapter,
  createHermesAdapter,
  cursorAdapter,
  hermesAdapter,
} from '../../src/adapters/presets.js';
import {
  createSubprocessAgent,
  SUBPROCESS_MAX_STDOUT,
} from '../../src/adapters/subprocess-agent.js';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { CliAgentError } from '../../src/errors/cli-agent-error.js';
import { quietRuntime } from '../support/runtime.js';

const fakeAgent = fileURLToPath(new URL('../fixtures/cli/fake-agent.mjs', import.meta.url));
const jsonAgent = fileURLToPath(new URL('../fixtures/cli/json-agent.mjs', import.meta.url));

function fake(mode: string, options: Partial<CliAdapterOptions> = {}) {
  return createCliAdapter({
    name: 'fake-agent',
    command: process.execPath,
    args: [fakeAgent],
    env: { FAKE_MODE: mode },
    ...options,
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function failure(p: Promise<unknown>): Promise<CliAgentError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof CliAgentError) return err;
    throw err;
  }
  throw new Error('expected the call to fail');
}

const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => rt.close()));
});

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'axon-cli-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('CLI agent adapters: a process agent in a runtime', () => {
  it('streams stdout line by line as token events and returns the trimmed stdout', async () => {
    const rt = quietRuntime({
      agents: [defineAgent({ name: 'fake', placement: 'process', behaviour: fake('echo') })],
    });
    runtimes.push(rt);
    const result = await rt.invoke<string>('fake', 'plan a trip');

    expect(result.status).toBe('success');
    expect(result.output).toBe('you said: plan a trip\nline two\nno newline at the end');
    const events = await rt.store.readEvents(result.stepId);
    const tokens = events.flatMap((e) => (e.type === 'token' ? [e.t] : []));
    expect(tokens).toEqual(['you said: plan a trip\n', 'line two\n', 'no newline at the end']);
    expect((await rt.store.getStep(result.stepId))?.placement).toBe('process');
  });

  it('passes the prompt as the last argument with input "arg"', async () => {
    const out = await fake('argv', { input: 'arg', args: [fakeAgent, '--flag'] }).complete('hello');
    expect(JSON.parse(out as string)).toEqual(['--flag', 'hello']);
  });

  it('cancelling the step kills the process; the step ends CANCELLED', async () => {
    const pidfile = join(scratch, 'cancel.pid');
    const rt = quietRuntime({
      agents: [
        defineAgent({
          name: 'hang',
          placement: 'process',
          behaviour: fake('hang', { env: { FAKE_MODE: 'hang', FAKE_PIDFILE: pidfile } }),
        }),
      ],
    });
    runtimes.push(rt);
    const stream = rt.stream('hang', 'x');
    for await (const { event } of stream) {
      if (event.type === 'token') stream.cancel();
    }
    const result = await stream.result;
    expect(result.error?.code).toBe('CANCELLED');
    const grandchild = Number(await readFile(pidfile, 'utf8'));
    await expect.poll(() => alive(grandchild), { timeout: 10_000 }).toBe(false);
  });
});

describe('adapter options', () => {
  it('parse shapes the output, cwd is where the process runs, maxOutputBytes bounds what parse sees', async () => {
    const parsed = createCliAdapter({
      name: 'fake',
      command: process.execPath,
      args: [fakeAgent],
      input: 'arg',
      env: { FAKE_MODE: 'echo' },
      parse: (stdout) => stdout.split('\n').length,
    });
    expect(await parsed.complete('hi')).toBe(3);
    const located = createCliAdapter({
      name: 'fake',
      command: process.execPath,
      args: [fakeAgent],
      input: 'arg',
      env: { FAKE_MODE: 'cwd' },
      cwd: scratch,
    });
    expect(await located.complete('x')).toBe(scratch);
    const capped = createCliAdapter({
      name: 'fake',
      command: process.execPath,
      args: [fakeAgent],
      input: 'arg',
      env: { FAKE_MODE: 'echo' },
      maxOutputBytes: 8,
    });
    expect(await capped.complete('hello')).toBe('you said');
    expect(() =>
      createCliAdapter({ name: 'x', command: 'x', input: 'arg', maxOutputBytes: Number.NaN }),
    ).toThrow(/maxOutputBytes must be a whole number > 0/);
  });
});

describe("seed 001's error taxonomy, with real processes", () => {
  it('spawn_failed: no such binary', async () => {
    const err = await failure(
      createCliAdapter({ name: 'ghost', command: 'no-such-agent-binary-axon' }).complete('x'),
    );
    expect(err.kind).toBe('spawn_failed');
    expect(err.code).toBe('INTERNAL');
    expect(err.message).toMatch(/^ghost: spawn_failed/);
  });

  it('non_zero_exit: the exit code, and stdout and stderr captured within bounds', async () => {
    const err = await failure(fake('fail').complete('x'));
    expect(err.kind).toBe('non_zero_exit');
    expect(err.exitCode).toBe(7);
    expect(err.stdout).toBe('partial answer\n');
    expect(err.stderr.length).toBeLessThanOrEqual(16 * 1024);
    expect(err.stderr).toContain('fatal: the model is unavailable');
    expect(err.message).toMatch(/^fake-agent: exitCode=7 stdout="partial answer\\n" stderr=/);
  });

  it('timeout: the whole process tree is killed', async () => {
    const pidfile = join(scratch, 'timeout.pid');
    const adapter = fake('hang', {
      timeoutMs: 1_000,
      env: { FAKE_MODE: 'hang', FAKE_PIDFILE: pidfile },
    });
    const err = await failure(adapter.complete('x'));
    expect(err.kind).toBe('timeout');
    expect(err.code).toBe('TIMEOUT');
    expect(err.retriable).toBe(true);
    expect(err.stdout).toBe('working...\n');
    const grandchild = Number(await readFile(pidfile, 'utf8'));
    await expect.poll(() => alive(grandchild), { timeout: 10_000 }).toBe(false);
  });

  it('aborted: the AbortSignal fired; the tree is killed', async () => {
    const pidfile = join(scratch, 'abort.pid');
    const adapter = fake('hang', { env: { FAKE_MODE: 'hang', FAKE_PIDFILE: pidfile } });
    const controller = new AbortController();
    const pending = failure(adapter.complete('x', { signal: controller.signal }));
    await expect
      .poll(() => readFile(pidfile, 'utf8').then(Boolean, () => false), { timeout: 10_000 })
      .toBe(true);
    controller.abort();
    const err = await pending;
    expect(err.kind).toBe('aborted');
    expect(err.code).toBe('CANCELLED');
    const grandchild = Number(await readFile(pidfile, 'utf8'));
    await expect.poll(() => alive(grandchild), { timeout: 10_000 }).toBe(false);
  });
});

describe('adapters from a worker thread', () => {
  it('a worker-placed agent runs a CLI adapter and its lines reach the host step as tokens', async () => {
    const rt = quietRuntime({
      agents: [
        defineAgent({
          name: 'cli-in-worker',
          placement: 'worker',
          module: new URL('../fixtures/worker-agents.ts', import.meta.url).href,
          export: 'cliInWorker',
        }),
      ],
      workers: { maxThreads: 1 },
    });
    runtimes.push(rt);
    const result = await rt.invoke<string>('cli-in-worker', 'from a thread');
    expect(result.status).toBe('success');
    expect(result.output).toBe('you said: from a thread\nline two\nno newline at the end');
    const tokens = (await rt.store.readEvents(result.stepId)).flatMap((e) =>
      e.type === 'token' ? [e.t] : [],
    );
    expect(tokens).toEqual(['you said: from a thread\n', 'line two\n', 'no newline at the end']);
  });
});

describe('the single-shot AgentFn form', () => {
  it('sends the system prompt and the thread, and resolves the whole answer', async () => {
    const out = await fake('echo').agentFn(
      { threadId: 't1', start: 'Add a README', steps: [{ role: 'coder', content: 'done' }] },
      'You are a careful engineer.',
    );
    expect(out).toContain('you said: You are a careful engineer.');
    expect(out).toContain('## start\nAdd a README');
    expect(out).toContain('## coder\ndone');
    expect(out.endsWith('no newline at the end')).toBe(true);
  });
});

describe('presets with stand-in executables on PATH', () => {
  async function standIn(name: string): Promise<string> {
    const dir = await mkdtemp(join(scratch, `${name}-`));
    const file = join(dir, name);
    await writeFile(
      file,
      `#!${process.execPath}\nprocess.stdout.write(JSON.stringify({ bin: ${JSON.stringify(name)}, argv: process.argv.slice(2) }));\n`,
    );
    await chmod(file, 0o755);
    return dir;
  }

  it('cursorAdapter runs `cursor-agent -p --output-format text <prompt>`', async () => {
    const dir = await standIn('cursor-agent');
    const adapter = createCursorAdapter({ env: { PATH: `${dir}:${process.env['PATH'] ?? ''}` } });
    expect(JSON.parse((await adapter.complete('fix the bug')) as string)).toEqual({
      bin: 'cursor-agent',
      argv: ['-p', '--output-format', 'text', 'fix the bug'],
    });
    expect(adapter.name).toBe('cursor-agent');
  });

  it('hermesAdapter runs `hermes chat -q <prompt>`', async () => {
    const dir = await standIn('hermes');
    const adapter = createHermesAdapter({ env: { PATH: `${dir}:${process.env['PATH'] ?? ''}` } });
    expect(JSON.parse((await adapter.complete('summarise')) as string)).toEqual({
      bin: 'hermes',
      argv: ['chat', '-q', 'summarise'],
    });
  });

  it('the default instances find their binaries on PATH when called', async () => {
    const cursorDir = await standIn('cursor-agent');
    const hermesDir = await standIn('hermes');
    const saved = process.env['PATH'];
    process.env['PATH'] = `${cursorDir}:${hermesDir}:${saved ?? ''}`;
    try {
      expect(JSON.parse((await cursorAdapter.complete('a')) as string)).toMatchObject({
        bin: 'cursor-agent',
      });
      expect(JSON.parse((await hermesAdapter.complete('b')) as string)).toMatchObject({
        bin: 'hermes',
        argv: ['chat', '-q', 'b'],
      });
    } finally {
      process.env['PATH'] = saved;
    }
  });

  it('without the binary on PATH, the preset fails spawn_failed', async () => {
    const err = await failure(createHermesAdapter({ env: { PATH: scratch } }).complete('x'));
    expect(err.kind).toBe('spawn_failed');
    expect(err.message).toMatch(/^hermes: spawn_failed/);
  });
});

describe('subprocess agents (Nerva): JSON in on stdin, JSON out on stdout', () => {
  const rt = (): Runtime => {
    const r = quietRuntime({
      agents: [
        defineAgent({
          name: 'json',
          placement: 'process',
          behaviour: createSubprocessAgent({ command: process.execPath, args: [jsonAgent] }),
        }),
      ],
    });
    runtimes.push(r);
    return r;
  };

  it('returns the output, or the special statuses, as agent results', async () => {
    const r = rt();
    expect(await r.invoke('json', { message: 'hi', args: { a: 1 } })).toMatchObject({
      status: 'success',
      output: { echo: { a: 1 } },
    });
    expect((await r.invoke('json', 'plain')).output).toEqual([1, 2, 3]);
    expect(await r.invoke('json', 'need')).toMatchObject({
      status: 'needs_data',
      output: 'which city?',
      data: { field: 'city' },
    });
  });

  it('exit code 2 is wrong_handler', async () => {
    expect(await rt().invoke('json', 'not-mine')).toMatchObject({
      status: 'wrong_handler',
      output: 'ask the billing agent',
    });
  });

  it('stdout past 1 MB, stdout that is not JSON, and other exit codes fail the step', async () => {
    const r = rt();
    const big = await r.invoke('json', 'big');
    expect(big.status).toBe('error');
    expect(big.error?.message).toContain(`stdout passed ${SUBPROCESS_MAX_STDOUT} bytes`);
    const bad = await r.invoke('json', 'bad');
    expect(bad.error?.code).toBe('INTERNAL');
    expect(bad.error?.message).toContain('not JSON');
    const crashed = await r.invoke('json', 'boom');
    expect(crashed.error).toBeInstanceOf(CliAgentError);
    expect(crashed.error).toMatchObject({
      kind: 'non_zero_exit',
      exitCode: 5,
      stderr: 'crashed\n',
    });
  });
});
