/** @module Seeded randomness: the same seed, the same sequence. */

/**
 * A seeded pseudo-random generator (mulberry32): returns a function giving numbers in
 * [0, 1). Small, fast and well distributed; not for secrets.
 *
 * @example
 * const rand = createSeededRandom(42);
 * rand(); // the same first number on every run
 */
export function createSeededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
