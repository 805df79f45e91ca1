import { describe, expect, it } from 'vitest';
import { ActorSystem, type InspectionEvent } from '../../src/actors/actor-system.js';
import { defineAgent } from '../../src/actors/define-agent.js';
import { createSequentialIdSource } from '../../src/context/id-source.js';
import { quietRuntime } from '../support/runtime.js';

const echo = defineAgent({ name: 'echo', handler: (i) => i.message });

describe('the actor system', () => {
  it('registers agent actors by id and step actors while they run', async () => {
    const runtime = quietRuntime({ agents: [echo], ids: createSequentialIdSource() });
    expect(runtime.system.get('agent:echo')).toMatchObject({ kind: 'agent', name: 'echo' });
    const registered: string[] = [];
    runtime.system.inspect((e) => {
      if (e.type === 'actor.registered') registered.push(`${e.kind}:${e.name}`);
    });
    await runtime.invoke('echo', 'x');
    expect(registered).toEqual(['step:echo']);
    expect(runtime.system.list('step')).toHaveLength(0);
    const spawned = runtime.spawnAgent('echo', 'session-42');
    expect(runtime.system.get('session-42')?.ref).toBe(spawned);
  });

  it('inspection sees messages and state changes of every actor through one subscription', async () => {
    const runtime = quietRuntime({ agents: [echo] });
    const events: InspectionEvent[] = [];
    const stop = runtime.system.inspect((e) => events.push(e));
    await runtime.invoke('echo', 'x');
    // Reading the statistics delivers the batched invocation message to the agent actor.
    expect(runtime.agentStats('echo').totalCalls).toBe(1);
    const messages = events.flatMap((e) => (e.type === 'actor.event' ? [e.event.type] : []));
    expect(messages).toEqual(expect.arrayContaining(['START', 'END', 'INVOCATIONS']));
    const states = events.flatMap((e) => (e.type === 'actor.snapshot' ? [String(e.value)] : []));
    expect(states).toEqual(expect.arrayContaining(['running', 'succeeded', 'idle']));
    stop();
    const before = events.length;
    await runtime.invoke('echo', 'y');
    expect(events.length).toBe(before);
  });

  it('an observer that throws is isolated and counted; the run and other observers carry on', async () => {
    const runtime = quietRuntime({ agents: [echo] });
    let calls = 0;
    runtime.system.inspect(() => {
      throw new Error('bad observer');
    });
    runtime.system.inspect(() => {
      calls++;
    });
    await expect(runtime.invoke('echo', 'x')).resolves.toMatchObject({ status: 'success' });
    expect(calls).toBeGreaterThan(0);
    expect(runtime.system.observerFailures).toBe(calls);
  });

  it('uses the injected clock and id source', () => {
    const ids = createSequentialIdSource();
    const system = new ActorSystem({ ids });
    expect(system.ids.id('step')).toBe('step_1');
  });
});
