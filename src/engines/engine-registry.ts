/**
 * @module The engines of a runtime, by name: the scripted engine is always there (API.md's
 * embedded defaults), an OpenAI-compatible one when the environment names an endpoint; the
 * runtime's price table, when it has one, costs every engine priced from the shipped table.
 */
import { ConflictError } from '../errors/conflict-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { UnusedPriceTableError } from '../errors/unused-price-table-error.js';
import type { Engine } from './chat-request.js';
import { createOpenAIEngine } from './openai-engine.js';
import { checkPriceTable, loadPriceTable, PRICE_TABLE, type PriceTable } from './price-table.js';
import { createScriptedEngine } from './scripted-engine.js';
import { withPriceTable } from './with-price-table.js';

/** The engine of `llm_call` and `llm_plan` steps that name none. */
export const DEFAULT_ENGINE = 'scripted';

/** A runtime's engines by name. */
export class EngineRegistry {
  readonly #engines = new Map<string, Engine>();
  readonly #priceTable: PriceTable | null;

  /**
   * `priceTable`: the table that costs every engine registered with the shipped table
   * ({@link PRICE_TABLE}, an engine's default) instead; `null` (the default): each engine
   * keeps its own.
   */
  constructor(priceTable: PriceTable | null = null) {
    this.#priceTable = priceTable;
  }

  /**
   * Registers an engine; a second engine of the same name is refused with `ConflictError`.
   * An engine priced from the shipped table is priced from the registry's table, if any.
   */
  register(engine: Engine): void {
    const candidate = engine as Partial<Engine> | null;
    if (typeof candidate?.name !== 'string' || typeof candidate.stream !== 'function') {
      throw new TypeError('registerEngine: expected an Engine (a name and a stream method)');
    }
    if (this.#engines.has(engine.name)) {
      throw new ConflictError(`an engine named "${engine.name}" is already registered`);
    }
    const table = this.#priceTable;
    const shipped = engine.priceTable === PRICE_TABLE;
    this.#engines.set(engine.name, table && shipped ? withPriceTable(engine, table) : engine);
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
  const prices = env['AXON_PRICE_TABLE'];
  return openAIFromEnv(env, prices ? loadPriceTable(prices) : PRICE_TABLE);
}

function openAIFromEnv(env: NodeJS.ProcessEnv, priceTable: PriceTable): Engine[] {
  const url = env['AXON_ENGINE_URL'];
  if (!url) return [];
  return [
    createOpenAIEngine({
      baseURL: url,
      model: env['AXON_ENGINE_MODEL'] ?? 'gpt-4o-mini',
      ...(env['AXON_ENGINE_KEY'] ? { apiKey: env['AXON_ENGINE_KEY'] } : {}),
      priceTable,
    }),
  ];
}

/** Options of {@link createEngineRegistry}. */
export interface EngineRegistryOptions {
  /**
   * The price table of every engine priced from the shipped table: the default `scripted`,
   * the environment's `openai`, and each engine given without a `priceTable` of its own.
   * Default the table `AXON_PRICE_TABLE` names, else none (each engine keeps its own).
   */
  readonly priceTable?: PriceTable | undefined;
  /** Where `AXON_ENGINE_URL` and the rest are read; default `process.env`. */
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * A registry holding `engines`, then whatever the environment adds, then the scripted
 * engine — each only if no engine of its name came before it — costed from
 * `options.priceTable` (else `AXON_PRICE_TABLE`'s) where they have the shipped table.
 *
 * A table that would cost none of them (every engine came with a price table of its own) is
 * refused with `UnusedPriceTableError`; a bad table with `RangeError` naming the entry (or
 * the file).
 */
export function createEngineRegistry(
  engines: readonly Engine[],
  options: EngineRegistryOptions = {},
): EngineRegistry {
  const env = options.env ?? process.env;
  const file = env['AXON_PRICE_TABLE'];
  const source = options.priceTable ? 'createRuntime: priceTable' : 'AXON_PRICE_TABLE';
  const table = options.priceTable
    ? checkPriceTable(options.priceTable, source)
    : file
      ? loadPriceTable(file)
      : null;
  const registry = new EngineRegistry(table);
  for (const engine of engines) registry.register(engine);
  // The environment's engine comes with the shipped table: the registry's then prices it.
  for (const engine of openAIFromEnv(env, PRICE_TABLE)) {
    if (!registry.has(engine.name)) registry.register(engine);
  }
  if (!registry.has(DEFAULT_ENGINE)) registry.register(createScriptedEngine());
  if (table) {
    const names = registry.names();
    if (!names.some((name) => registry.get(name).priceTable === table)) {
      throw new UnusedPriceTableError(source, table.version, names);
    }
  }
  return registry;
}
