/**
 * Thread leases on a fleet (two API processes' engines on one Redis): an engine leaves a
 * thread that another live engine drives — it neither resumes nor kills it, however long
 * the thread runs — takes at once a thread whose engine stopped cleanly, and takes over,
 * once its lease ran out, a thread whose engine died.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { followThread } from '../../src/workflows/thread-stream.js';
import { defineWorkflow, END } from '../../src/workflows/workflow-definition.js';
import { WorkflowEngine } from '../../src/workflows/workflow-engine.js';
import { useInProcessFleets } from '../support/fleet-inprocess.js';

import { endEngines } from '../support/workflows.js';

// First: its hooks close the runtimes after this file's own hooks ended the engines.
const fleets = useInProcessFleets('wf-leases');
const engines: WorkflowEngine[] = [];
afterEach(async () => {
  await endEngines(engines);
});

const LEASE_MS = 150;
const slow = defineWorkflow({
  name: 'slow',
  roles: { a: { kind: 'engine', prompt: 'Talk.', maxTokens: 12 } },
  moderator: (t) => (t.turns.length >= 3 ? END : 'a'),
});

async function engineOf(prefix: string): Promise<{ rt: Runtime; engine: WorkflowEngine }> {
  // No replica: every turn of `slow` runs in its engine's process, so its runs need no pool.
  const rt = await fleets.api(prefix, { engines: [createScriptedEngine({ tokenDelayMs: 20 })] });
  const engine = new WorkflowEngine(rt, [slow], { leaseMs: LEASE_MS });
  engines.push(engine);
  return { rt, engine };
}

async function statuses(rt: Runtime, threadId: string): Promise<string[]> {
  const facts = await rt.listFacts(threadId, { type: 'axon.thread' });
  return facts.map((f) => (f.data as { status: string }).status);
}

async function firstToken(engine: WorkflowEngine, threadId: string): Promise<void> {
  for await (const f of followThread(engine, threadId)) {
    if (f.kind === 'turn_event' && f.event.type === 'token') return;
  }
}

describe('thread leases on a fleet', () => {
  it('an engine leaves a thread another live engine drives: no resume, no kill, however long it runs', async () => {
    const prefix = fleets.prefix();
    const a = await engineOf(prefix);
    const b = await engineOf(prefix);
    const t = await a.engine.trigger('slow', 'go');
    await firstToken(a.engine, t.thread_id);
    const recovered = await b.engine.recover();
    expect(recovered).toEqual({ resumed: [], crashed: [], requeued: [], elsewhere: [t.thread_id] });
    await expect(b.engine.kill(t.thread_id)).rejects.toMatchObject({
      code: 'CONFLICT',
      message: expect.stringMatching(/driven by another engine/) as unknown,
    });
    // Three turns of twelve 20 ms tokens: several lease times, renewed all along, while B
    // keeps looking for threads to take every lease time.
    const done = await a.engine.wait(t.thread_id);
    expect(done.status).toBe('completed');
    expect(done.turns).toHaveLength(3);
    expect(await statuses(a.rt, t.thread_id)).toEqual(['queued', 'started', 'completed']);
  });

  it('takes at once a thread whose engine stopped cleanly, and after its lease ran out one whose engine died', async () => {
    const prefix = fleets.prefix();
    const a = await engineOf(prefix);
    const b = await engineOf(prefix);
    const clean = await a.engine.trigger('slow', 'go');
    await firstToken(a.engine, clean.thread_id);
    // A stops: the thread stays started, its lease let go.
    await a.engine.close();
    expect((await b.engine.recover()).resumed).toEqual([clean.thread_id]);
    expect((await b.engine.wait(clean.thread_id)).status).toBe('completed');

    const c = await engineOf(prefix);
    const died = await c.engine.trigger('slow', 'go');
    await firstToken(c.engine, died.thread_id);
    await c.engine.close();
    // As if C had died holding it: the lease is someone's until it runs out.
    await c.rt.leases.acquire(`thread:${died.thread_id}`, 'a-dead-engine', 3 * LEASE_MS);
    expect((await b.engine.recover()).elsewhere).toEqual([died.thread_id]);
    // B's sweep (every lease time) takes it once the lease ran out.
    const ended = await waitForEnd(b, died.thread_id);
    expect(ended).toBe('completed');
    expect(await statuses(b.rt, died.thread_id)).toEqual([
      'queued',
      'started',
      'crashed',
      'started',
      'completed',
    ]);
  });
});

/** Waits (polling the store) until thread `id` ends; its status. */
async function waitForEnd(e: { rt: Runtime; engine: WorkflowEngine }, id: string): Promise<string> {
  for (let i = 0; i < 200; i++) {
    const t = await e.engine.thread(id);
    // Not `crashed`: a takeover notes it just before the thread is `started` again.
    if (t && ['completed', 'failed', 'killed'].includes(t.status)) return t.status;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`thread ${id} did not end`);
}
