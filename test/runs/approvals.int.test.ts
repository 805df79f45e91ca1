/**
 * Approvals, the human in the loop (issue 6): a call that needs approval suspends its
 * submitted step — persisted, not a waiting promise — and `approve` / `reject` resume or
 * fail it, also from another runtime on the same store after a restart (POLICY-3002 for the
 * escalation of a rejection).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { Engine } from '../../src/engines/chat-request.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { ConflictError } from '../../src/errors/conflict-error.js';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import { PolicyDeniedError } from '../../src/errors/policy-denied-error.js';
import { SchemaViolationError } from '../../src/errors/schema-violation-error.js';
import { configuredPolicy } from '../../src/policy/configured-policy.js';
import type { PolicyConfigInput } from '../../src/policy/policy-config.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import { redisStore } from '../../src/store/redis/redis-store.js';
import type { RunStore } from '../../src/store/run-store.js';
import { sqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { StepEvent } from '../../src/streams/events.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { clearRedisPrefix, redisUrl } from '../support/redis.js';
import { quietRuntime } from '../support/runtime.js';

const dir = mkdtempSync(join(tmpdir(), 'axon-approvals-'));
const redisBase = `axon-test:${randomUUID()}:`;
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await clearRedisPrefix(redisBase);
});

const APPROVE_DEPLOY: PolicyConfigInput = { approvals: { tools: { deploy: ['ops-lead', 'sre'] } } };

/** What the world saw: tool runs and engine calls, across every runtime of a test. */
interface Counts {
  deploys: string[];
  engineCalls: number;
  handlerRuns: number;
}

/**
 * A runtime with agent `deployer` (narrates, asks the engine, calls `deploy`, narrates
 * again) and agent `release`, which delegates to `deployer`.
 */
function setup(store: RunStore, counts: Counts, policy: PolicyConfigInput = APPROVE_DEPLOY) {
  const scripted = createScriptedEngine({ tokenDelayMs: 0 });
  const engine: Engine = {
    name: scripted.name,
    defaultModel: scripted.defaultModel,
    defaultMaxTokens: scripted.defaultMaxTokens,
    priceTable: scripted.priceTable,
    estimateTokensIn: (request) => scripted.estimateTokensIn(request),
    stream: (request, options) => {
      counts.engineCalls++;
      return scripted.stream(request, options);
    },
  };
  const deploy = defineTool({
    name: 'deploy',
    description: 'Deploys a version',
    input: z.strictObject({ version: z.string() }),
    handler: ({ version }) => {
      counts.deploys.push(version);
      return { deployed: version };
    },
  });
  const deployer = defineAgent({
    name: 'deployer',
    handler: async (input, ctx, runtime) => {
      counts.handlerRuns++;
      ctx.stream.emit({ type: 'narration', text: `preparing ${input.message}` });
      const plan = await runtime.chat(
        { messages: [{ role: 'user', content: input.message }], params: { max_tokens: 4 } },
        ctx,
      );
      const r = await runtime.callTool<{ deployed: string }>(
        'deploy',
        { version: input.message },
        ctx,
      );
      if (r.error) throw r.error;
      ctx.stream.emit({ type: 'narration', text: 'deployed' });
      return { plan: plan.text, deployed: r.output?.deployed ?? null };
    },
  });
  const release = defineAgent({
    name: 'release',
    handler: async (input, ctx, runtime) => {
      const r = await runtime.delegate<{ deployed: string }>('deployer', input, ctx);
      if (r.error) throw r.error;
      return r.output;
    },
  });
  return quietRuntime({
    store,
    agents: [deployer, release],
    tools: [deploy],
    engines: [engine],
    policy: configuredPolicy(policy),
  });
}

function newCounts(): Counts {
  return { deploys: [], engineCalls: 0, handlerRuns: 0 };
}

async function newRun(rt: Runtime): Promise<string> {
  const { flow } = await rt.createFlow({ name: 'release', ast: { id: randomUUID() } });
  return (await rt.createRun(flow.flow_id)).run_id;
}

