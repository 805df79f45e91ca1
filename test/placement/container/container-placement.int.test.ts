/**
 * Container placement (issue 31): agents and tools run in real containers (the image
 * `test/support/container-setup.ts` builds), each isolation limit proven from inside, and
 * every way a container ends — its step's timeout, a cancel, its exit, its memory, a broken
 * protocol — ends only its step, with a typed error, leaving no container behind. Run on
 * podman by the `integration` project and on docker by `containers-on-docker`
 * (`AXON_TEST_CONTAINER_ENGINE`, vitest.config.ts).
 */
import { chownSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { promisify } from 'node:util';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../../src/actors/define-agent.js';
import { CancelledError } from '../../../src/errors/cancelled-error.js';
import { findContainerEngine } from '../../../src/placement/container/container-engine.js';
import { MAX_PENDING_CALLS } from '../../../src/placement/container/container-pool.js';
import { WORKER_STREAM_CREDIT } from '../../../src/placement/worker/worker-placement.js';
import type {
  ContainerEngineName,
  ContainerOptions,
} from '../../../src/placement/container/container-options.js';
import type { Runtime } from '../../../src/runtime/runtime.js';
import { defineTool } from '../../../src/tools/define-tool.js';
import { quietRuntime } from '../../support/runtime.js';

const image = process.env['AXON_TEST_IMAGE'] ?? 'localhost/axon-node:test';
/** The engine under test (test/support/container-setup.ts), else the first that works. */
const engineName = process.env['AXON_TEST_CONTAINER_ENGINE'] as ContainerEngineName | undefined;
const testEngine = () => findContainerEngine(engineName, undefined);
const fixtures = new URL('../../fixtures/container-agents.mjs', import.meta.url).href;
const agent = (name: string, exported = name, timeoutMs?: number) =>
  defineAgent({
    name,
    placement: 'container',
    module: fixtures,
    export: exported,
    ...(timeoutMs ? { timeoutMs } : {}),
  });

const runtimes: Runtime[] = [];
function containerRuntime(
  container: ContainerOptions = {},
  extra: Parameters<typeof quietRuntime>[0] = {},
) {
  const rt = quietRuntime({
    container: { image, ...(engineName ? { engine: engineName } : {}), ...container },
    ...extra,
  });
  runtimes.push(rt);
  return rt;
}

const exec = promisify(execFile);

/** Resolves once `check` holds, looking every 50 ms for at most 20 s. */
async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('condition not reached in 20 s');
}

/**
 * The containers this test file's runtimes started (running or not): their names carry this
 * process's id, so the container tests of other files running at once are not counted.
 */
async function axonContainers(): Promise<string[]> {
  const engine = await testEngine();
  return (await engine.list('axon.pool')).filter((n) => n.includes(`-p${process.pid}-`));
}

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => rt.close()));
});

afterAll(async () => {
  expect(await axonContainers()).toEqual([]);
});

describe('container placement runs agents and tools in containers', () => {
  it('an agent streams its tokens from a container as user nobody; its next step reuses it', async () => {
    const rt = containerRuntime();
    rt.registerAgent(agent('echo'));
    const tokens: string[] = [];
    const stream = rt.stream<{ echo: string; uid: number; host: string; steps: number }>(
      'echo',
      'hello from a box',
    );
    for await (const { event } of stream) if (event.type === 'token') tokens.push(event.t);
    const first = await stream.result;
    expect(first.status).toBe('success');
    expect(tokens.join('')).toBe('hello from a box ');
    expect(first.output).toMatchObject({ echo: 'hello from a box', uid: 65534, steps: 1 });
    const second = await rt.invoke<{ host: string; steps: number }>('echo', 'again');
    expect(second.output).toMatchObject({ host: first.output?.host, steps: 2 });
  });

  it('a tool runs in a container through callTool, its arguments checked on the host first', async () => {
    const rt = containerRuntime();
    const shout = defineTool({
      name: 'shout',
      description: 'capitals',
      input: z.object({ text: z.string() }).strict(),
      placement: 'container',
      module: fixtures,
      export: 'shout',
    });
    rt.registerTool(shout);
    const ok = await rt.callTool('shout', { text: 'quiet' }, rt.createContext());
    expect(ok).toMatchObject({ status: 'success', output: { text: 'QUIET', uid: 65534 } });
    const bad = await rt.callTool('shout', { text: 3 }, rt.createContext());
    expect(bad.status).toBe('error');
    expect(bad.error?.code).toBe('SCHEMA_VIOLATION');
    // Called directly, outside a runtime, it says where it runs.
    expect(() => shout.handler({ text: 'x' }, rt.createContext())).toThrow(/runs in a container/);
  });

  it('a container agent delegates to an agent and calls a tool on the host, on its own step', async () => {
    const rt = containerRuntime();
    rt.registerAgent(agent('delegator'));
    rt.registerAgent(
      defineAgent({ name: 'helper', handler: (input) => `helped: ${input.message}` }),
    );
    rt.registerTool(
      defineTool({
        name: 'add',
        description: 'sum',
        input: z.object({ a: z.number(), b: z.number() }),
        handler: ({ a, b }) => a + b,
      }),
    );
    const result = await rt.invoke('delegator', 'please');
    expect(result.output).toEqual({
      helped: 'helped: please',
      added: 5,
      status: ['success', 'success'],
    });
    const steps = await rt.listSteps(result.runId);
    const parent = steps.find((s) => s.name === 'delegator');
    expect(
      steps
        .filter((s) => s.parent_step_id === parent?.step_id)
        .map((s) => s.name)
        .sort(),
    ).toEqual(['add', 'helper']);
    expect(parent?.placement).toBe('container');
  });

  it('what a behaviour prints to standard output does not reach the protocol', async () => {
    const rt = containerRuntime();
    rt.registerAgent(agent('printer'));
    const result = await rt.invoke('printer', 'anyway');
    expect(result).toMatchObject({ status: 'success', output: 'printed anyway' });
  });
});

