/**
 * @module An in-memory vector index for unit vectors (inner product = cosine): IVF-flat. Up
 * to `trainAt` vectors it scans them all; past it, k-means splits them into about √n lists
 * and a search scans the `probe` fraction of lists nearest the query, widening until it has
 * `k` answers among the allowed scopes. The lists are trained again each time the index
 * doubles. `bench:memory` measures its recall@10 against the full scan.
 */

/** Options of {@link VectorIndex}. */
export interface VectorIndexOptions {
  /** Vectors below which every search is a full scan; default 4 096. */
  readonly trainAt?: number;
  /** Fraction of the lists a search scans first; default 0.1. */
  readonly probe?: number;
}

/** One answer: the vector's position in the index and its similarity. */
export interface Hit {
  readonly at: number;
  readonly score: number;
}

/** Keeps the `k` best hits seen (a small sorted array: k is small). */
class TopK {
  readonly hits: Hit[] = [];
  constructor(readonly k: number) {}

  get floor(): number {
    return this.hits.length < this.k ? -Infinity : (this.hits.at(-1)?.score ?? -Infinity);
  }

  offer(at: number, score: number): void {
    if (score <= this.floor) return;
    let i = this.hits.length;
    while (i > 0 && (this.hits[i - 1]?.score ?? 0) < score) i--;
    this.hits.splice(i, 0, { at, score });
    if (this.hits.length > this.k) this.hits.pop();
  }
}

export class VectorIndex {
  readonly dimensions: number;
  #data: Float32Array;
  /** The group (scope) of each vector. */
  #groups: Int32Array;
  #count = 0;
  readonly #trainAt: number;
  readonly #probe: number;
  #centroids: Float32Array | null = null;
  #lists: number[][] = [];
  #trainedAt = 0;

  constructor(dimensions: number, options: VectorIndexOptions = {}) {
    this.dimensions = dimensions;
    this.#trainAt = options.trainAt ?? 4_096;
    this.#probe = options.probe ?? 0.1;
    this.#data = new Float32Array(dimensions * 1024);
    this.#groups = new Int32Array(1024);
  }

  get size(): number {
    return this.#count;
  }

  /** Adds a unit vector in `group`; returns its position. */
  add(vector: Float32Array, group: number): number {
    if (vector.length !== this.dimensions) {
      throw new RangeError(
        `a vector of ${vector.length} dimensions in an index of ${this.dimensions}`,
      );
    }
    if (this.#count === this.#groups.length) {
      const data = new Float32Array(this.#data.length * 2);
      data.set(this.#data);
      this.#data = data;
      const groups = new Int32Array(this.#groups.length * 2);
      groups.set(this.#groups);
      this.#groups = groups;
    }
    const at = this.#count++;
    this.#data.set(vector, at * this.dimensions);
    this.#groups[at] = group;
    if (this.#centroids) this.#lists[this.#nearestList(this.#data, at * this.dimensions)]?.push(at);
    if (this.#count >= this.#trainAt && this.#count >= this.#trainedAt * 2) this.#train();
    return at;
  }

  /** The `k` nearest vectors in `groups`, best first (exhaustive below `trainAt`). */
  search(query: Float32Array, groups: ReadonlySet<number>, k: number): Hit[] {
    if (!this.#centroids) return this.scan(query, groups, k);
    const d = this.dimensions;
    const nlist = this.#lists.length;
    const order = Array.from({ length: nlist }, (_, i) => ({
      i,
      s: dot(query, 0, this.#centroids as Float32Array, i * d, d),
    })).sort((a, b) => b.s - a.s);
    const top = new TopK(k);
    let probed = 0;
    let want = Math.max(1, Math.ceil(nlist * this.#probe));
    for (;;) {
      for (; probed < Math.min(want, nlist); probed++) {
        for (const at of this.#lists[order[probed]?.i ?? 0] ?? []) {
          if (!groups.has(this.#groups[at] ?? -1)) continue;
          top.offer(at, dot(query, 0, this.#data, at * d, d));
        }
      }
      if (top.hits.length >= k || probed >= nlist) return top.hits;
      want *= 2;
    }
  }

  /** The exact answer: every vector in `groups` scanned. */
  scan(query: Float32Array, groups: ReadonlySet<number>, k: number): Hit[] {
    const d = this.dimensions;
    const top = new TopK(k);
    for (let at = 0; at < this.#count; at++) {
      if (!groups.has(this.#groups[at] ?? -1)) continue;
      top.offer(at, dot(query, 0, this.#data, at * d, d));
    }
    return top.hits;
  }

  #nearestList(data: Float32Array, offset: number): number {
    const c = this.#centroids as Float32Array;
    const d = this.dimensions;
    let best = 0;
    let bestScore = -Infinity;
    for (let i = 0; i < c.length / d; i++) {
      const s = dot(data, offset, c, i * d, d);
      if (s > bestScore) {
        bestScore = s;
        best = i;
      }
    }
    return best;
  }

  /** Spherical k-means on a sample, then every vector into its nearest list. */
  #train(): void {
    const d = this.dimensions;
    const n = this.#count;
    const nlist = Math.max(16, Math.round(Math.sqrt(n)));
    const sample = Math.min(n, nlist * 40);
    const step = n / sample;
    const c = new Float32Array(nlist * d);
    for (let i = 0; i < nlist; i++) {
      const at = Math.floor(i * (n / nlist));
      c.set(this.#data.subarray(at * d, at * d + d), i * d);
    }
    this.#centroids = c;
    for (let iter = 0; iter < 6; iter++) {
      const sums = new Float32Array(nlist * d);
      for (let s = 0; s < sample; s++) {
        const at = Math.floor(s * step);
        const j = this.#nearestList(this.#data, at * d);
        for (let x = 0; x < d; x++)
          sums[j * d + x] = (sums[j * d + x] ?? 0) + (this.#data[at * d + x] ?? 0);
      }
      for (let j = 0; j < nlist; j++) {
        let norm = 0;
        for (let x = 0; x < d; x++) norm += (sums[j * d + x] ?? 0) ** 2;
        // An empty list keeps its centroid.
        if (norm === 0) continue;
        const inv = 1 / Math.sqrt(norm);
        for (let x = 0; x < d; x++) c[j * d + x] = (sums[j * d + x] ?? 0) * inv;
      }
    }
    this.#lists = Array.from({ length: nlist }, () => []);
    for (let at = 0; at < n; at++) this.#lists[this.#nearestList(this.#data, at * d)]?.push(at);
    this.#trainedAt = n;
  }
}

function dot(a: Float32Array, ao: number, b: Float32Array, bo: number, d: number): number {
  let s = 0;
  for (let i = 0; i < d; i++) s += (a[ao + i] as number) * (b[bo + i] as number);
  return s;
}
