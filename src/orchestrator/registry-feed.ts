/**
 * @module What the front door tells its registry: the runtime's agents and function tools
 * (read again only when the runtime's catalog changed), each call's outcome and duration,
 * and an agent's health as its circuit breaker has it.
 */
import type { AgentResult } from '../actors/agent-result.js';
import { isTurnAgent } from '../workflows/turn-agent.js';
import type { Runtime } from '../runtime/runtime.js';
import type { EntryHealth, Registry } from './registry.js';

/** A breaker's state as a registry's health: open → `unavailable`, half open → `degraded`. */
function healthOf(state: ReturnType<Runtime['breakerState']>): EntryHealth {
  return state === 'open' ? 'unavailable' : state === 'half_open' ? 'degraded' : 'healthy';
}

/** Keeps one registry current with one runtime; see the module. */
export class RegistryFeed {
  readonly #registry: Registry;
  readonly #runtime: Runtime;
  /** The runtime's catalog version last synced; -1 before the first sync. */
  #synced = -1;

  constructor(registry: Registry, runtime: Runtime) {
    this.#registry = registry;
    this.#runtime = runtime;
  }

  /** Adds the runtime's agents and function tools the registry lacks (`ensure`: kept as stored). */
  async sync(): Promise<void> {
    const version = this.#runtime.catalogVersion;
    if (version === this.#synced) return;
    for (const a of this.#runtime.listAgents()) {
      // A workflow role's agent takes a thread, not a message: not routable.
      if (isTurnAgent(a.name)) continue;
      await this.#registry.ensure({ name: a.name, kind: 'agent', description: a.description });
    }
    for (const t of this.#runtime.discoverTools()) {
      await this.#registry.ensure({
        name: t.name,
        kind: 'tool',
        description: t.description,
        schema: t.parameters,
        metadata: { requiredPermissions: t.requiredPermissions },
      });
    }
    this.#synced = version;
  }

  /** Counts `result` as a call of its agent, and sets the agent's health from its breaker. */
  async record(handler: string, result: AgentResult): Promise<void> {
    try {
      const entry = await this.#registry.recordCall(handler, 'agent', {
        ok: result.status === 'success',
        durationMs: result.durationMs,
        at: new Date(Date.now() - result.durationMs).toISOString(),
      });
      const health = healthOf(this.#runtime.breakerState(handler));
      if (entry.health !== health) await this.#registry.update(handler, 'agent', { health });
    } catch (err) {
      this.#runtime.logger.warn({ err, handler }, 'the registry could not count a call');
    }
  }
}
