/**
 * @module The versioned price table engine calls are costed from. Its version goes into
 * every call's provenance, so a cost can always be traced to the prices it was computed
 * with; change a price only by making a new version.
 */

import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

/** What a model costs, in US dollars per million tokens. */
export interface ModelPrice {
  readonly inputPerMTok: number;
  readonly outputPerMTok: number;
}

/** Prices by model name, under one version. */
export interface PriceTable {
  readonly version: string;
  readonly models: Readonly<Record<string, ModelPrice>>;
}

/**
 * The table shipped with axon: public list prices of hosted OpenAI models as published
 * when the version was cut (standard tier, no cached-input discount). A model served
 * elsewhere under the same name (vLLM, Ollama) costs what its operator says: give the
 * engine its own table.
 */
export const PRICE_TABLE: PriceTable = Object.freeze({
  version: 'axon-prices-2026-11-01',
  models: Object.freeze({
    'gpt-4o': { inputPerMTok: 2.5, outputPerMTok: 10 },
    'gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6 },
    'gpt-4.1': { inputPerMTok: 2, outputPerMTok: 8 },
    'gpt-4.1-mini': { inputPerMTok: 0.4, outputPerMTok: 1.6 },
    'gpt-4.1-nano': { inputPerMTok: 0.1, outputPerMTok: 0.4 },
    'o3-mini': { inputPerMTok: 1.1, outputPerMTok: 4.4 },
    'o4-mini': { inputPerMTok: 1.1, outputPerMTok: 4.4 },
    'gpt-3.5-turbo': { inputPerMTok: 0.5, outputPerMTok: 1.5 },
    scripted: { inputPerMTok: 0, outputPerMTok: 0 },
  }),
});

/**
 * The price of `model` in `table`: its own entry, else the longest entry it extends at a
 * `-` (`gpt-4o-2024-08-06` is priced as `gpt-4o`); `null` when the table does not know it.
 */
export function priceOf(table: PriceTable, model: string): ModelPrice | null {
  const exact = table.models[model];
  if (exact) return exact;
  let best: string | null = null;
  for (const name of Object.keys(table.models)) {
    if (model.startsWith(`${name}-`) && (best === null || name.length > best.length)) best = name;
  }
  return best === null ? null : (table.models[best] ?? null);
}

/** The cost in US dollars of `tokensIn` and `tokensOut` at `price` (0 for an unknown price). */
export function costOf(price: ModelPrice | null, tokensIn: number, tokensOut: number): number {
  if (!price) return 0;
  return (tokensIn * price.inputPerMTok + tokensOut * price.outputPerMTok) / 1_000_000;
}

/** Checks a table given by a user; throws `RangeError` naming the bad entry. */
export function checkPriceTable(table: PriceTable, option: string): PriceTable {
  if (typeof table.version !== 'string' || table.version === '') {
    throw new RangeError(`${option}.version must be a non-empty string`);
  }
  for (const [model, price] of Object.entries(table.models)) {
    for (const key of ['inputPerMTok', 'outputPerMTok'] as const) {
      const v = price[key];
      if (!(Number.isFinite(v) && v >= 0)) {
        throw new RangeError(`${option}.models["${model}"].${key} must be a number >= 0, got ${v}`);
      }
    }
  }
  return table;
}

const priceSchema = z.strictObject({
  inputPerMTok: z.number().nonnegative(),
  outputPerMTok: z.number().nonnegative(),
});

/** A price table as a file or a config section gives it (checked, unknown keys refused). */
export const priceTableSchema = z.strictObject({
  version: z.string().min(1),
  models: z.record(z.string().min(1), priceSchema),
});

/**
 * `base` with `more` added (a model in both takes `more`'s price), under `more`'s version.
 *
 * @example
 * const prices = extendPriceTable(PRICE_TABLE, {
 *   version: 'acme-2026-11', models: { 'llama-3.1-70b': { inputPerMTok: 0.6, outputPerMTok: 0.8 } },
 * });
 * createOpenAIEngine({ baseURL, model: 'llama-3.1-70b', priceTable: prices });
 */
export function extendPriceTable(base: PriceTable, more: PriceTable): PriceTable {
  const checked = checkPriceTable(more, 'extendPriceTable: more');
  return Object.freeze({
    version: checked.version,
    models: Object.freeze({ ...base.models, ...checked.models }),
  });
}

/**
 * Reads a price table from a YAML or JSON file (`{ version, models: { <model>: {
 * inputPerMTok, outputPerMTok } } }`) and adds it to {@link PRICE_TABLE}. Throws
 * `RangeError` naming the file and the bad key.
 */
export function loadPriceTable(path: string): PriceTable {
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new RangeError(`price table ${path}: cannot be read as YAML or JSON`, { cause: err });
  }
  const parsed = priceTableSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const at = issue?.path.map(String).join('.') ?? '';
    throw new RangeError(
      `price table ${path}: ${at === '' ? '' : `${at}: `}${issue?.message ?? 'invalid'}`,
    );
  }
  return extendPriceTable(PRICE_TABLE, parsed.data);
}
