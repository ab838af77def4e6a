import type { FrequencySketch } from "./frequency-sketch.ts";
import type { SlotLists } from "./slot-lists.ts";

/**
 * Cache hits the policy has not applied yet, in order: Caffeine's read buffer, made exact. The
 * policy applies them before anything that reads or changes its state (an add, an update, a
 * removal, an eviction, a resize), so every decision it takes sees exactly the state immediate
 * hits would have left; the hit ratio cannot change, only when the work is done.
 *
 * Why buffer at all: with millions of entries each hit's bookkeeping (its list node, its two
 * neighbours, its sketch block) is four cache and TLB misses, taken one after another on the
 * request path. Applied in a batch, the buffer first reads every node and block of the batch in
 * tight loops of independent loads, so the processor has many of those misses in flight at once
 * instead of one, and applying the hits then finds them in cache (bench/origin/hit-path.ts: about
 * 12% less time per hit at a million entries).
 */
export class HitBuffer {
  /** [2i] slot, [2i + 1] its key hash. */
  readonly #hits: Int32Array;
  readonly #capacity: number;
  readonly #lists: SlotLists;
  readonly #sketch: FrequencySketch;
  readonly #access: (slot: number, hash: number) => void;
  #count = 0;
  /** What touching read, kept so the reads are not optimized away. */
  #touched = 0;

  /** `access` applies one hit; `lists` and `sketch` are what it reads. */
  constructor(capacity: number, lists: SlotLists, sketch: FrequencySketch, access: (slot: number, hash: number) => void) {
    this.#capacity = capacity;
    this.#hits = new Int32Array(2 * capacity);
    this.#lists = lists;
    this.#sketch = sketch;
    this.#access = access;
  }

  /** Bytes of its array. */
  get byteSize(): number {
    return this.#hits.byteLength;
  }

  /** Record a hit; applies the batch when it is full. */
  push(slot: number, hash: number): void {
    const at = 2 * this.#count;
    this.#hits[at] = slot;
    this.#hits[at + 1] = hash;
    if (++this.#count === this.#capacity) this.apply();
  }

  /** Apply every buffered hit, in order. */
  apply(): void {
    const count = this.#count;
    if (count === 0) return;
    const hits = this.#hits;
    const lists = this.#lists;
    let touched = 0;
    for (let i = 0; i < count; i++) touched ^= lists.touch(hits[2 * i]!) ^ this.#sketch.touch(hits[2 * i + 1]!);
    for (let i = 0; i < count; i++) touched ^= lists.touchNeighbours(hits[2 * i]!);
    this.#touched ^= touched;
    // Emptied first: applying a hit never records another, but a throw must not replay the batch.
    this.#count = 0;
    for (let i = 0; i < count; i++) this.#access(hits[2 * i]!, hits[2 * i + 1]!);
  }

  /** Forget the buffered hits (the policy was cleared). */
  clear(): void {
    this.#count = 0;
  }
}
