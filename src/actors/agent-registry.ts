/**
 * @module A runtime's registered agents: each with its definition, its long-lived actor
 * (call statistics, idle or busy) and the batch that feeds the actor.
 */
import { createActor } from 'xstate';
import { ConflictError } from '../errors/conflict-error.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import type { ActorSystem } from './actor-system.js';
import { agentMachine, type AgentActor, type AgentStats } from './agent-machine.js';
import type { AgentDefinition, AgentTarget } from './agent-runtime.js';
import { AgentStatsBatch } from './agent-stats-batch.js';

/** An agent's call statistics and whether it is idle or busy (with how many calls). */
export type AgentSnapshot = AgentStats & {
  readonly state: 'idle' | 'busy';
  readonly active: number;
};

interface Entry {
  readonly def: AgentDefinition;
  readonly actor: AgentActor;
  readonly stats: AgentStatsBatch;
}

/** Agents by name, with their actors. */
export class AgentRegistry {
  readonly #system: ActorSystem;
  readonly #agents = new Map<string, Entry>();

  constructor(system: ActorSystem) {
    this.#system = system;
  }

  /** Registers an agent and starts its actor; a duplicate name is refused with `ConflictError`. */
  register(agent: AgentDefinition): void {
    if ((agent as Partial<AgentDefinition> | null)?.kind !== 'agent') {
      throw new TypeError('registerAgent: expected an agent definition from defineAgent()');
    }
    if (this.#agents.has(agent.name))
      throw new ConflictError(`an agent named "${agent.name}" is already registered`);
    const actor = this.spawn(agent.name, `agent:${agent.name}`);
    this.#agents.set(agent.name, {
      def: agent,
      actor,
      stats: new AgentStatsBatch(actor, this.#system.clock),
    });
  }

  /** Spawns an idle agent actor, registered in the actor system under `id`. */
  spawn(name: string, id: string): AgentActor {
    const actor = createActor(agentMachine, { id, input: { name } });
    actor.subscribe({
      error: (err) => {
        this.#system.reportFailure(id, err);
      },
    });
    actor.start();
    this.#system.register({ id, kind: 'agent', name, ref: actor });
    return actor;
  }

  /** The statistics batch of a registered agent. */
  stats(name: string): AgentStatsBatch | undefined {
    return this.#agents.get(name)?.stats;
  }

  /** Names and descriptions, in registration order. */
  list(): { readonly name: string; readonly description: string }[] {
    return [...this.#agents.values()].map(({ def }) => ({
      name: def.name,
      description: def.description,
    }));
  }

  /** The current statistics and state of a registered agent's actor. */
  snapshot(name: string): AgentSnapshot {
    const entry = this.#agents.get(name);
    if (!entry) throw new NotFoundError('agent', name);
    entry.stats.flush();
    const snap = entry.actor.getSnapshot();
    const { totalCalls, successes, failures, lastInvokedAt, avgDurationMs, active } = snap.context;
    return {
      state: snap.value,
      active,
      totalCalls,
      successes,
      failures,
      lastInvokedAt,
      avgDurationMs,
    };
  }

  /** The definition registered under `name`, if any. */
  get(name: string): AgentDefinition | undefined {
    return this.#agents.get(name)?.def;
  }

  /** The definition of a registered name, or a definition given directly. */
  resolve(agent: AgentTarget): AgentDefinition {
    if (typeof agent === 'string') {
      const entry = this.#agents.get(agent);
      if (!entry) throw new NotFoundError('agent', agent);
      return entry.def;
    }
    if (typeof agent !== 'object' || (agent as { kind?: unknown }).kind !== 'agent') {
      throw new InvalidParamsError(
        'agent must be a registered name or a definition from defineAgent',
        { param: 'agent' },
      );
    }
    return agent;
  }

  /** Delivers gathered statistics and stops every agent actor. */
  stop(): void {
    for (const { stats } of this.#agents.values()) stats.flush();
    for (const entry of this.#system.list('agent')) {
      entry.ref.stop();
      this.#system.unregister(entry.id);
    }
  }
}
