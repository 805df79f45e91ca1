/**
 * The leases a store keeps for every process opening it (`RunStore.leases`): two stores on one
 * file or schema — two processes — see each other's leases, renewals, expiry and release.
 */
import { expect } from 'vitest';
import type { Leases } from '../../src/store/store-leases.js';

/** Holds `a` and `b`, two stores' leases on the same data, to what every store's must do. */
export async function expectSharedLeases(a: Leases, b: Leases): Promise<void> {
  expect(await a.acquire('thread:1', 'engine-a', 60_000)).toBe(true);
  expect(await b.acquire('thread:1', 'engine-b', 60_000)).toBe(false);
  // The holder renews; another key is anyone's.
  expect(await a.acquire('thread:1', 'engine-a', 60_000)).toBe(true);
  expect(await b.acquire('thread:2', 'engine-b', 60_000)).toBe(true);
  // Released, it is free at once; a release by another owner changes nothing.
  await b.release('thread:1', 'engine-b');
  expect(await b.acquire('thread:1', 'engine-b', 60_000)).toBe(false);
  await a.release('thread:1', 'engine-a');
  expect(await b.acquire('thread:1', 'engine-b', 1)).toBe(true);
  // Run out, it is free to take.
  await new Promise((r) => setTimeout(r, 5));
  expect(await a.acquire('thread:1', 'engine-a', 60_000)).toBe(true);
}