const deployStep = (version: string, token = `d-${version}`) => ({
  type: 'agent',
  client_token: token,
  input: { agent: 'deployer', message: version },
});

const types = (events: readonly StepEvent[]): string[] => events.map((e) => e.type);
const narrations = (events: readonly StepEvent[]): string[] =>
  events.flatMap((e) => (e.type === 'narration' ? [e.text] : []));
const tokens = (events: readonly StepEvent[]): string =>
  events.flatMap((e) => (e.type === 'token' ? [e.t] : [])).join('');

describe.each([
  ['memory', (): RunStore => memoryStore()],
  ['sqlite', (): RunStore => sqliteStore(join(dir, `${randomUUID()}.db`))],
  [
    'redis',
    (): RunStore => redisStore({ url: redisUrl(), prefix: `${redisBase}${randomUUID()}:` }),
  ],
])('approvals on the %s store', (_name, makeStore) => {
  it('suspends the step with a narration naming the approvers; approve resumes the same step, nothing done twice', async () => {
    const counts = newCounts();
    const rt = setup(makeStore(), counts);
    const runId = await newRun(rt);

    const submitted = await rt.submitStep(runId, deployStep('v2'));
    await submitted.done;

    // Suspended: waiting, and so is its run; the call that needs approval has not run.
    expect((await rt.getStep(submitted.step_id))?.status).toBe('waiting');
    expect((await rt.getRun(runId))?.status).toBe('waiting');
    expect(counts.deploys).toEqual([]);
    const [pending, ...more] = await rt.listApprovals(runId);
    expect(more).toEqual([]);
    expect(pending).toMatchObject({
      status: 'pending',
      step_id: submitted.step_id,
      action: 'call_tool',
      target: 'deploy',
      approvers: ['ops-lead', 'sre'],
      rule: 'approvals.tools',
    });
    const before = await rt.readStepEvents(submitted.step_id);
    expect(types(before)).not.toContain('end');
    expect(types(before)).not.toContain('error');
    expect(narrations(before)).toEqual([
      'preparing v2',
      `waiting for approval ${pending?.approval_id}: call_tool "deploy" needs approval by ops-lead or sre (rule approvals.tools)`,
    ]);
    expect(counts.engineCalls).toBe(1);

    const decided = await rt.approve(pending?.approval_id ?? '', { by: 'sre', reason: 'go' });
    expect(decided.approval).toMatchObject({ status: 'approved', decided_by: 'sre', reason: 'go' });
    expect(decided.step?.step_id).toBe(submitted.step_id);
    await decided.step?.done;

    const step = await rt.getStep(submitted.step_id);
    expect(step?.status).toBe('succeeded');
    expect(counts.deploys).toEqual(['v2']);
    // The engine call made before the suspension was served from the run's recording.
    expect(counts.engineCalls).toBe(1);
    expect(counts.handlerRuns).toBe(2);
    const events = await rt.readStepEvents(submitted.step_id);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(types(events).filter((t) => t === 'started')).toHaveLength(1);
    expect(types(events).at(-1)).toBe('end');
    expect(narrations(events)).toEqual([...narrations(before), 'deployed']);
    const output = step?.output as { plan: string; deployed: string };
    expect(output.deployed).toBe('v2');
    // Each token once, in order: the stream is the answer.
    expect(tokens(events)).toBe(output.plan);
    expect(output.plan.length).toBeGreaterThan(0);
    // The run waits no more, and its usage counts the engine call once.
    const run = await rt.getRun(runId);
    expect(run?.status).toBe('running');
    expect(run?.budget_usage.tokens_out).toBe(step?.budget_usage.tokens_out);
    expect(step?.budget_usage.tokens_out).toBe(4);
    await expect(rt.approve(pending?.approval_id ?? '', { by: 'ops-lead' })).rejects.toBeInstanceOf(
      ConflictError,
    );
    await rt.close();
  });

  it('reject fails the step POLICY_DENIED after an escalation; the rejected call never runs', async () => {
    const counts = newCounts();
    const rt = setup(makeStore(), counts);
    const runId = await newRun(rt);
    const submitted = await rt.submitStep(runId, deployStep('v3'));
    await submitted.done;
    const [pending] = await rt.listApprovals(runId);

    const decided = await rt.reject(pending?.approval_id ?? '', {
      by: 'ops-lead',
      reason: 'change freeze',
    });

    expect(decided.step).toBeNull();
    expect(decided.approval).toMatchObject({ status: 'rejected', decided_by: 'ops-lead' });
    const step = await rt.getStep(submitted.step_id);
    expect(step?.status).toBe('failed');
    expect(step?.error).toMatchObject({ code: 'POLICY_DENIED', retriable: false });
    expect(step?.error?.message).toContain('rejected by ops-lead: change freeze');
    const events = await rt.readStepEvents(submitted.step_id);
    expect(types(events).slice(-2)).toEqual(['escalation', 'error']);
    expect(events.at(-2)).toMatchObject({ target: 'call_tool:deploy' });
    expect(counts.deploys).toEqual([]);
    expect(counts.handlerRuns).toBe(1);
    expect((await rt.getRun(runId))?.status).toBe('running');
    await rt.close();
  });
});

