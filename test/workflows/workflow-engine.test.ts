/**
 * Workflows (seed 001's Nerve on axon's runs): the moderator steers roles' turns; a thread is
 * a durable run; kill, overflow, max rounds, replay.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRole } from '../../src/adapters/create-role.js';
import type { ChatRequest } from '../../src/engines/chat-request.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import type { Runtime, RuntimeOptions } from '../../src/runtime/runtime.js';
import {
  defineWorkflow,
  END,
  type ThreadSoFar,
  type WorkflowSpec,
} from '../../src/workflows/workflow-definition.js';
import { WorkflowEngine } from '../../src/workflows/workflow-engine.js';
import { quietRuntime } from '../support/runtime.js';

const engines: WorkflowEngine[] = [];
const runtimes: Runtime[] = [];
afterEach(async () => {
  for (const e of engines.splice(0)) {
    for (const t of await e.threads({ status: ['queued', 'started'] })) {
      await e.kill(t.thread_id).catch(() => undefined);
    }
    await e.close();
  }
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
});

/** The coder writes version n; the reviewer approves version 3. */
function coderReviewerScript(request: ChatRequest): string {
  const system = request.messages.find((m) => m.role === 'system')?.content ?? '';
  const user = request.messages.find((m) => m.role === 'user')?.content ?? '';
  const versions = (user.match(/## coder/g) ?? []).length;
  if (system.startsWith('You write')) return `code v${versions + 1}`;
  return versions >= 3 ? 'APPROVED' : `fix v${versions}`;
}

const alternate = (t: ThreadSoFar): string => {
  const last = t.turns.at(-1);
  if (last?.raw === 'APPROVED') return END;
  return last?.role === 'coder' ? 'reviewer' : 'coder';
};

function setup(
  spec: Partial<WorkflowSpec> = {},
  options: RuntimeOptions = {},
  tokenDelayMs = 0,
): { rt: Runtime; engine: WorkflowEngine; asked: ChatRequest[] } {
  const asked: ChatRequest[] = [];
  const rt = quietRuntime({
    engines: [
      createScriptedEngine({
        tokenDelayMs,
        script: (r) => {
          asked.push(r);
          return coderReviewerScript(r);
        },
      }),
    ],
    ...options,
  });
  runtimes.push(rt);
  const workflow = defineWorkflow({
    name: 'review',
    roles: {
      coder: { kind: 'engine', prompt: 'You write code.' },
      reviewer: { kind: 'engine', prompt: 'You review code. Answer APPROVED when it is good.' },
    },
    moderator: alternate,
    maxRounds: 10,
    ...spec,
  });
  const engine = new WorkflowEngine(rt, [workflow]);
  engines.push(engine);
  return { rt, engine, asked };
}

describe('a workflow thread', () => {
  it('runs the roles the moderator names until END; each turn is a step of the thread’s run', async () => {
    const { rt, engine } = setup();
    const started = await engine.trigger('review', 'Add a README');
    expect(['queued', 'started']).toContain(started.status);
    const t = await engine.wait(started.thread_id);
    expect(t.status).toBe('completed');
    expect(t.end_reason).toBe('end');
    expect(t.turns.map((x) => `${x.role}:${x.raw}`)).toEqual([
      'coder:code v1',
      'reviewer:fix v1',
      'coder:code v2',
      'reviewer:fix v2',
      'coder:code v3',
      'reviewer:APPROVED',
    ]);
    expect(t.rounds).toBe(6);
    expect((await rt.getRun(t.thread_id))?.status).toBe('completed');
    const steps = await rt.listSteps(t.thread_id);
    expect(steps.map((s) => s.client_token)).toEqual(t.turns.map((x) => `turn-${x.n}`));
  });

  it('ends a thread that does not converge at maxRounds, with its own reason', async () => {
    const { engine } = setup({ maxRounds: 3, moderator: () => 'coder' });
    const t = await engine.wait((await engine.trigger('review', 'x')).thread_id);
    expect(t.status).toBe('completed');
    expect(t.end_reason).toBe('max_rounds');
    expect(t.turns).toHaveLength(3);
  });

  it('fails a thread whose moderator names no role, or throws', async () => {
    const { engine } = setup({ moderator: () => 'tester' });
    const t = await engine.wait((await engine.trigger('review', 'x')).thread_id);
    expect(t).toMatchObject({ status: 'failed', end_reason: 'unknown_role' });
    expect(t.error?.message).toMatch(/tester/);
  });

  it('types each turn’s output with the role’s schema, for the moderator', async () => {
    const seen: unknown[] = [];
    const verdict = z.object({ approved: z.boolean() });
    const rt = quietRuntime({
      engines: [createScriptedEngine({ tokenDelayMs: 0, script: () => '{"approved": true}' })],
    });
    runtimes.push(rt);
    const engine = new WorkflowEngine(rt, [
      defineWorkflow({
        name: 'typed',
        roles: { judge: { kind: 'engine', prompt: 'Judge.', schema: verdict } },
        moderator: (t) => {
          seen.push(t.turns.at(-1)?.output);
          return t.turns.length === 0 ? 'judge' : END;
        },
      }),
    ]);
    engines.push(engine);
    const t = await engine.wait((await engine.trigger('typed', 'x')).thread_id);
    expect(t.turns[0]?.output).toEqual({ approved: true });
    expect(seen).toEqual([undefined, { approved: true }]);
  });

  it('runs a createRole role over an adapter', async () => {
    const rt = quietRuntime();
    runtimes.push(rt);
    const echo = createRole(
      async (thread) => JSON.stringify({ words: thread.start.split(' ').length }),
      'Count the words.',
      z.object({ words: z.number() }),
    );
    const engine = new WorkflowEngine(rt, [
      defineWorkflow({
        name: 'count',
        roles: { counter: { role: echo } },
        moderator: (t) => (t.turns.length === 0 ? 'counter' : END),
      }),
    ]);
    engines.push(engine);
    const t = await engine.wait((await engine.trigger('count', 'one two three')).thread_id);
    expect(t.turns[0]?.output).toEqual({ words: 3 });
  });
});

describe('defineWorkflow', () => {
  it('refuses what it cannot run, naming it', () => {
    const base = {
      name: 'w',
      roles: { a: { kind: 'engine' as const, prompt: 'p' } },
      moderator: () => END,
    };
    expect(() => defineWorkflow({ ...base, name: 'Bad Name' })).toThrow(/name/);
    expect(() => defineWorkflow({ ...base, roles: {} })).toThrow(/at least one role/);
    expect(() => defineWorkflow({ ...base, maxRounds: 0 })).toThrow(/maxRounds/);
    expect(() => defineWorkflow({ ...base, concurrency: { overflow: 'spill' as 'drop' } })).toThrow(
      /overflow/,
    );
    expect(() =>
      defineWorkflow({
        ...base,
        roles: { a: { kind: 'engine', prompt: 'p', placement: 'worker' } },
      }),
    ).toThrow(/not implemented yet/);
    expect(() => defineWorkflow({ ...base, extra: 1 } as WorkflowSpec)).toThrow(
      /unknown option extra/,
    );
  });
});
