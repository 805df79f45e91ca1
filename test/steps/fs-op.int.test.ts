import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { PolicyDeniedError } from '../../src/errors/policy-denied-error.js';
import { ALLOW, deny, type PolicyEngine } from '../../src/policy/policy-engine.js';
import { sqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { quietRuntime } from '../support/runtime.js';

const dir = mkdtempSync(join(tmpdir(), 'axon-fsop-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});
const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
});
let n = 0;

const fsUser = defineAgent({
  name: 'fs-user',
  placement: 'worker',
  module: new URL('../fixtures/worker-agents.ts', import.meta.url).href,
  export: 'fsUser',
});
const inlineUser = defineAgent({
  name: 'inline-user',
  handler: async (input, ctx, runtime) => {
    await runtime.fs({ op: 'write', path: 'inline.md', content: input.message }, ctx);
    return runtime.fs({ op: 'list', path: '.' }, ctx);
  },
});

function setup(
  store = undefined as ReturnType<typeof sqliteStore> | undefined,
  dataDir = join(dir, `data-${++n}`),
  policy?: PolicyEngine,
) {
  const rt = quietRuntime({
    dataDir,
    agents: [fsUser, inlineUser],
    workers: { maxThreads: 1 },
    ...(store ? { store } : {}),
    ...(policy ? { policy } : {}),
  });
  runtimes.push(rt);
  return { rt, dataDir };
}

async function run(rt: Runtime, fsPolicy: object | null) {
  const { flow } = await rt.createFlow({ name: 'fs' });
  const created = await rt.createRun(flow.flow_id, fsPolicy ? { fs_policy: fsPolicy } : {});
  const submit = async (body: object) => {
    const s = await rt.submitStep(created.run_id, body);
    await s.done;
    const step = await rt.getStep(s.step_id);
    if (!step) throw new Error('no step');
    return step;
  };
  return { runId: created.run_id, submit };
}

const op = (o: string, path: string, content?: string): object => ({
  type: 'fs_op',
  input: { op: o, path, ...(content === undefined ? {} : { content }) },
});

describe('fs_op steps through the FS broker of the run (API.md, POLICY-3001)', () => {
  it("write, read, list, stat and delete under the run's sandbox, each a step with API.md's output", async () => {
    const { rt, dataDir } = setup();
    const { submit } = await run(rt, { roots: ['./work'], allow: ['**/*.md'] });
    expect(await submit(op('write', 'plan.md', '# Plan'))).toMatchObject({
      type: 'fs_op',
      status: 'succeeded',
      output: { bytes: 6 },
    });
    expect(readFileSync(join(dataDir, 'sandbox', 'work', 'plan.md'), 'utf8')).toBe('# Plan');
    expect((await submit(op('read', 'plan.md'))).output).toEqual({ content: '# Plan' });
    expect((await submit(op('list', '.'))).output).toEqual({
      entries: [{ name: 'plan.md', type: 'file', size: 6 }],
    });
    expect((await submit(op('stat', 'plan.md'))).output).toMatchObject({ type: 'file', size: 6 });
    expect((await submit(op('delete', 'plan.md'))).output).toEqual({ deleted: true });
    expect((await submit(op('read', 'plan.md'))).error).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('a refused path ends the step POLICY_DENIED with an escalation, and touches nothing', async () => {
    const { rt, dataDir } = setup();
    const outside = join(dir, `outside-${n}`);
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(outside, 'secret.txt'), 'secret');
    const { submit } = await run(rt, { roots: ['./work'] });
    await submit(op('write', 'ok.txt', 'ok'));
    symlinkSync(outside, join(dataDir, 'sandbox', 'work', 'door'));
    for (const [path, rule] of [
      ['../../etc/passwd', 'fs.roots'],
      [join(outside, 'secret.txt'), 'fs.roots'],
      ['door/secret.txt', 'fs.symlink'],
    ] as const) {
      const step = await submit(op('read', path));
      expect(step).toMatchObject({
        status: 'failed',
        error: { code: 'POLICY_DENIED', details: { rule } },
      });
      const events = await rt.readStepEvents(step.step_id);
      expect(events.map((e) => e.type)).toEqual(['started', 'escalation', 'error']);
    }
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('secret');
  });

  it("checkpoint 3: the runtime's policy refuses an fs_op before the broker runs it", async () => {
    const asked: string[] = [];
    const noSecrets: PolicyEngine = {
      name: 'no-secrets',
      evaluate: (action) => {
        if (action.kind === 'fs_op')
          asked.push(`${String(action.metadata?.['op'])} ${action.target}`);
        return Promise.resolve(
          action.kind === 'fs_op' && action.target.startsWith('secrets/')
            ? deny('fs.secrets', 'secrets are off limits')
            : ALLOW,
        );
      },
      record: () => Promise.resolve(),
    };
    const { rt, dataDir } = setup(undefined, undefined, noSecrets);
    const { submit } = await run(rt, { roots: ['./work'] });

    const refused = await submit(op('write', 'secrets/key.txt', 'k'));
    expect(refused).toMatchObject({ status: 'failed', error: { code: 'POLICY_DENIED' } });
    expect(existsSync(join(dataDir, 'sandbox', 'work', 'secrets'))).toBe(false);
    const events = await rt.readStepEvents(refused.step_id);
    expect(events.find((e) => e.type === 'escalation')).toMatchObject({
      target: 'fs_op:secrets/key.txt',
    });
    expect((await submit(op('write', 'notes.txt', 'n'))).status).toBe('succeeded');
    expect(asked).toEqual(['write secrets/key.txt', 'write notes.txt']);
  });

  it("the run's quota counts every write of the run, also across a restart", async () => {
    const file = join(dir, `quota-${++n}.db`);
    const dataDir = join(dir, `data-quota-${n}`);
    const first = setup(sqliteStore(file), dataDir).rt;
    const { runId, submit } = await run(first, { roots: ['q'], quota_bytes: 10 });
    expect((await submit(op('write', 'a.txt', '123456'))).status).toBe('succeeded');
    await first.close();

    const second = setup(sqliteStore(file), dataDir).rt;
    const again = async (body: object) => {
      const s = await second.submitStep(runId, body);
      await s.done;
      return second.getStep(s.step_id);
    };
    expect(await again(op('write', 'b.txt', '12345'))).toMatchObject({
      status: 'failed',
      error: { code: 'POLICY_DENIED', details: { reason: 'quota', written_bytes: 6 } },
    });
    expect(existsSync(join(dataDir, 'sandbox', 'q', 'b.txt'))).toBe(false);
    expect((await again(op('write', 'b.txt', '1234')))?.status).toBe('succeeded');
  });

  it('a run without an fs_policy refuses file operations; a bad input is SCHEMA_VIOLATION', async () => {
    const { rt } = setup();
    const { submit } = await run(rt, null);
    expect((await submit(op('read', 'x'))).error).toMatchObject({
      code: 'POLICY_DENIED',
      details: { rule: 'fs.policy' },
    });
    expect(
      (await submit({ type: 'fs_op', input: { op: 'chmod', path: 'x' } })).error,
    ).toMatchObject({ code: 'SCHEMA_VIOLATION' });
  });
});

describe('runtime.fs for agents', () => {
  it('an inline agent reads and writes through the broker as fs_op child steps', async () => {
    const { rt } = setup();
    const { runId, submit } = await run(rt, { roots: ['w'] });
    const step = await submit({ type: 'agent', input: { agent: 'inline-user', message: 'hello' } });
    expect(step.output).toEqual({ entries: [{ name: 'inline.md', type: 'file', size: 5 }] });
    const types = (await rt.listSteps(runId)).map((s) => `${s.type} ${s.name}`);
    expect(types).toEqual(['agent inline-user', 'fs_op fs write', 'fs_op fs list']);
  });

  it('a worker-placed agent goes through the host broker; a refusal reaches it as PolicyDeniedError', async () => {
    const { rt, dataDir } = setup();
    const { submit } = await run(rt, { roots: ['w'], allow: ['*.md'] });
    const ok = await submit({
      type: 'agent',
      input: { agent: 'fs-user', message: 'from a thread', args: { path: 'n.md' } },
    });
    expect(ok.output).toEqual({ written: { bytes: 13 }, read: { content: 'from a thread' } });
    expect(readFileSync(join(dataDir, 'sandbox', 'w', 'n.md'), 'utf8')).toBe('from a thread');
    const refused = await submit({
      type: 'agent',
      input: { agent: 'fs-user', message: 'x', args: { path: 'n.sh' } },
    });
    expect(refused.error).toMatchObject({ code: 'POLICY_DENIED', details: { rule: 'fs.allow' } });
    expect(existsSync(join(dataDir, 'sandbox', 'w', 'n.sh'))).toBe(false);
    const direct = await rt
      .fs({ op: 'read', path: 'n.sh' }, rt.createContext())
      .catch((e: unknown) => e);
    expect(direct).toBeInstanceOf(PolicyDeniedError);
  });
});