describe('approvals', () => {
  it('go on after a restart: another runtime on the same SQLite file approves and resumes the step', async () => {
    const db = join(dir, `${randomUUID()}.db`);
    const counts = newCounts();
    const first = setup(sqliteStore(db), counts);
    const runId = await newRun(first);
    const submitted = await first.submitStep(runId, deployStep('v4'));
    await submitted.done;
    const [pending] = await first.listApprovals(runId);
    await first.close();

    const second = setup(sqliteStore(db), counts);
    expect((await second.getRun(runId))?.status).toBe('waiting');
    const { step } = await second.approve(pending?.approval_id ?? '', { by: 'ops-lead' });
    await step?.done;

    const done = await second.getStep(submitted.step_id);
    expect(done?.status).toBe('succeeded');
    expect(counts.deploys).toEqual(['v4']);
    expect(counts.engineCalls).toBe(1);
    expect(types(await second.readStepEvents(submitted.step_id)).at(-1)).toBe('end');
    await second.close();
  });

  it('a decision stored by a runtime that stopped before acting on it is acted on by resumeRun', async () => {
    const db = join(dir, `${randomUUID()}.db`);
    const counts = newCounts();
    const first = setup(sqliteStore(db), counts);
    const runId = await newRun(first);
    const submitted = await first.submitStep(runId, deployStep('v5'));
    await submitted.done;
    const [pending] = await first.listApprovals(runId);
    // The decision reached the store; the process stopped before it resumed the step.
    await first.store.decideApproval(pending?.approval_id ?? '', {
      status: 'approved',
      decided_by: 'sre',
      reason: null,
      decided_at: new Date().toISOString(),
    });
    await first.close();

    const second = setup(sqliteStore(db), counts);
    const [resumed] = await second.resumeRuns();
    expect(resumed?.decided.map((d) => d.step_id)).toEqual([submitted.step_id]);
    await resumed?.decided[0]?.step?.done;

    expect((await second.getStep(submitted.step_id))?.status).toBe('succeeded');
    expect(counts.deploys).toEqual(['v5']);
    await second.close();
  });

  it('suspends the submitted step when a delegated agent asks; its child step is cancelled and made again', async () => {
    const counts = newCounts();
    const rt = setup(memoryStore(), counts);
    const runId = await newRun(rt);
    const submitted = await rt.submitStep(runId, {
      type: 'agent',
      client_token: 'rel-1',
      input: { agent: 'release', message: 'v6' },
    });
    await submitted.done;

    const [pending] = await rt.listApprovals(runId);
    expect(pending).toMatchObject({ step_id: submitted.step_id, actor_path: ['deployer'] });
    const firstChild = (await rt.listSteps(runId)).find((s) => s.name === 'deployer');
    expect(firstChild?.status).toBe('cancelled');
    expect(narrations(await rt.readStepEvents(submitted.step_id))).toHaveLength(1);

    const { step } = await rt.approve(pending?.approval_id ?? '', { by: 'ops-lead' });
    await step?.done;

    const root = await rt.getStep(submitted.step_id);
    expect(root?.status).toBe('succeeded');
    expect(root?.output).toMatchObject({ deployed: 'v6' });
    expect(counts.deploys).toEqual(['v6']);
    expect(counts.engineCalls).toBe(1);
    const children = (await rt.listSteps(runId)).filter((s) => s.name === 'deployer');
    expect(children.map((s) => s.status)).toEqual(['cancelled', 'succeeded']);
    await rt.close();
  });

  it('a tool_call step waits for its approval and then calls the tool once', async () => {
    const counts = newCounts();
    const rt = setup(memoryStore(), counts);
    const runId = await newRun(rt);
    const submitted = await rt.submitStep(runId, {
      type: 'tool_call',
      client_token: 't-1',
      input: { tool: 'deploy', args: { version: 'v11' } },
    });
    await submitted.done;
    expect((await rt.getStep(submitted.step_id))?.status).toBe('waiting');
    expect(counts.deploys).toEqual([]);

    const [pending] = await rt.listApprovals(runId);
    const { step } = await rt.approve(pending?.approval_id ?? '', { by: 'sre' });
    await step?.done;

    const done = await rt.getStep(submitted.step_id);
    expect(done?.status).toBe('succeeded');
    expect(done?.output).toEqual({ deployed: 'v11' });
    expect(counts.deploys).toEqual(['v11']);
    // Submitting the token again finds the step and runs nothing.
    const again = await rt.submitStep(runId, {
      type: 'tool_call',
      client_token: 't-1',
      input: { tool: 'deploy', args: { version: 'v11' } },
    });
    expect(again).toMatchObject({ created: false, step_id: submitted.step_id });
    expect(counts.deploys).toEqual(['v11']);
    await rt.close();
  });

  it('an agent that needs approval before invocation does not run until approved', async () => {
    const counts = newCounts();
    const rt = setup(memoryStore(), counts, {
      approvals: { agents: { deployer: ['ops-lead'] } },
    });
    const runId = await newRun(rt);
    const submitted = await rt.submitStep(runId, deployStep('v7'));
    await submitted.done;

    expect(counts.handlerRuns).toBe(0);
    const [pending] = await rt.listApprovals(runId);
    expect(pending).toMatchObject({ action: 'invoke_agent', target: 'deployer' });
    const { step } = await rt.approve(pending?.approval_id ?? '', { by: 'ops-lead' });
    await step?.done;

    expect(counts.handlerRuns).toBe(1);
    expect(counts.deploys).toEqual(['v7']);
    expect((await rt.getStep(submitted.step_id))?.status).toBe('succeeded');
    await rt.close();
  });

  it('refuses a decision by someone who is not an approver, a bad body and an unknown approval', async () => {
    const counts = newCounts();
    const rt = setup(memoryStore(), counts);
    const runId = await newRun(rt);
    await (
      await rt.submitStep(runId, deployStep('v8'))
    ).done;
    const [pending] = await rt.listApprovals(runId);
    const id = pending?.approval_id ?? '';

    const stranger = await rt.approve(id, { by: 'mallory' }).catch((e: unknown) => e);
    expect(stranger).toBeInstanceOf(PolicyDeniedError);
    expect(stranger).toMatchObject({ details: { approvers: ['ops-lead', 'sre'] } });
    await expect(rt.approve(id, { who: 'sre' })).rejects.toBeInstanceOf(SchemaViolationError);
    await expect(rt.reject('apr_nope', { by: 'sre' })).rejects.toBeInstanceOf(NotFoundError);
    expect((await rt.getApproval(id))?.status).toBe('pending');
    expect(counts.deploys).toEqual([]);
    await rt.close();
  });

  it('a call that needs approval outside a submitted step with a client token is refused, not suspended', async () => {
    const counts = newCounts();
    const rt = setup(memoryStore(), counts);

    const invoked = await rt.invoke('deployer', 'v9');
    expect(invoked.status).toBe('error');
    expect(invoked.error).toBeInstanceOf(PolicyDeniedError);
    expect(invoked.error?.details).toMatchObject({ approvers: ['ops-lead', 'sre'] });

    const runId = await newRun(rt);
    const noToken = await rt.submitStep(runId, {
      type: 'agent',
      input: { agent: 'deployer', message: 'v9' },
    });
    await noToken.done;
    const step = await rt.getStep(noToken.step_id);
    expect(step?.status).toBe('failed');
    expect(step?.error?.code).toBe('POLICY_DENIED');
    expect(await rt.listApprovals(runId)).toEqual([]);
    expect(counts.deploys).toEqual([]);
    await rt.close();
  });

  it("redacts configured fields from the suspended step's stored snapshot", async () => {
    const store = memoryStore();
    const leaky = defineAgent({
      name: 'leaky',
      handler: async (_input, ctx, runtime) => {
        ctx.stream.emit({ type: 'tool_suggest', tool: 'deploy', args: { password: 'hunter2' } });
        return runtime.callTool('deploy', { version: 'v12' }, ctx);
      },
    });
    const rt = quietRuntime({
      store,
      agents: [leaky],
      tools: [
        defineTool({
          name: 'deploy',
          description: 'Deploys',
          input: z.strictObject({ version: z.string() }),
          handler: () => 'ok',
        }),
      ],
      policy: configuredPolicy(APPROVE_DEPLOY),
      redact: ['password'],
    });
    const runId = await newRun(rt);
    await (
      await rt.submitStep(runId, {
        type: 'agent',
        client_token: 'l-1',
        input: { agent: 'leaky', message: 'x' },
      })
    ).done;

    const [pending] = await store.listApprovals(runId);
    expect(pending?.status).toBe('pending');
    expect(JSON.stringify(pending?.snapshot)).toContain('[REDACTED]');
    expect(JSON.stringify(await store.listApprovals(runId))).not.toContain('hunter2');
    await rt.close();
  });

  it('cancelling the one waiting step ends it CANCELLED and the run runs again: it can complete', async () => {
    const counts = newCounts();
    const rt = setup(memoryStore(), counts);
    const runId = await newRun(rt);
    const first = await rt.submitStep(runId, deployStep('v13'));
    await first.done;
    const second = await rt.submitStep(runId, deployStep('v14'));
    await second.done;
    expect((await rt.getRun(runId))?.status).toBe('waiting');

    await rt.cancelStep(first.step_id);
    // Another step still waits: so does the run.
    expect((await rt.getRun(runId))?.status).toBe('waiting');
    await rt.cancelStep(second.step_id);

    expect((await rt.getStep(first.step_id))?.status).toBe('cancelled');
    expect((await rt.getRun(runId))?.status).toBe('running');
    expect((await rt.completeRun(runId)).status).toBe('completed');
    expect(counts.deploys).toEqual([]);
    await rt.close();
  });

  it('cancelling a waiting run ends its waiting step CANCELLED; the approval can no longer resume it', async () => {
    const counts = newCounts();
    const rt = setup(memoryStore(), counts);
    const runId = await newRun(rt);
    const submitted = await rt.submitStep(runId, deployStep('v10'));
    await submitted.done;
    const [pending] = await rt.listApprovals(runId);

    const { done } = await rt.cancelRun(runId);
    await done;

    expect((await rt.getRun(runId))?.status).toBe('cancelled');
    expect((await rt.getStep(submitted.step_id))?.status).toBe('cancelled');
    const events = await rt.readStepEvents(submitted.step_id);
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'CANCELLED' });
    await expect(rt.approve(pending?.approval_id ?? '', { by: 'sre' })).rejects.toBeInstanceOf(
      ConflictError,
    );
    expect(counts.deploys).toEqual([]);
    await rt.close();
  });
});
