/**
 * `runtime.memory` for agents, inline and in worker threads, bound to the calling context's
 * scopes; stores are `store_memory` actions the policy sees (checkpoint 3).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import { PolicyDeniedError } from '../../src/errors/policy-denied-error.js';
import { createMemory } from '../../src/memory/memory-config.js';
import { ALLOW, deny, type PolicyEngine } from '../../src/policy/policy-engine.js';
import { quietRuntime } from '../support/runtime.js';

const dir = mkdtempSync(join(tmpdir(), 'axon-rt-memory-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});
const fixtures = new URL('../fixtures/worker-agents.ts', import.meta.url).href;

const inline = defineAgent({
  name: 'inline-rememberer',
  handler: async (input, ctx, runtime) => {
    await runtime.memory.store({ content: input.message, tier: 'warm', scope: 'user' }, ctx);
    return (await runtime.memory.recall(input.message, ctx)).facts;
  },
});
const worker = defineAgent({
  name: 'worker-rememberer',
  placement: 'worker',
  module: fixtures,
  export: 'rememberer',
});

function runtime(policy?: PolicyEngine) {
  return quietRuntime({
    agents: [inline, worker],
    memory: createMemory({ warm: { backend: 'sqlite', path: join(dir, `${randomUUID()}.db`) } }),
    workers: { maxThreads: 1 },
    ...(policy ? { policy } : {}),
  });
}

describe('runtime.memory', () => {
  it.each(['inline-rememberer', 'worker-rememberer'])(
    '%s stores and recalls under its user; another user recalls nothing of it',
    async (agent) => {
      const rt = runtime();
      const alice = await rt.invoke<string[]>(
        agent,
        'alice parks in bay seven',
        rt.createContext({ userId: 'alice' }),
      );
      expect(alice.status).toBe('success');
      expect(alice.output).toEqual(['alice parks in bay seven']);

      const bob = await rt.invoke<string[]>(
        agent,
        'bob parks in bay nine',
        rt.createContext({ userId: 'bob' }),
      );
      expect(bob.output).toEqual(['bob parks in bay nine']);
      const later = await rt.memory.recall('parks bay', rt.createContext({ userId: 'alice' }));
      expect(later.facts).toEqual(['alice parks in bay seven']);
      await rt.close();
    },
  );

  it('a worker-placed agent recalls by tags, and sees where each item came from', async () => {
    const rt = quietRuntime({
      agents: [
        defineAgent({
          name: 'tagger',
          placement: 'worker',
          module: fixtures,
          export: 'taggedRememberer',
        }),
      ],
      memory: createMemory({ warm: { backend: 'sqlite', path: join(dir, `${randomUUID()}.db`) } }),
      workers: { maxThreads: 1 },
    });
    const r = await rt.invoke<string[]>(
      'tagger',
      'carol parks in bay two',
      rt.createContext({ userId: 'carol' }),
    );
    expect(r.output).toEqual(['worker: carol parks in bay two']);
    await rt.close();
  });

  it('a store is a store_memory action: a policy refusing it keeps it out of memory', async () => {
    const refuse: PolicyEngine = {
      name: 'no-memory',
      evaluate: (action) =>
        Promise.resolve(
          action.kind === 'store_memory'
            ? deny('memory.off', 'memory is off for this tenant')
            : ALLOW,
        ),
      record: () => Promise.resolve(),
    };
    const rt = runtime(refuse);
    const r = await rt.invoke('inline-rememberer', 'secret', rt.createContext({ userId: 'ann' }));
    expect(r.status).toBe('error');
    expect(r.error).toBeInstanceOf(PolicyDeniedError);
    expect(r.error?.details).toMatchObject({ rule: 'memory.off' });
    const m = await rt.memory.recall('secret', rt.createContext({ userId: 'ann' }));
    expect(m.facts).toEqual([]);
    await rt.close();
  });
});
