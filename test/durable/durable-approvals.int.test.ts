/**
 * A durable agent's call that needs approval (issues 6 and 46): the message waits — stored,
 * nothing in memory — in its actor's mailbox; `approve` runs it again in its actor (its earlier
 * calls served from the run's recording, the approved call made once, the state it returns
 * kept, the next queued message handled after it); `reject` fails the message with
 * POLICY_DENIED unless the handler catches the refusal; and a runtime started again on the
 * same store goes on with a decision taken before it stopped (POLICY-3002).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { ActorTurn } from '../../src/actors/durable-agent.js';
import { PolicyDeniedError } from '../../src/errors/policy-denied-error.js';
import { configuredPolicy } from '../../src/policy/configured-policy.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import type { RunStore } from '../../src/store/run-store.js';
import { sqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { quietRuntime } from '../support/runtime.js';
import { until } from './durable-fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'axon-durable-approvals-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** What the world saw: each deploy made, each time a handler ran. */
interface Counts {
  deploys: string[];
  handlerRuns: number;
}

/**
 * A runtime with durable agent `releaser` (state: the versions it deployed), whose handler
 * calls tool `deploy` — which `ops` must approve — and, for a message `{ careful: true }`,
 * catches a rejection and keeps it in its state.
 */
function setup(store: RunStore, counts: Counts): Runtime {
  const deploy = defineTool({
    name: 'deploy',
    description: 'Deploys a version',
    input: z.strictObject({ version: z.string() }),
    handler: ({ version }) => {
      counts.deploys.push(version);
      return { deployed: version };
    },
  });
  const state = z.object({ deployed: z.array(z.string()), refused: z.array(z.string()) });
  const releaser = defineAgent({
    name: 'releaser',
    input: z.strictObject({ version: z.string(), careful: z.boolean().optional() }),
    durable: {
      state,
      initial: { deployed: [], refused: [] },
      version: 1,
    },
    handler: async (message, actor, runtime): Promise<ActorTurn<z.infer<typeof state>>> => {
      counts.handlerRuns++;
      const r = await runtime.callTool<{ deployed: string }>(
        'deploy',
        { version: message.version },
        actor.ctx,
      );
      if (r.error) {
        if (message.careful && r.error instanceof PolicyDeniedError) {
          const refused = [...actor.state.refused, message.version];
          return { state: { ...actor.state, refused }, output: { refused: message.version } };
        }
        throw r.error;
      }
      const deployed = [...actor.state.deployed, r.output?.deployed ?? '?'];
      return { state: { ...actor.state, deployed }, output: { deployed: message.version } };
    },
  });
  return quietRuntime({
    store,
    agents: [releaser],
    tools: [deploy],
    policy: configuredPolicy({ approvals: { tools: { deploy: ['ops'] } } }),
  });
}

const stepStatus = async (rt: Runtime, stepId: string): Promise<string | undefined> =>
  (await rt.getStep(stepId))?.status;

/** The one pending approval of the actor's run, once it is there. */
async function pendingOf(rt: Runtime, runId: string): Promise<string> {
  let id = '';
  await until(async () => {
    const pending = (await rt.listApprovals(runId)).filter((a) => a.status === 'pending');
    id = pending[0]?.approval_id ?? '';
    return pending.length === 1;
  });
  return id;
}

