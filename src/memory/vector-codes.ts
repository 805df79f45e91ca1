/**
 * @module The binary codes of `VectorIndex`'s code path (see its module): a fixed
 * pseudo-random rotation, the sign bits of a rotated vector, the query's look-up table for
 * the asymmetric estimate, and a byte-wise popcount.
 */
import { createSeededRandom } from '../context/seeded-random.js';

/** The fewest bits of a code (more past 256 dimensions). */
const MIN_BITS = 256;

/**
 * A fixed rotation of `d`-dimensional vectors, padded to a power of two `p`, into
 * `bits = max(p, 256)` coordinates: ±1 signs, then a Walsh–Hadamard transform; a vector of
 * fewer than 256 padded dimensions is rotated again with other signs until 256 are filled.
 */
export class Rotation {
  readonly bits: number;
  readonly #d: number;
  readonly #p: number;
  readonly #signs: Float32Array;
  readonly #work: Float32Array;
  readonly #out: Float32Array;

  constructor(d: number) {
    this.#d = d;
    this.#p = 2 ** Math.ceil(Math.log2(Math.max(d, 2)));
    this.bits = Math.max(this.#p, MIN_BITS);
    const rounds = this.bits / this.#p;
    // A fixed seed: a code depends on its vector only, in every process.
    const rand = createSeededRandom(0x5eed);
    this.#signs = Float32Array.from({ length: rounds * this.#p }, () => (rand() < 0.5 ? -1 : 1));
    this.#work = new Float32Array(this.#p);
    this.#out = new Float32Array(this.bits);
  }

  /**
   * The rotated copy of `v[vo .. vo + d) − center` (`bits` numbers), in a buffer the next
   * call overwrites.
   */
  apply(v: Float32Array, vo: number, center: Float32Array | null): Float32Array {
    const d = this.#d;
    const p = this.#p;
    const w = this.#work;
    const out = this.#out;
    for (let r = 0; r * p < this.bits; r++) {
      w.fill(0);
      for (let i = 0; i < d; i++) {
        const x = (v[vo + i] as number) - (center ? (center[i] as number) : 0);
        w[i] = x * (this.#signs[r * p + i] as number);
      }
      for (let h = 1; h < p; h <<= 1) {
        for (let i = 0; i < p; i += h << 1) {
          for (let j = i; j < i + h; j++) {
            const a = w[j] as number;
            const b = w[j + h] as number;
            w[j] = a + b;
            w[j + h] = a - b;
          }
        }
      }
      out.set(w, r * p);
    }
    return out;
  }
}

/** The query's side of a search through codes, made once per search and shared by partitions. */
export class CodedQuery {
  readonly code: Int32Array;
  /** Per code byte, the sum of the rotated query over each of the 256 bit patterns. */
  readonly table: Float32Array;
  /** The sum of the rotated query. */
  readonly sum: number;

  constructor(rotated: Float32Array) {
    const bits = rotated.length;
    this.code = new Int32Array(bits / 32);
    setCode(rotated, this.code, 0);
    let sum = 0;
    for (let j = 0; j < bits; j++) sum += rotated[j] as number;
    this.sum = sum;
    const t = (this.table = new Float32Array(bits * 32));
    for (let b = 0; b < bits / 8; b++) {
      const o = b * 256;
      for (let x = 1; x < 256; x++) {
        const low = x & -x;
        t[o + x] = (t[o + (x ^ low)] as number) + (rotated[b * 8 + 31 - Math.clz32(low)] as number);
      }
    }
  }
}

/** The code of `rotated`: bit `j` set when its coordinate `j` is positive. */
export function setCode(rotated: Float32Array, out: Int32Array, offset: number): void {
  for (let w = 0; w < rotated.length / 32; w++) {
    let word = 0;
    for (let b = 0; b < 32; b++) if ((rotated[w * 32 + b] as number) > 0) word |= 1 << b;
    out[offset + w] = word;
  }
}

/** The set bits of each byte of `v`, in that byte. */
export function bytes(v: number): number {
  v -= (v >>> 1) & 0x55555555;
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (v + (v >>> 4)) & 0x0f0f0f0f;
}
