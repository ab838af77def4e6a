import { slabViews, type SlabViews } from "./slab-record.ts";

// What a slab id currently is.
const POOLED = 0; // allocated, empty, ready to become the active slab
const ACTIVE = 1; // records are appended here
const SPARE = 2; // allocated, empty, kept for compaction to copy into
const SEALED = 3; // filled once; its records die in place until compaction empties it
const DEDICATED = 4; // a buffer holding one record too large for a slab
const RELEASED = 5; // no buffer; the id is free for reuse

/**
 * The slabs themselves: which buffers exist, what state each is in (pooled, active, spare, sealed,
 * dedicated), how full each is and how much of it is live, and the rule that no buffer is allocated
 * beyond the cache's bound. Records, slots and compaction are SlabStore's; this only counts bytes.
 *
 * A slab is allocated once and then cycles pooled → active → sealed → (emptied) → pooled, so in a
 * steady state the process's allocator sees no churn at all; buffers are released only when the
 * cache's other structures need the room, and dedicated buffers when their record dies.
 */
export class SlabArena {
  readonly slabBytes: number;
  readonly #available: () => number;
  readonly #owned = new WeakSet<ArrayBuffer>();
  readonly #views: (SlabViews | undefined)[] = [];
  readonly #state: number[] = [];
  readonly #used: number[] = [];
  readonly #live: number[] = [];
  readonly #pooled: number[] = [];
  readonly #releasedIds: number[] = [];
  /** The slab records are appended to, or -1. */
  active = -1;
  /** An empty slab kept for compaction to copy into, or -1. */
  spare = -1;
  #heldBytes = 0;
  #allocations = 0;

  /** `available`: bytes the cache may still allocate (its bound minus everything it holds). */
  constructor(slabBytes: number, available: () => number) {
    this.slabBytes = slabBytes;
    this.#available = available;
  }

  /** Bytes of every buffer held. */
  get heldBytes(): number {
    return this.#heldBytes;
  }

  /** Buffers allocated so far: churn here would be churn in the process's allocator. */
  get allocations(): number {
    return this.#allocations;
  }

  /** The highest slab id ever used, plus one (ids are reused). */
  get idLimit(): number {
    return this.#views.length;
  }

  views(slab: number): SlabViews {
    return this.#views[slab]!;
  }

  owns(buffer: ArrayBufferLike): boolean {
    return this.#owned.has(buffer as ArrayBuffer);
  }

  used(slab: number): number {
    return this.#used[slab]!;
  }

  /** Reserve `size` bytes at the end of `slab`; returns where they start. */
  append(slab: number, size: number): number {
    const at = this.#used[slab]!;
    this.#used[slab] = at + size;
    return at;
  }

  live(slab: number): number {
    return this.#live[slab]!;
  }

  /** A record of `size` bytes was written to (size > 0) or died in or left (size < 0) `slab`. */
  addLive(slab: number, size: number): void {
    const live = this.#live[slab]! + size;
    this.#live[slab] = live;
    if (live > 0 || size > 0) return;
    const state = this.#state[slab];
    if (state === DEDICATED) this.release(slab);
    else if (state === SEALED) this.pool(slab);
    else if (state === ACTIVE) this.#used[slab] = 0; // empty again: append from its start
  }

  /** Compaction moved a record of `size` bytes from one slab to another (no slab changes state). */
  moveLive(from: number, to: number, size: number): void {
    this.#live[from] = this.#live[from]! - size;
    this.#live[to] = this.#live[to]! + size;
  }

  /** Keep a spare for compaction, from the pool or the bound, if there is none and room allows. */
  ensureSpare(): void {
    if (this.spare !== -1) return;
    const slab = this.freshSlab();
    if (slab !== -1) this.spare = this.#reset(slab, SPARE);
  }

  /** A pooled slab, or a new one if the bound allows; -1 if neither. */
  freshSlab(): number {
    const pooled = this.#pooled.pop();
    if (pooled !== undefined) return this.#reset(pooled, POOLED);
    if (this.#available() < this.slabBytes) return -1;
    return this.#allocate(this.slabBytes, POOLED);
  }

  /** A buffer of exactly `size` bytes for one record, if the bound allows; else -1. */
  dedicated(size: number): number {
    if (this.#available() < size) return -1;
    const slab = this.#allocate(size, DEDICATED);
    this.#used[slab] = size;
    return slab;
  }

  /** Make `slab` the active one (the old active slab is sealed). */
  activate(slab: number): void {
    if (this.active !== -1) this.seal(this.active);
    this.#state[slab] = ACTIVE;
    this.active = slab;
  }

  /** No more appends to `slab`: it waits for its records to die or for compaction. */
  seal(slab: number): void {
    if (this.#live[slab] === 0) this.pool(slab);
    else this.#state[slab] = SEALED;
    if (this.active === slab) this.active = -1;
  }

  /** `slab` is empty (compacted): it becomes the spare if there is none, else goes to the pool. */
  emptied(slab: number): void {
    if (this.spare === -1) this.spare = this.#reset(slab, SPARE);
    else this.pool(slab);
  }

  /** Take the spare as the active slab; false if there is none. */
  activateSpare(): boolean {
    const spare = this.spare;
    if (spare === -1) return false;
    this.spare = -1;
    this.activate(spare);
    return true;
  }

  /** The sealed slab with the fewest live bytes, or -1 if none has any room to gain. */
  emptiestSealed(): number {
    let best = -1;
    let bestLive = this.slabBytes;
    for (let slab = 0; slab < this.#state.length; slab++) {
      if (this.#state[slab] === SEALED && this.#live[slab]! < bestLive) {
        best = slab;
        bestLive = this.#live[slab]!;
      }
    }
    return best;
  }

  /** Give back a pooled slab, or the active slab if it is empty; false if neither exists. */
  releaseEmpty(): boolean {
    const pooled = this.#pooled.pop();
    if (pooled !== undefined) {
      this.release(pooled);
      return true;
    }
    if (this.active === -1 || this.#live[this.active] !== 0) return false;
    this.release(this.active);
    this.active = -1;
    return true;
  }

  /** Give back the spare (last resort: compaction then needs a fresh slab); false if none. */
  releaseSpare(): boolean {
    if (this.spare === -1) return false;
    this.release(this.spare);
    this.spare = -1;
    return true;
  }

  pool(slab: number): void {
    this.#reset(slab, POOLED);
    this.#pooled.push(slab);
  }

  release(slab: number): void {
    this.#heldBytes -= this.#views[slab]!.bytes.byteLength;
    this.#views[slab] = undefined;
    this.#state[slab] = RELEASED;
    this.#releasedIds.push(slab);
  }

  /** Every record is gone: slabs go to the pool, dedicated buffers are released. */
  clear(): void {
    for (let slab = 0; slab < this.#views.length; slab++) {
      const state = this.#state[slab];
      if (state === DEDICATED) this.release(slab);
      else if (state === ACTIVE || state === SEALED) this.pool(slab);
    }
    this.active = -1;
  }

  #allocate(bytes: number, state: number): number {
    const buffer = new ArrayBuffer(bytes);
    this.#allocations++;
    this.#owned.add(buffer);
    this.#heldBytes += bytes;
    const slab = this.#releasedIds.pop() ?? this.#views.length;
    this.#views[slab] = slabViews(buffer);
    return this.#reset(slab, state);
  }

  #reset(slab: number, state: number): number {
    this.#state[slab] = state;
    this.#used[slab] = 0;
    this.#live[slab] = 0;
    return slab;
  }
}
