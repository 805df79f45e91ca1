/**
 * Where a role's turns run (issue 21, "a role may carry placement"): on a worker thread of
 * the engine's process (`'worker'`, the thread importing the workflow by its module and
 * export), or queued on a fleet pool (`{ pool }`) and run by a replica over a real Redis —
 * with inline roles of the same thread still run by the engine's own process. Kill reaches a
 * turn on a replica; a pool nobody serves fails the thread with `POOL_UNAVAILABLE`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import type { FleetWorker } from '../../src/fleet/fleet-worker.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { StepRecord } from '../../src/store/records.js';
import type { StepEvent } from '../../src/streams/events.js';
import { followThread } from '../../src/workflows/thread-stream.js';
import { workflowAgents } from '../../src/workflows/turn-agent.js';
import type { WorkflowDefinition } from '../../src/workflows/workflow-definition.js';
import { WorkflowEngine } from '../../src/workflows/workflow-engine.js';
import { placed, pooled, whereSchema } from '../fixtures/placed-workflow.js';
import { useInProcessFleets } from '../support/fleet-inprocess.js';
import { quietRuntime } from '../support/runtime.js';
import { endEngines } from '../support/workflows.js';

// First: its hooks stop the replicas and runtimes after this file's own hooks ended the threads.
const fleets = useInProcessFleets('wf-placement');
const engines: WorkflowEngine[] = [];
const runtimes: Runtime[] = [];

afterEach(async () => {
  await endEngines(engines);
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
});

function engineOn(rt: Runtime, workflows: readonly WorkflowDefinition[]): WorkflowEngine {
  const e = new WorkflowEngine(rt, workflows);
  engines.push(e);
  return e;
}

async function stepsOf(rt: Runtime, threadId: string): Promise<StepRecord[]> {
  return (await rt.listSteps(threadId)).filter((s) => s.parent_step_id === null);
}

async function startedOf(rt: Runtime, stepId: string): Promise<StepEvent | undefined> {
  return (await rt.store.readEvents(stepId)).find((e) => e.type === 'started');
}

describe("placement 'worker'", () => {
  it('runs the role on a worker thread that imported the workflow, its model tokens streaming into the turn', async () => {
    const rt = quietRuntime({
      workers: { maxThreads: 1 },
      engines: [createScriptedEngine({ script: () => 'written on a worker' })],
    });
    runtimes.push(rt);
    const engine = engineOn(rt, [placed]);
    const t = await engine.wait((await engine.trigger('placed', 'go')).thread_id);
    expect(t.status).toBe('completed');
    expect(t.turns.map((x) => x.role)).toEqual(['locator', 'writer', 'here']);
    const locator = whereSchema.parse(t.turns[0]?.output);
    const here = whereSchema.parse(t.turns[2]?.output);
    expect(locator.main).toBe(false);
    expect(here.main).toBe(true);
    expect(t.turns[1]?.output).toBe('written on a worker');
    const steps = await stepsOf(rt, t.thread_id);
    expect(steps.map((s) => s.placement)).toEqual(['worker', 'worker', 'inline']);
    // The engine role's model call went back to the host; its tokens are the turn's.
    const tokens = (await rt.store.readEvents(steps[1]?.step_id ?? ''))
      .flatMap((e) => (e.type === 'token' ? [e.t] : []))
      .join('');
    expect(tokens).toBe('written on a worker');
  });

  it('is refused without the module and export a worker thread imports the workflow from, and they without a worker role', async () => {
    const { defineWorkflow, END } = await import('../../src/workflows/workflow-definition.js');
    const base = { name: 'w', moderator: () => END };
    expect(() =>
      defineWorkflow({
        ...base,
        roles: { a: { kind: 'engine', prompt: 'p', placement: 'worker' } },
      }),
    ).toThrow(/role "a" runs on a worker thread.*give module/);
    expect(() =>
      defineWorkflow({
        ...base,
        roles: { a: { kind: 'engine', prompt: 'p', placement: 'worker' } },
        module: import.meta.url,
      }),
    ).toThrow(/give export/);
    expect(() =>
      defineWorkflow({
        ...base,
        roles: { a: { kind: 'engine', prompt: 'p' } },
        module: import.meta.url,
        export: 'x',
      }),
    ).toThrow(/module and export are only for roles placed on "worker"/);
    expect(() =>
      defineWorkflow({
        ...base,
        roles: { a: { kind: 'engine', prompt: 'p', placement: 'gpu' as 'worker' } },
      }),
    ).toThrow(/placement must be "inline", "worker" or \{ pool/);
  });

  it('a workflow export that is not there fails the turn, naming it', async () => {
    const { defineWorkflow, END } = await import('../../src/workflows/workflow-definition.js');
    const rt = quietRuntime({ workers: { maxThreads: 1 } });
    runtimes.push(rt);
    const wrong = defineWorkflow({
      name: 'wrong',
      roles: { a: { kind: 'engine', prompt: 'p', placement: 'worker' } },
      moderator: (t) => (t.turns.length === 0 ? 'a' : END),
      module: new URL('../fixtures/placed-workflow.ts', import.meta.url).href,
      // `placed` has no role agent workflow.wrong.a
      export: 'placed',
    });
    const engine = engineOn(rt, [wrong]);
    const t = await engine.wait((await engine.trigger('wrong', 'go')).thread_id);
    expect(t.status).toBe('failed');
    expect(t.error?.message).toMatch(
      /export "placed" of .* has no handler for agent workflow\.wrong\.a/,
    );
  });
});

describe('placement { pool } on a fleet', () => {
  function replica(prefix: string, pool: string, tokenDelayMs = 0): Promise<FleetWorker> {
    return fleets.replica(prefix, pool, {
      runtime: {
        agents: workflowAgents(pooled(pool)),
        engines: [
          createScriptedEngine({
            tokenDelayMs,
            script: () => `reviewed on the ${pool} replica, at some length`,
          }),
        ],
      },
    });
  }
  const { prefix: fleetPrefix, api } = fleets;

  it("queues the pool's turns on it, where a replica runs them, while inline turns stay in the engine's process", async () => {
    const prefix = fleetPrefix();
    const gpu = await replica(prefix, 'gpu');
    const rt = await api(prefix);
    const engine = engineOn(rt, [pooled()]);
    const t = await engine.wait((await engine.trigger('pooled', 'review this')).thread_id);
    expect(t.status).toBe('completed');
    expect(t.turns.map((x) => x.role)).toEqual(['here', 'remote', 'here', 'remote']);
    expect(t.turns[1]?.output).toBe('reviewed on the gpu replica, at some length');
    const steps = await stepsOf(rt, t.thread_id);
    expect(steps.map((s) => s.placement)).toEqual(['inline', 'pool', 'inline', 'pool']);
    for (const s of steps.filter((x) => x.placement === 'pool')) {
      expect(s.placement_decision).toMatchObject({ pool_id: 'gpu', policy: 'pin' });
      expect(await startedOf(rt, s.step_id)).toMatchObject({
        pool_id: 'gpu',
        replica_id: gpu.replicaId,
      });
    }
    for (const s of steps.filter((x) => x.placement === 'inline')) {
      expect((await startedOf(rt, s.step_id)) as unknown).not.toMatchObject({
        replica_id: gpu.replicaId,
      });
    }
    // The replica's turn sees the thread so far: the inline turn before it.
    expect(whereSchema.parse(t.turns[2]?.output).turn).toBe(3);
  });

  it('kill cancels a turn running on a replica, and the thread ends killed', async () => {
    const prefix = fleetPrefix();
    await replica(prefix, 'gpu', 40);
    const rt = await api(prefix);
    const engine = engineOn(rt, [pooled()]);
    const t = await engine.trigger('pooled', 'review this');
    for await (const f of followThread(engine, t.thread_id)) {
      if (f.kind === 'turn_event' && f.turn === 2 && f.event.type === 'token') break;
    }
    const killed = await engine.kill(t.thread_id);
    expect(killed.status).toBe('killed');
    expect(killed.turns[1]?.status).toBe('cancelled');
    const steps = await stepsOf(rt, t.thread_id);
    const last = (await rt.store.readEvents(steps[1]?.step_id ?? '')).at(-1);
    expect(last).toMatchObject({ type: 'error', code: 'CANCELLED' });
  });

  it('a pool nobody serves fails the thread at that turn with POOL_UNAVAILABLE', async () => {
    const prefix = fleetPrefix();
    await replica(prefix, 'gpu');
    const rt = await api(prefix);
    const engine = engineOn(rt, [pooled('tpu')]);
    const t = await engine.wait((await engine.trigger('pooled', 'review this')).thread_id);
    expect(t.status).toBe('failed');
    expect(t.end_reason).toBe('turn_failed');
    expect(t.error).toMatchObject({ code: 'POOL_UNAVAILABLE' });
    expect(t.error?.message).toMatch(/pool "tpu" is pinned but there is no such pool/);
    // The inline turn before it ran.
    expect(t.turns.map((x) => [x.role, x.status])).toEqual([['here', 'succeeded']]);
  });

  it('a workflow with a pool role is refused on a runtime without a fleet', () => {
    const rt = quietRuntime();
    runtimes.push(rt);
    expect(() => engineOn(rt, [pooled()])).toThrow(
      /role "remote" is placed on a pool, and this runtime has no fleet/,
    );
  });
});
