/**
 * @module A min-heap of (due time, id): the in-memory store's one index of due wakes. An
 * entry whose wake changed or went is left in place and passed over when met (the caller
 * says which are current), so removing costs nothing.
 */

/** See the module. */
export class DueHeap {
  readonly #due: number[] = [];
  readonly #ids: string[] = [];

  get size(): number {
    return this.#due.length;
  }

  push(due: number, id: string): void {
    this.#due.push(due);
    this.#ids.push(id);
    this.#up(this.#due.length - 1);
  }

  /** The soonest current due time, dropping stale entries on the way; `null` when none. */
  peek(current: (id: string, due: number) => boolean): number | null {
    while (this.#due.length > 0) {
      const due = this.#due[0] as number;
      if (current(this.#ids[0] as string, due)) return due;
      this.#pop();
    }
    return null;
  }

  /**
   * The ids of current entries due at `now` or before, soonest first, at most `limit`; they
   * stay in the heap (a wake leaves it once it is no longer current).
   */
  upTo(now: number, limit: number, current: (id: string, due: number) => boolean): string[] {
    const out: string[] = [];
    const kept: [number, string][] = [];
    while (out.length < limit && this.#due.length > 0 && (this.#due[0] as number) <= now) {
      const [due, id] = this.#pop();
      if (!current(id, due) || out.includes(id)) continue;
      out.push(id);
      kept.push([due, id]);
    }
    for (const [due, id] of kept) this.push(due, id);
    return out;
  }

  #pop(): [number, string] {
    const due = this.#due[0] as number;
    const id = this.#ids[0] as string;
    const lastDue = this.#due.pop() as number;
    const lastId = this.#ids.pop() as string;
    if (this.#due.length > 0) {
      this.#due[0] = lastDue;
      this.#ids[0] = lastId;
      this.#down(0);
    }
    return [due, id];
  }

  #up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((this.#due[parent] as number) <= (this.#due[i] as number)) return;
      this.#swap(i, parent);
      i = parent;
    }
  }

  #down(i: number): void {
    const n = this.#due.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let least = i;
      if (l < n && (this.#due[l] as number) < (this.#due[least] as number)) least = l;
      if (r < n && (this.#due[r] as number) < (this.#due[least] as number)) least = r;
      if (least === i) return;
      this.#swap(i, least);
      i = least;
    }
  }

  #swap(a: number, b: number): void {
    [this.#due[a], this.#due[b]] = [this.#due[b] as number, this.#due[a] as number];
    [this.#ids[a], this.#ids[b]] = [this.#ids[b] as string, this.#ids[a] as string];
  }
}
