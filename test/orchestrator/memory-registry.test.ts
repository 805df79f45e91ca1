import { describe, expect, it } from 'vitest';
import { createContext } from '../../src/context/create-context.js';
import { createMemoryRegistry, MemoryRegistry } from '../../src/orchestrator/memory-registry.js';
import type { RegistryEntry } from '../../src/orchestrator/registry.js';
import { registryHandlers } from '../../src/orchestrator/registry-handlers.js';
import { describeRegistry } from './registry.conformance.js';

describeRegistry('memory', ({ clock }) => createMemoryRegistry({ clock }));

describe('memory registry', () => {
  it('stamps entries with the system clock when given none', async () => {
    const registry = createMemoryRegistry();
    const before = Date.now();
    const entry = await registry.register({ name: 'a', kind: 'agent', description: '' });
    const at = Date.parse(entry.registeredAt);
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(Date.now());
  });
});

describe('registryHandlers', () => {
  it("reads the registry's enabled, available agents at each call, by name, with their descriptions", async () => {
    const registry = createMemoryRegistry();
    const source = registryHandlers(registry);
    const ctx = createContext();
    expect(await source.handlers(ctx)).toEqual([]);

    await registry.register({ name: 'refunds', kind: 'agent', description: 'Money back' });
    await registry.register({ name: 'billing', kind: 'agent', description: 'Invoices' });
    await registry.register({
      name: 'slow',
      kind: 'agent',
      description: 'Degraded',
      health: 'degraded',
    });
    await registry.register({ name: 'off', kind: 'agent', description: 'Off', enabled: false });
    await registry.register({
      name: 'down',
      kind: 'agent',
      description: 'Down',
      health: 'unavailable',
    });
    await registry.register({ name: 'search', kind: 'tool', description: 'A tool' });
    await registry.register({ name: 'eyes', kind: 'sense', description: 'A sense' });

    // Registered since the last call: routable at once, nothing else to do.
    expect(await source.handlers(ctx)).toEqual([
      { name: 'billing', description: 'Invoices' },
      { name: 'refunds', description: 'Money back' },
      { name: 'slow', description: 'Degraded' },
    ]);

    await registry.update('billing', 'agent', { health: 'unavailable' });
    await registry.update('off', 'agent', { enabled: true, description: 'On again' });
    expect((await source.handlers(ctx)).map((h) => h.name)).toEqual(['off', 'refunds', 'slow']);
  });

  it('rejects when the registry does', async () => {
    class DownRegistry extends MemoryRegistry {
      override discover(): Promise<RegistryEntry[]> {
        return Promise.reject(new Error('registry down'));
      }
    }
    const source = registryHandlers(new DownRegistry());
    await expect(source.handlers(createContext())).rejects.toThrow('registry down');
  });
});