describe('isolation by default, each limit proven from inside', () => {
  const probe = async (rt: Runtime, args: Record<string, unknown>) => {
    const result = await rt.invoke<Record<string, unknown>>('probe', { message: '', args });
    expect(result.error).toBeNull();
    return result.output as Record<string, unknown>;
  };

  it('no network, a read-only root, a small /tmp, user nobody with no capabilities, 1 CPU, 1 024 files', async () => {
    const rt = containerRuntime();
    rt.registerAgent(agent('probe'));
    const net = await probe(rt, { check: 'network' });
    // The host's Redis is on 127.0.0.1:6379: the container's loopback is its own.
    expect(net['redis']).toBe('ECONNREFUSED');
    expect(net['outside']).toBe('ENETUNREACH');
    expect(await probe(rt, { check: 'write_root' })).toEqual({ wrote: false, code: 'EROFS' });
    expect(await probe(rt, { check: 'tmp' })).toEqual({ small: true, big: false, code: 'ENOSPC' });
    const who = await probe(rt, { check: 'who' });
    expect(who).toMatchObject({
      uid: 65534,
      gid: 65534,
      caps: '0000000000000000',
      noNewPrivs: '1',
      openFiles: '1024',
      cpus: 1,
    });
    expect(who['root']).not.toContain('work');
    expect(who['root']).not.toContain('home');
  });

  it('cannot fork past its pids limit; its CPUs and open files are as named', async () => {
    const rt = containerRuntime({ pids: 32, cpus: 0.5, nofile: 256 });
    rt.registerAgent(agent('probe'));
    const forked = await probe(rt, { check: 'pids', n: 64 });
    expect(forked['result']).toBe('EAGAIN');
    expect(forked['started']).toBeLessThan(32);
    expect(await probe(rt, { check: 'who' })).toMatchObject({ cpus: 0.5, openFiles: '256' });
  });

  it('past its memory it is killed: WORKER_RESET naming out of memory, its container gone', async () => {
    const rt = containerRuntime({ memoryMb: 96 });
    rt.registerAgent(agent('hog'));
    // podman's conmon writes a file `oom` into its working directory at an OOM kill: not
    // this process's (a service's checkout), since the engine runs in the temp dir.
    rmSync('oom', { force: true });
    const result = await rt.invoke('hog', 'eat');
    expect(existsSync('oom')).toBe(false);
    expect(result.status).toBe('error');
    expect(result.error?.code).toBe('WORKER_RESET');
    expect(result.error?.message).toMatch(/ran out of memory \(its limit is 96 MiB\)/);
    expect(result.error?.details).toMatchObject({ agent: 'hog', cause: 'oom' });
    expect(await axonContainers()).toEqual([]);
  });

  it("mounts the roots of the run's fs_policy at their own paths: read-write without a quota, read-only with one", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'axon-box-'));
    const rt = containerRuntime({}, { dataDir });
    rt.registerAgent(agent('probe'));
    const root = join(dataDir, 'sandbox', 'work');
    mkdirSync(root, { recursive: true });
    // A writable mount needs a folder the container's user (65534) may write: the operator's.
    chownSync(root, 65534, 65534);
    writeFileSync(join(root, 'in.txt'), 'from the host');
    const { flow } = await rt.createFlow({ name: 'boxed' });
    const stepOf = async (policy: object, args: object) => {
      const run = await rt.createRun(flow.flow_id, { fs_policy: policy });
      const s = await rt.submitStep(run.run_id, {
        type: 'agent',
        input: { agent: 'probe', message: '', args },
      });
      await s.done;
      return rt.getStep(s.step_id);
    };
    const read = await stepOf({ roots: ['./work'] }, { check: 'read', path: join(root, 'in.txt') });
    expect(read?.output).toEqual({ content: 'from the host' });
    const write = await stepOf(
      { roots: ['./work'] },
      { check: 'write', path: join(root, 'out.txt'), content: 'from the box' },
    );
    expect(write?.output).toEqual({ wrote: true });
    expect(readFileSync(join(root, 'out.txt'), 'utf8')).toBe('from the box');
    const capped = await stepOf(
      { roots: ['./work'], quota_bytes: 100 },
      { check: 'write', path: join(root, 'capped.txt'), content: 'x' },
    );
    expect(capped?.output).toEqual({ wrote: false, code: 'EROFS' });
    // `allow` globs cannot be enforced by a mount: nothing is mounted, the broker serves.
    const globbed = await stepOf(
      { roots: ['./work'], allow: ['*.txt'] },
      { check: 'read', path: join(root, 'in.txt') },
    );
    expect(globbed?.status).toBe('failed');
    expect(globbed?.error?.message).toMatch(/ENOENT/);
  });
});