describe.each([
  ['memory', (): RunStore => memoryStore()],
  ['sqlite', (): RunStore => sqliteStore(join(dir, `${randomUUID()}.db`))],
])('a durable message waiting for approval, on the %s store', (_name, makeStore) => {
  it('waits in its mailbox, the next message queued behind it; approve goes on in the actor: the call made once, its state kept, then the next', async () => {
    const counts: Counts = { deploys: [], handlerRuns: 0 };
    const rt = setup(makeStore(), counts);
    const actor = rt.actor<{ version: string }, { deployed: string[] }>('releaser', 'svc');
    const first = await actor.send({ version: 'v1' });
    const second = await actor.send({ version: 'v2' });
    const approvalId = await pendingOf(rt, first.run_id);
    await until(async () => (await stepStatus(rt, first.step_id)) === 'waiting');
    await until(async () => (await actor.state())?.status === 'waiting');
    expect(await stepStatus(rt, second.step_id)).toBe('queued');
    expect(counts.deploys).toEqual([]);

    const decided = await rt.approve(approvalId, { by: 'ops' });
    expect(decided.approval.status).toBe('approved');
    // The message goes on in its actor, not as a step of its own.
    expect(decided.step).toBeNull();
    await until(async () => (await stepStatus(rt, first.step_id)) === 'succeeded');
    expect((await rt.getStep(first.step_id))?.output).toEqual({ deployed: 'v1' });
    // The second message asks for its own approval, after the first ended.
    const next = await pendingOf(rt, first.run_id);
    expect(next).not.toBe(approvalId);
    expect((await actor.state())?.state).toEqual({ deployed: ['v1'], refused: [] });
    await rt.approve(next, { by: 'ops' });
    await until(async () => (await stepStatus(rt, second.step_id)) === 'succeeded');
    expect(counts.deploys).toEqual(['v1', 'v2']);
    // Each message ran twice: up to its approval, then again from its log once approved.
    expect(counts.handlerRuns).toBe(4);
    expect((await actor.state())?.state).toEqual({ deployed: ['v1', 'v2'], refused: [] });
    await until(async () => (await actor.state())?.status !== 'waiting');
    await rt.close();
  });

  it('reject fails the message POLICY_DENIED, the state kept; a handler that catches the refusal keeps it in its state', async () => {
    const counts: Counts = { deploys: [], handlerRuns: 0 };
    const rt = setup(makeStore(), counts);
    const actor = rt.actor<{ version: string; careful?: boolean }>('releaser', 'r');
    const plain = await actor.send({ version: 'v1' });
    const rejected = await rt.reject(await pendingOf(rt, plain.run_id), {
      by: 'ops',
      reason: 'freeze',
    });
    expect(rejected.step).toBeNull();
    await until(async () => (await stepStatus(rt, plain.step_id)) === 'failed');
    expect((await rt.getStep(plain.step_id))?.error).toMatchObject({ code: 'POLICY_DENIED' });
    expect((await rt.getStep(plain.step_id))?.error?.message).toContain('freeze');

    const careful = await actor.send({ version: 'v2', careful: true });
    await rt.reject(await pendingOf(rt, careful.run_id), { by: 'ops' });
    await until(async () => (await stepStatus(rt, careful.step_id)) === 'succeeded');
    expect((await rt.getStep(careful.step_id))?.output).toEqual({ refused: 'v2' });
    expect((await actor.state())?.state).toEqual({ deployed: [], refused: ['v2'] });
    expect(counts.deploys).toEqual([]);
    await rt.close();
  });
});

describe('a decision and a restart (SQLite)', () => {
  it('a runtime started again goes on with a message approved while none ran it', async () => {
    const file = join(dir, `${randomUUID()}.db`);
    const counts: Counts = { deploys: [], handlerRuns: 0 };
    const before = setup(sqliteStore(file), counts);
    const sent = await before.actor('releaser', 'k').send({ version: 'v9' });
    const approvalId = await pendingOf(before, sent.run_id);
    await until(async () => (await stepStatus(before, sent.step_id)) === 'waiting');
    await before.close();

    // Decided on a runtime without the agent registered, then one with it starts.
    const decider = quietRuntime({ store: sqliteStore(file) });
    await decider.approve(approvalId, { by: 'ops' });
    await decider.close();
    expect(counts.deploys).toEqual([]);

    const after = setup(sqliteStore(file), counts);
    await after.recoverActors();
    await until(async () => (await stepStatus(after, sent.step_id)) === 'succeeded');
    expect(counts.deploys).toEqual(['v9']);
    expect((await after.actor('releaser', 'k').state())?.state).toEqual({
      deployed: ['v9'],
      refused: [],
    });
    await after.close();
  });
});
