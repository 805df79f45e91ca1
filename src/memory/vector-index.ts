/**
 * @module An in-memory vector index for unit vectors (inner product = cosine), partitioned
 * by group (the cold tier's scope keys). A search only ever reads the partitions of the
 * groups it may see — one user's knowledge and the global one, not every user's — and
 * each partition's vectors lie together in one array.
 *
 * A partition is scanned exactly up to `trainAt` vectors (default 16 384). Past it, it is
 * an IVF-flat index: k-means splits it into about √n lists and a search scans the `probe`
 * fraction of the lists nearest the query (default 0.1), widening until it has `k`
 * answers; the lists are trained again each time the partition doubles. IVF's recall
 * depends on the data having cluster structure; `bench:memory` measures both paths against
 * the full scan.
 */

/** Options of {@link VectorIndex}. */
export interface VectorIndexOptions {
  /** Vectors in a partition below which it is scanned exactly; default 16 384. */
  readonly trainAt?: number;
  /** Fraction of an IVF partition's lists a search scans first; default 0.1. */
  readonly probe?: number;
}

/** One answer: the vector's position in the index (the order of `add`) and its similarity. */
export interface Hit {
  readonly at: number;
  readonly score: number;
}

/** Keeps the `k` best hits seen (a small sorted array: k is small). */
class TopK {
  readonly hits: Hit[] = [];
  floor = -Infinity;
  constructor(readonly k: number) {}

  offer(at: number, score: number): void {
    if (score <= this.floor) return;
    let i = this.hits.length;
    while (i > 0 && (this.hits[i - 1]?.score ?? 0) < score) i--;
    this.hits.splice(i, 0, { at, score });
    if (this.hits.length > this.k) this.hits.pop();
    if (this.hits.length === this.k) this.floor = this.hits.at(-1)?.score ?? -Infinity;
  }
}

/** One group's vectors, contiguous, with their positions in the index. */
class Partition {
  data: Float32Array;
  positions: Int32Array;
  count = 0;
  centroids: Float32Array | null = null;
  /** Per IVF list, the partition-local indices of its vectors. */
  lists: Int32Array[] = [];
  trainedAt = 0;

  constructor(readonly d: number) {
    this.data = new Float32Array(d * 64);
    this.positions = new Int32Array(64);
  }

  add(vector: Float32Array, at: number): number {
    if (this.count === this.positions.length) {
      const data = new Float32Array(this.data.length * 2);
      data.set(this.data);
      this.data = data;
      const positions = new Int32Array(this.positions.length * 2);
      positions.set(this.positions);
      this.positions = positions;
    }
    const i = this.count++;
    this.data.set(vector, i * this.d);
    this.positions[i] = at;
    return i;
  }

  scan(query: Float32Array, top: TopK): void {
    const { d, data, positions } = this;
    for (let i = 0; i < this.count; i++) top.offer(positions[i] ?? 0, dot(query, data, i * d, d));
  }

  nearestList(data: Float32Array, offset: number): number {
    const c = this.centroids as Float32Array;
    const d = this.d;
    let best = 0;
    let bestScore = -Infinity;
    for (let j = 0; j < c.length / d; j++) {
      const s = dotAt(data, offset, c, j * d, d);
      if (s > bestScore) {
        bestScore = s;
        best = j;
      }
    }
    return best;
  }

