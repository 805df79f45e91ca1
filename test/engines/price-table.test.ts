import { describe, expect, it } from 'vitest';
import { PRICE_TABLE, checkPriceTable, costOf, priceOf } from '../../src/engines/price-table.js';

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
