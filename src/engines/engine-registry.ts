/**
 * @module The engines of a runtime, by name: the scripted engine is always there (API.md's
 * embedded defaults), an OpenAI-compatible one when the environment names an endpoint.
 */
import { ConflictError } from '../errors/conflict-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import type { Engine } from './chat-request.js';
import { createOpenAIEngine } from './openai-engine.js';
import { loadPriceTable } from './price-table.js';
import { createScriptedEngine } from './scripted-engine.js';

/** The engine of `llm_call` and `llm_plan` steps that name none. */
export const DEFAULT_ENGINE = 'scripted';

/** A runtime's engines by name. */
export class EngineRegistry {
  readonly #engines = new Map<string, Engine>();

  /** Registers an engine; a second engine of the same name is refused with `ConflictError`. */
  register(engine: Engine): void {
    const candidate = engine as Partial<Engine> | null;
    if (typeof candidate?.name !== 'string' || typeof candidate.stream !== 'function') {
      throw new TypeError('registerEngine: expected an Engine (a name and a stream method)');
    }
    if (this.#engines.has(engine.name)) {
      throw new ConflictError(`an engine named "${engine.name}" is already registered`);
    }
    this.#engines.set(engine.name, engine);
  }

  has(name: string): boolean {
    return this.#engines.has(name);
  }

  /** The engine named `name`; `NotFoundError` when there is none. */
  get(name: string): Engine {
    const engine = this.#engines.get(name);
    if (!engine) throw new NotFoundError('engine', name);
    return engine;
  }

  /** Registered engines' names, in registration order. */
  names(): string[] {
    return [...this.#engines.keys()];
  }
}

/**
 * The engines the environment asks for (API.md): an OpenAI-compatible engine named `openai`
 * when `AXON_ENGINE_URL` is set, with `AXON_ENGINE_KEY` and `AXON_ENGINE_MODEL` (default
 * `gpt-4o-mini`), priced from `AXON_PRICE_TABLE` (a YAML or JSON file added to the shipped
 * table, see `loadPriceTable`) when that is set.
 */
export function enginesFromEnv(env: NodeJS.ProcessEnv = process.env): Engine[] {
  const url = env['AXON_ENGINE_URL'];
  if (!url) return [];
  const prices = env['AXON_PRICE_TABLE'];
  return [
    createOpenAIEngine({
      baseURL: url,
      model: env['AXON_ENGINE_MODEL'] ?? 'gpt-4o-mini',
      ...(env['AXON_ENGINE_KEY'] ? { apiKey: env['AXON_ENGINE_KEY'] } : {}),
      ...(prices ? { priceTable: loadPriceTable(prices) } : {}),
    }),
  ];
}

/**
 * A registry holding `engines`, then whatever the environment adds, then the scripted
 * engine — each only if no engine of its name came before it.
 */
export function createEngineRegistry(
  engines: readonly Engine[],
  env: NodeJS.ProcessEnv = process.env,
): EngineRegistry {
  const registry = new EngineRegistry();
  for (const engine of engines) registry.register(engine);
  for (const engine of enginesFromEnv(env)) {
    if (!registry.has(engine.name)) registry.register(engine);
  }
  if (!registry.has(DEFAULT_ENGINE)) registry.register(createScriptedEngine());
  return registry;
}
