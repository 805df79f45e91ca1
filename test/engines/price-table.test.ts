import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { enginesFromEnv } from '../../src/engines/engine-registry.js';
import {
  PRICE_TABLE,
  checkPriceTable,
  costOf,
  extendPriceTable,
  loadPriceTable,
  priceOf,
} from '../../src/engines/price-table.js';

describe('the versioned price table', () => {
  it('has a version and prices every model it names at >= 0', () => {
    expect(PRICE_TABLE.version).toMatch(/\d{4}-\d{2}-\d{2}/);
    expect(() => checkPriceTable(PRICE_TABLE, 'PRICE_TABLE')).not.toThrow();
    expect(Object.isFrozen(PRICE_TABLE.models)).toBe(true);
  });

  it('prices a dated snapshot as its model, the longest match winning', () => {
    expect(priceOf(PRICE_TABLE, 'gpt-4o-2024-08-06')).toBe(PRICE_TABLE.models['gpt-4o']);
    expect(priceOf(PRICE_TABLE, 'gpt-4o-mini-2024-07-18')).toBe(PRICE_TABLE.models['gpt-4o-mini']);
    expect(priceOf(PRICE_TABLE, 'gpt-4oo')).toBeNull();
    expect(priceOf(PRICE_TABLE, 'llama3.1')).toBeNull();
  });

  it('costs tokens per million, and an unknown model nothing', () => {
    const price = { inputPerMTok: 2.5, outputPerMTok: 10 };
    expect(costOf(price, 1_000_000, 0)).toBe(2.5);
    expect(costOf(price, 1000, 500)).toBeCloseTo(0.0025 + 0.005, 12);
    expect(costOf(null, 1000, 500)).toBe(0);
  });

  it('refuses a table with a bad entry, naming it', () => {
    expect(() =>
      checkPriceTable(
        { version: 'v1', models: { m: { inputPerMTok: -1, outputPerMTok: 1 } } },
        'priceTable',
      ),
    ).toThrow(/priceTable.models\["m"\].inputPerMTok must be a number >= 0/);
    expect(() => checkPriceTable({ version: '', models: {} }, 'priceTable')).toThrow(/version/);
  });
});

describe('prices configured from code and from a file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'axon-prices-'));
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('extends the shipped table under a new version; a model in both takes the new price', () => {
    const table = extendPriceTable(PRICE_TABLE, {
      version: 'acme-1',
      models: {
        'llama-3.1-70b': { inputPerMTok: 0.6, outputPerMTok: 0.8 },
        'gpt-4o': { inputPerMTok: 1, outputPerMTok: 1 },
      },
    });
    expect(table.version).toBe('acme-1');
    expect(priceOf(table, 'llama-3.1-70b')).toEqual({ inputPerMTok: 0.6, outputPerMTok: 0.8 });
    expect(priceOf(table, 'gpt-4o')).toEqual({ inputPerMTok: 1, outputPerMTok: 1 });
    expect(priceOf(table, 'gpt-4.1')).toBe(PRICE_TABLE.models['gpt-4.1']);
  });

  it('loads a YAML file (AXON_PRICE_TABLE prices the environment’s engine with it)', () => {
    const file = join(dir, 'prices.yaml');
    writeFileSync(
      file,
      'version: acme-2\nmodels:\n  mystery-7b: { inputPerMTok: 0.2, outputPerMTok: 0.4 }\n',
    );
    expect(priceOf(loadPriceTable(file), 'mystery-7b')).toEqual({
      inputPerMTok: 0.2,
      outputPerMTok: 0.4,
    });
    const [engine] = enginesFromEnv({
      AXON_ENGINE_URL: 'http://127.0.0.1:9/v1',
      AXON_ENGINE_MODEL: 'mystery-7b',
      AXON_PRICE_TABLE: file,
    });
    expect(engine?.priceTable.version).toBe('acme-2');
    expect(priceOf(engine?.priceTable ?? PRICE_TABLE, 'mystery-7b')).not.toBeNull();
  });

  it('refuses a file with a bad price, naming the file and the key', () => {
    const file = join(dir, 'bad.json');
    writeFileSync(
      file,
      JSON.stringify({ version: 'x', models: { m: { inputPerMTok: -1, outputPerMTok: 0 } } }),
    );
    expect(() => loadPriceTable(file)).toThrow(/bad\.json: models\.m\.inputPerMTok/);
    expect(() => loadPriceTable(join(dir, 'missing.yaml'))).toThrow(RangeError);
  });
});