  /** Spherical k-means on a sample, then every vector into its nearest list. */
  train(): void {
    const { d, count: n } = this;
    const nlist = Math.max(16, Math.round(Math.sqrt(n)));
    const sample = Math.min(n, nlist * 40);
    const step = n / sample;
    const c = new Float32Array(nlist * d);
    for (let j = 0; j < nlist; j++) {
      const i = Math.floor(j * (n / nlist));
      c.set(this.data.subarray(i * d, i * d + d), j * d);
    }
    this.centroids = c;
    for (let iter = 0; iter < 6; iter++) {
      const sums = new Float32Array(nlist * d);
      for (let s = 0; s < sample; s++) {
        const i = Math.floor(s * step);
        const j = this.nearestList(this.data, i * d);
        for (let x = 0; x < d; x++)
          sums[j * d + x] = (sums[j * d + x] ?? 0) + (this.data[i * d + x] ?? 0);
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
    const members: number[][] = Array.from({ length: nlist }, () => []);
    for (let i = 0; i < n; i++) members[this.nearestList(this.data, i * d)]?.push(i);
    this.lists = members.map((m) => Int32Array.from(m));
    this.trainedAt = n;
  }

  /** Adds `i` to its IVF list (lists are rebuilt as arrays grow: rare, amortised). */
  assign(i: number): void {
    const j = this.nearestList(this.data, i * this.d);
    const list = this.lists[j] ?? new Int32Array(0);
    const grown = new Int32Array(list.length + 1);
    grown.set(list);
    grown[list.length] = i;
    this.lists[j] = grown;
  }

  searchIvf(query: Float32Array, top: TopK, probe: number): void {
    const { d, data, positions } = this;
    const c = this.centroids as Float32Array;
    const nlist = this.lists.length;
    const order = Array.from({ length: nlist }, (_, j) => ({ j, s: dot(query, c, j * d, d) })).sort(
      (a, b) => b.s - a.s,
    );
    let probed = 0;
    let want = Math.max(1, Math.ceil(nlist * probe));
    for (;;) {
      for (; probed < Math.min(want, nlist); probed++) {
        for (const i of this.lists[order[probed]?.j ?? 0] ?? []) {
          top.offer(positions[i] ?? 0, dot(query, data, i * d, d));
        }
      }
      if (top.hits.length >= top.k || probed >= nlist) return;
      want *= 2;
    }
  }
}

export class VectorIndex {
  readonly dimensions: number;
  readonly #trainAt: number;
  readonly #probe: number;
  readonly #partitions = new Map<number, Partition>();
  #count = 0;

  constructor(dimensions: number, options: VectorIndexOptions = {}) {
    this.dimensions = dimensions;
    this.#trainAt = options.trainAt ?? 16_384;
    this.#probe = options.probe ?? 0.1;
  }

  get size(): number {
    return this.#count;
  }

  /** Adds a unit vector in `group`; returns its position. */
  add(vector: Float32Array, group: number): number {
    const d = this.dimensions;
    if (vector.length !== d) {
      throw new RangeError(`a vector of ${vector.length} dimensions in an index of ${d}`);
    }
    const at = this.#count++;
    let p = this.#partitions.get(group);
    if (!p) {
      p = new Partition(d);
      this.#partitions.set(group, p);
    }
    const i = p.add(vector, at);
    if (p.centroids) p.assign(i);
    if (p.count >= this.#trainAt && p.count >= p.trainedAt * 2) p.train();
    return at;
  }

  /** The `k` nearest vectors in `groups`, best first; see the module. */
  search(query: Float32Array, groups: ReadonlySet<number>, k: number): Hit[] {
    const top = new TopK(k);
    for (const g of groups) {
      const p = this.#partitions.get(g);
      if (!p) continue;
      if (p.centroids) p.searchIvf(query, top, this.#probe);
      else p.scan(query, top);
    }
    return top.hits;
  }

  /**
   * The exact answer by brute force, as an index without partitions would find it: every
   * vector read, those in `groups` kept.
   */
  scan(query: Float32Array, groups: ReadonlySet<number>, k: number): Hit[] {
    const top = new TopK(k);
    const none = new TopK(0);
    for (const [g, p] of this.#partitions) p.scan(query, groups.has(g) ? top : none);
    return top.hits;
  }
}

/** `q · b[bo .. bo + d)`, four lanes at a time. */
function dot(q: Float32Array, b: Float32Array, bo: number, d: number): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let i = 0;
  for (; i + 3 < d; i += 4) {
    s0 += (q[i] as number) * (b[bo + i] as number);
    s1 += (q[i + 1] as number) * (b[bo + i + 1] as number);
    s2 += (q[i + 2] as number) * (b[bo + i + 2] as number);
    s3 += (q[i + 3] as number) * (b[bo + i + 3] as number);
  }
  for (; i < d; i++) s0 += (q[i] as number) * (b[bo + i] as number);
  return s0 + s1 + s2 + s3;
}

function dotAt(a: Float32Array, ao: number, b: Float32Array, bo: number, d: number): number {
  let s = 0;
  for (let i = 0; i < d; i++) s += (a[ao + i] as number) * (b[bo + i] as number);
  return s;
}
