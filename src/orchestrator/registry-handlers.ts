/** @module A router's handlers read from a registry: its enabled, available agents. */
import type { ExecContext } from '../context/exec-context.js';
import type { Registry } from './registry.js';
import type { HandlerDescription, HandlerSource } from './route-result.js';

/**
 * The {@link HandlerSource} of `registry`: at each call, the agents `registry.discover('agent')`
 * finds (enabled, not `unavailable`), by name, with their descriptions. An agent registered,
 * disabled or marked unavailable since the last call is seen at once: nothing is cached.
 *
 * @example
 * const source = registryHandlers(registry);
 * await source.handlers(ctx); // [{ name: 'billing', description: 'Invoices and refunds' }]
 */
export function registryHandlers(registry: Registry): HandlerSource {
  return {
    async handlers(_ctx: ExecContext): Promise<readonly HandlerDescription[]> {
      const agents = await registry.discover('agent');
      return agents.map((a) => ({ name: a.name, description: a.description }));
    },
  };
}
