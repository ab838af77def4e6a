import { grownCapacity } from "./capacity-growth.ts";

/**
 * Doubly linked lists of integer slots, kept in one typed array instead of per-entry node objects
 * (BigCache's lesson: a million entries must not mean a million small objects for the GC to trace).
 * A slot's two links sit side by side (one cache line). Each slot is in at most one list. Every
 * list is circular around a sentinel stored after the slots, so insertion and removal never branch
 * on "empty" or "at the end".
 *
 * `tagged` lists give each node two more words in the same 16 bytes: the list it is in (-1 once
 * removed) and one word for the owner. A cache hit that moves a slot then learns its segment from
 * the line it must touch anyway; with millions of slots a separate per-slot array is one more
 * cache and TLB miss per hit (bench/origin/hit-path.ts).
 */
export class SlotLists {
  /** Node n at stride × n: previous, next, and when tagged, list and the owner's word. */
  #links = new Int32Array(0);
  #capacity = 0;
  readonly #lists: number;
  readonly #stride: number;

  constructor(lists: number, capacity = 16, tagged = false) {
    this.#lists = lists;
    this.#stride = tagged ? 4 : 2;
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
    const first = this.#links[this.#stride * sentinel + 1]!;
    return first === sentinel ? -1 : first;
  }

  /** The slot after `slot` in its list, or -1 at the tail. */
  next(slot: number): number {
    const following = this.#links[this.#stride * slot + 1]!;
    return following >= this.#capacity ? -1 : following;
  }

  /** Tagged lists: the list `slot` was last pushed to, or -1 if removed since (or never pushed). */
  listOf(slot: number): number {
    return this.#links[this.#stride * slot + 2]!;
  }

  /** Tagged lists: the owner's word of `slot`. */
  word(slot: number): number {
    return this.#links[this.#stride * slot + 3]!;
  }

  setWord(slot: number, value: number): void {
    this.#links[this.#stride * slot + 3] = value;
  }

  /**
   * Read `slot`'s node and return a value of it: a batch touches its nodes first so that their
   * memory misses overlap (HitBuffer).
   */
  touch(slot: number): number {
    return this.#links[this.#stride * slot]!;
  }

  /** Read the nodes before and after `slot`, as `touch` (once `slot`'s own node is in cache). */
  touchNeighbours(slot: number): number {
    const links = this.#links;
    const stride = this.#stride;
    return links[stride * links[stride * slot]!]! ^ links[stride * links[stride * slot + 1]! + 1]!;
  }

  pushTail(list: number, slot: number): void {
    const links = this.#links;
    const stride = this.#stride;
    const sentinel = this.#capacity + list;
    const last = links[stride * sentinel]!;
    links[stride * slot] = last;
    links[stride * slot + 1] = sentinel;
    links[stride * last + 1] = slot;
    links[stride * sentinel] = slot;
    if (stride === 4) links[4 * slot + 2] = list;
  }

  remove(slot: number): void {
    const links = this.#links;
    const stride = this.#stride;
    const before = links[stride * slot]!;
    const after = links[stride * slot + 1]!;
    links[stride * before + 1] = after;
    links[stride * after] = before;
    if (stride === 4) links[4 * slot + 2] = -1;
  }

  moveToTail(list: number, slot: number): void {
    this.remove(slot);
    this.pushTail(list, slot);
  }

  /** Empty every list (slots keep stale links; they are rewritten on the next push). */
  clear(): void {
    const stride = this.#stride;
    for (let list = 0; list < this.#lists; list++) {
      const sentinel = this.#capacity + list;
      this.#links[stride * sentinel] = sentinel;
      this.#links[stride * sentinel + 1] = sentinel;
    }
    if (stride === 4) for (let slot = 0; slot < this.#capacity; slot++) this.#links[4 * slot + 2] = -1;
  }

  #resize(capacity: number): void {
    const old = this.#links;
    const oldCapacity = this.#capacity;
    const stride = this.#stride;
    const links = new Int32Array(stride * (capacity + this.#lists));
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
        const link = old[stride * node + side]!;
        links[stride * target + side] = link >= oldCapacity ? link + shift : link;
      }
      for (let word = 2; word < stride; word++) links[stride * target + word] = old[stride * node + word]!;
    }
    for (let slot = oldCapacity; slot < capacity && stride === 4; slot++) links[4 * slot + 2] = -1;
  }
}