describe('supervision: every end of a container ends only its step, and removes it', () => {
  it("the step's timeout removes its container at once", async () => {
    const rt = containerRuntime();
    rt.registerAgent(agent('sleeper', 'sleeper', 2_500));
    const result = await rt.invoke('sleeper', 'zzz');
    expect(result.status).toBe('timeout');
    expect(await axonContainers()).toEqual([]);
  });

  it('a cancel removes its container at once', async () => {
    const rt = containerRuntime();
    rt.registerAgent(agent('sleeper'));
    const ctx = rt.createContext();
    const pending = rt.invoke('sleeper', 'zzz', ctx);
    // Running its step: the container started, and its program is up.
    await until(async () => (await axonContainers()).length === 1);
    await new Promise((r) => setTimeout(r, 1_500));
    ctx.cancel(new CancelledError('enough'));
    const result = await pending;
    expect(result.error?.code).toBe('CANCELLED');
    expect(await axonContainers()).toEqual([]);
  });

  it('a container whose program exits ends its step WORKER_RESET with the exit code and its stderr', async () => {
    const rt = containerRuntime();
    rt.registerAgent(agent('crasher'));
    rt.registerAgent(agent('echo'));
    const result = await rt.invoke('crasher', 'go');
    expect(result.error?.code).toBe('WORKER_RESET');
    expect(result.error?.details).toMatchObject({ cause: 'exit', exit_code: 3 });
    expect(String(result.error?.details['stderr'])).toContain('about to exit');
    // Only its step: the runtime goes on.
    expect((await rt.invoke('echo', 'still here')).status).toBe('success');
  });

  it('a container that writes a message about another step is removed: WORKER_RESET protocol', async () => {
    const rt = containerRuntime();
    rt.registerAgent(agent('forger'));
    const result = await rt.invoke('forger', 'go');
    expect(result.error?.code).toBe('WORKER_RESET');
    expect(result.error?.details).toMatchObject({ cause: 'protocol' });
    expect(await axonContainers()).toEqual([]);
  });

  it('a message about another step on the link itself (its own descriptor) is refused the same way', async () => {
    const rt = containerRuntime();
    rt.registerAgent(agent('linkForger'));
    const result = await rt.invoke('linkForger', 'go');
    expect(result.error?.code).toBe('WORKER_RESET');
    expect(result.error?.details).toMatchObject({ cause: 'protocol' });
    expect(String(result.error?.details['stderr'])).toContain('items for a step it does not run');
    expect(await axonContainers()).toEqual([]);
  });

  it('a container that makes too many host calls at once is removed: WORKER_RESET protocol', async () => {
    const rt = containerRuntime();
    rt.registerAgent(agent('flooder'));
    // A tool that answers only once its step is over: the container's calls pile up unanswered
    // however fast the host reads them (a tool the host refuses at once could keep up).
    rt.registerTool(
      defineTool({
        name: 'hold',
        description: 'answers when its step ends',
        input: z.object({}),
        handler: (_args, ctx) =>
          new Promise((resolve) => {
            ctx.signal.addEventListener(
              'abort',
              () => {
                resolve('released');
              },
              { once: true },
            );
            setTimeout(() => {
              resolve('timed out');
            }, 20_000).unref();
          }),
      }),
    );
    const result = await rt.invoke('flooder', 'go');
    expect(result.error?.code).toBe('WORKER_RESET');
    expect(result.error?.details).toMatchObject({ cause: 'protocol' });
    expect(String(result.error?.details['stderr'])).toContain(
      `more than ${MAX_PENDING_CALLS} host calls at once`,
    );
    expect(await axonContainers()).toEqual([]);
  });

  it('a container that sends its step items past its credit is removed: WORKER_RESET protocol, none of them streamed', async () => {
    const rt = containerRuntime();
    rt.registerAgent(agent('overrunner'));
    const tokensOf = async (args: Record<string, unknown>) => {
      const tokens: string[] = [];
      const stream = rt.stream('overrunner', { message: '', args });
      for await (const { event } of stream) if (event.type === 'token') tokens.push(event.t);
      return { tokens, result: await stream.result };
    };
    // Its whole credit in one message is taken: the line is the protocol's, the bound is its.
    const within = await tokensOf({ items: WORKER_STREAM_CREDIT, waitMs: 0 });
    expect(within.result).toMatchObject({ status: 'success', output: 'forged' });
    expect(within.tokens).toHaveLength(WORKER_STREAM_CREDIT);
    // One item more is a broken protocol.
    const past = await tokensOf({ items: WORKER_STREAM_CREDIT + 1 });
    expect(past.result.status).toBe('error');
    expect(past.result.error?.code).toBe('WORKER_RESET');
    expect(past.result.error?.details).toMatchObject({ cause: 'protocol' });
    expect(String(past.result.error?.details['stderr'])).toContain(
      `${WORKER_STREAM_CREDIT + 1} items with a credit of ${WORKER_STREAM_CREDIT}`,
    );
    expect(past.tokens).toEqual([]);
    expect(await axonContainers()).toEqual([]);
  });

  it.each([
    ['a method the host does not have', { method: 'exec', step: 'own' }, '"exec"'],
    ['a call for another step', { method: 'callTool', step: 'step_0someone0else' }, '"callTool"'],
  ])(
    'a container that makes a call it may not make (%s) is removed: WORKER_RESET protocol, nothing run',
    async (_what, call, named) => {
      const rt = containerRuntime();
      rt.registerAgent(agent('trespasser'));
      let added = 0;
      rt.registerTool(
        defineTool({
          name: 'add',
          description: 'sum',
          input: z.object({ a: z.number(), b: z.number() }),
          handler: ({ a, b }) => {
            added += 1;
            return a + b;
          },
        }),
      );
      // The same line for its own step is a call it may make: the tool runs.
      const allowed = await rt.invoke('trespasser', {
        message: '',
        args: { method: 'callTool', step: 'own', waitMs: 0 },
      });
      expect(allowed).toMatchObject({ status: 'success', output: 'forged' });
      await expect.poll(() => added).toBe(1);
      const result = await rt.invoke('trespasser', { message: '', args: call });
      expect(result.status).toBe('error');
      expect(result.error?.code).toBe('WORKER_RESET');
      expect(result.error?.details).toMatchObject({ cause: 'protocol' });
      expect(String(result.error?.details['stderr'])).toContain(
        `a call it may not make (${named})`,
      );
      expect(added).toBe(1);
      expect(await axonContainers()).toEqual([]);
    },
  );

  it('a container agent that keeps dying opens its breaker: the next step starts no container', async () => {
    const rt = containerRuntime({}, { breakers: { failureThreshold: 2, recoveryMs: 60_000 } });
    rt.registerAgent(agent('crasher'));
    for (let i = 0; i < 2; i++) {
      expect((await rt.invoke('crasher', 'go')).error?.code).toBe('WORKER_RESET');
    }
    const refused = await rt.invoke('crasher', 'go');
    expect(refused.error?.code).toBe('POOL_UNAVAILABLE');
    expect(refused.error?.message).toMatch(/circuit breaker for agent:crasher is open/);
    expect(await axonContainers()).toEqual([]);
  });

  it('warm containers start when the agent is registered, and its step runs in one of them', async () => {
    const rt = containerRuntime({ warm: 1 });
    rt.registerAgent(agent('echo'));
    // Before any step: one container, started for the agent.
    await until(async () => (await axonContainers()).length === 1);
    const engine = await testEngine();
    const [warm] = await engine.list('axon.behaviour=agent.echo');
    const result = await rt.invoke<{ host: string; steps: number }>('echo', 'warm');
    expect(result.output?.steps).toBe(1);
    // It ran there: the container's host name is its id, which the engine names it by.
    const { stdout } = await exec(engine.name, [
      'inspect',
      '--format={{.Config.Hostname}}',
      warm as string,
    ]);
    expect(stdout.trim()).toBe(result.output?.host);
  });

  it('a close does not wait for ever on a container whose engine client stopped: the client is killed, nothing is left', async () => {
    const rt = containerRuntime({ warm: 1 });
    rt.registerAgent(agent('echo'));
    await until(async () => (await axonContainers()).length === 1);
    const [name] = await axonContainers();
    // The engine's client of the spare container (`podman run …` / `docker run …`), stopped:
    // it will never exit, nor close its streams, by itself.
    const { stdout } = await exec('pgrep', ['-f', `^(podman|docker) .*${name as string}`]);
    const clients = stdout.trim().split('\n').map(Number);
    expect(clients).toHaveLength(1);
    process.kill(clients[0] as number, 'SIGSTOP');
    // Closed (the test's own timeout is the bound: before, this waited for ever).
    await rt.close();
    expect(await axonContainers()).toEqual([]);
    const alive = await exec('pgrep', ['-f', `^(podman|docker) .*${name as string}`]).then(
      () => true,
      () => false,
    );
    expect(alive).toBe(false);
  });

  it('reuse: false runs each step in a container of its own, removed after it', async () => {
    const rt = containerRuntime({ reuse: false });
    rt.registerAgent(agent('echo'));
    const a = await rt.invoke<{ host: string; steps: number }>('echo', 'one');
    const b = await rt.invoke<{ host: string; steps: number }>('echo', 'two');
    expect(a.output?.steps).toBe(1);
    expect(b.output?.steps).toBe(1);
    expect(a.output?.host).not.toBe(b.output?.host);
    await until(async () => (await axonContainers()).length === 0);
  });
});

