import { grownCapacity } from "./capacity-growth.ts";

/**
 * Doubly linked lists of integer slots, kept in one typed array instead of per-entry node objects
 * (BigCache's lesson: a million entries must not mean a million small objects for the GC to trace).
 * A slot's two links sit side by side (one cache line). Each slot is in at most one list. Every
 * list is circular around a sentinel stored after the slots, so insertion and removal never branch
 * on "empty" or "at the end".
 */
export class SlotLists {
  /** links[2n] = previous, links[2n + 1] = next, for node n (slots, then one sentinel per list). */
  #links = new Int32Array(0);
  #capacity = 0;
  readonly #lists: number;

  constructor(lists: number, capacity = 16) {
    this.#lists = lists;
    this.#resize(Math.max(1, capacity));
  }

  /** Make room for slots 0..capacity-1 (grows by an eighth, keeps every list intact). */
  ensureCapacity(capacity: number): void {
    if (capacity > this.#capacity) this.#resize(grownCapacity(this.#capacity, capacity));
  }

  /** Bytes of the links array (the cache counts it against its bound). */
  get byteSize(): number {
    return this.#links.byteLength;
  }

  /** The first (least recently pushed) slot of `list`, or -1 if the list is empty. */
  head(list: number): number {
    const sentinel = this.#capacity + list;
    const first = this.#links[2 * sentinel + 1]!;
    return first === sentinel ? -1 : first;
  }

  /** The slot after `slot` in its list, or -1 at the tail. */
  next(slot: number): number {
    const following = this.#links[2 * slot + 1]!;
    return following >= this.#capacity ? -1 : following;
  }

  pushTail(list: number, slot: number): void {
    const links = this.#links;
    const sentinel = this.#capacity + list;
    const last = links[2 * sentinel]!;
    links[2 * slot] = last;
    links[2 * slot + 1] = sentinel;
    links[2 * last + 1] = slot;
    links[2 * sentinel] = slot;
  }

  remove(slot: number): void {
    const links = this.#links;
    const before = links[2 * slot]!;
    const after = links[2 * slot + 1]!;
    links[2 * before + 1] = after;
    links[2 * after] = before;
  }

  moveToTail(list: number, slot: number): void {
    this.remove(slot);
    this.pushTail(list, slot);
  }

  /** Empty every list (slots keep stale links; they are rewritten on the next push). */
  clear(): void {
    for (let list = 0; list < this.#lists; list++) {
      const sentinel = this.#capacity + list;
      this.#links[2 * sentinel] = sentinel;
      this.#links[2 * sentinel + 1] = sentinel;
    }
  }

  #resize(capacity: number): void {
    const old = this.#links;
    const oldCapacity = this.#capacity;
    const links = new Int32Array(2 * (capacity + this.#lists));
    this.#links = links;
    this.#capacity = capacity;
    if (oldCapacity === 0) {
      this.clear();
      return;
    }
    // Sentinels move from oldCapacity + i to capacity + i: relink every pointer to them.
    const shift = capacity - oldCapacity;
    for (let node = 0; node < oldCapacity + this.#lists; node++) {
      const target = node >= oldCapacity ? node + shift : node;
      for (let side = 0; side < 2; side++) {
        const link = old[2 * node + side]!;
        links[2 * target + side] = link >= oldCapacity ? link + shift : link;
      }
    }
  }
}