describe('nothing left behind', () => {
  it('a runtime removes the containers a killed process of this host left', async () => {
    const engine = await testEngine();
    // A container as a process that is gone (no pid 4194304 runs: past Linux's pid_max) left it.
    const orphan = 'axon-gone0000-p4194304-1';
    await exec(engine.name, [
      'create',
      `--name=${orphan}`,
      '--label=axon.pool=gone0000',
      `--label=axon.host=${hostname()}`,
      '--pull=never',
      image,
      'node',
      '-e',
      '0',
    ]);
    const all = (): Promise<string[]> => engine.list('axon.pool');
    expect(await all()).toContain(orphan);
    const rt = containerRuntime();
    await rt.checkContainers();
    expect(await all()).not.toContain(orphan);
  });
});

describe('what is missing is said, not guessed', () => {
  it('an image that does not exist: POOL_UNAVAILABLE naming axon image build', async () => {
    const rt = containerRuntime({ image: 'localhost/axon-no-such-image:1' });
    rt.registerAgent(agent('echo'));
    const result = await rt.invoke('echo', 'x');
    expect(result.error?.code).toBe('POOL_UNAVAILABLE');
    expect(result.error?.message).toMatch(/axon image build/);
    expect(await axonContainers()).toEqual([]);
  });

  it('an engine that does not work: POOL_UNAVAILABLE saying what to install', async () => {
    // docker with no daemon at the address it is given (installed or not, running or not).
    const daemon = process.env['DOCKER_HOST'];
    process.env['DOCKER_HOST'] = `unix://${join(tmpdir(), 'axon-no-docker-daemon.sock')}`;
    try {
      const rt = containerRuntime({ engine: 'docker' });
      rt.registerAgent(agent('echo'));
      const result = await rt.invoke('echo', 'x');
      expect(result.error?.code).toBe('POOL_UNAVAILABLE');
      expect(result.error?.message).toMatch(/no container engine \(`docker` .*\)\. Install podman/);
    } finally {
      if (daemon === undefined) delete process.env['DOCKER_HOST'];
      else process.env['DOCKER_HOST'] = daemon;
    }
  });
});
