import { ReadyCache } from "../../src/origin/cache/ready-cache.ts";
import { maxBytesForEntries } from "../../src/origin/cache/slab-budget.ts";
import { SlabCache } from "../../src/origin/cache/slab-cache.ts";
import type { Trace } from "./trace.ts";

/** Replays a trace against one policy at one capacity (entries); returns the number of hits. */
export type Simulator = (trace: Trace, capacity: number) => number;

/**
 * The slim-edge policy as the origin runs it: a real `SlabCache` (off-heap records, byte weights,
 * the sketch taken from the maximum as it widens), sized with `maxBytesForEntries` so that it holds
 * exactly `capacity` entries. Every value pads its key to the trace's longest key, so every entry
 * weighs the same (the capacities are in entries). Cache-aside: get, and set on a miss.
 */
export const simulateSlabCache: Simulator = (trace, capacity) => {
  const { requests, keys } = trace;
  let width = 0;
  for (const key of keys) width = Math.max(width, key.length);
  const cache = new SlabCache({ maxBytes: maxBytesForEntries(capacity, width, 0, false), ttlMs: 0 });
  const padding = Array.from({ length: width + 1 }, (_, length) => new Uint8Array(length));
  let hits = 0;
  for (let i = 0; i < requests.length; i++) {
    const key = keys[requests[i]!]!;
    if (cache.get(key) !== -1) hits++;
    else cache.set(key, padding[width - key.length]!);
  }
  if (cache.stats.entries > capacity) throw new Error(`SlabCache held ${cache.stats.entries} entries, more than ${capacity}`);
  return hits;
};

/**
 * The same policy through `ReadyCache` (the origin's heap cache before SlabCache), entry-bounded
 * by giving every entry 1 byte and `maxBytes = capacity`.
 */
export const simulateReadyCache: Simulator = (trace, capacity) => {
  const cache = new ReadyCache<number>({ maxBytes: capacity, ttlMs: 0 });
  const { requests, keys } = trace;
  let hits = 0;
  for (let i = 0; i < requests.length; i++) {
    const key = keys[requests[i]!]!;
    if (cache.get(key) !== undefined) hits++;
    else cache.set(key, 1, 1);
  }
  return hits;
};

/** Least recently used, over interned key ids with typed-array links. */
export const simulateLru: Simulator = (trace, capacity) => {
  const n = trace.keys.length;
  const head = n; // sentinel of the circular list; head's next is the LRU entry
  const prev = new Int32Array(n + 1).fill(-1);
  const next = new Int32Array(n + 1).fill(-1);
  const cached = new Uint8Array(n);
  prev[head] = head;
  next[head] = head;
  const unlink = (k: number) => {
    next[prev[k]!] = next[k]!;
    prev[next[k]!] = prev[k]!;
  };
  const pushMru = (k: number) => {
    const last = prev[head]!;
    prev[k] = last;
    next[k] = head;
    next[last] = k;
    prev[head] = k;
  };
  let size = 0;
  let hits = 0;
  for (const k of trace.requests) {
    if (cached[k]) {
      hits++;
      unlink(k);
      pushMru(k);
      continue;
    }
    if (size === capacity) {
      const lru = next[head]!;
      unlink(lru);
      cached[lru] = 0;
      size--;
    }
    cached[k] = 1;
    pushMru(k);
    size++;
  }
  return hits;
};

/**
 * Bélády's clairvoyant optimum: on a miss with a full cache, of the cached keys and the requested
 * one, drop the one whose next request is furthest away (possibly the requested key itself).
 */
export const simulateOpt: Simulator = (trace, capacity) => {
  const { requests } = trace;
  const n = requests.length;
  // nextUse[i]: position of the next request for requests[i]; never-again gets a unique n + i.
  const nextUse = new Float64Array(n);
  const lastSeen = new Int32Array(trace.keys.length).fill(-1);
  for (let i = n - 1; i >= 0; i--) {
    const k = requests[i]!;
    nextUse[i] = lastSeen[k] === -1 ? n + i : lastSeen[k]!;
    lastSeen[k] = i;
  }
  const keyOf = (use: number) => requests[use < n ? use : use - n]!;
  const pendingUse = new Float64Array(trace.keys.length).fill(-1); // -1: not cached
  const heap = new MaxHeap(n);
  let size = 0;
  let hits = 0;
  for (let i = 0; i < n; i++) {
    const k = requests[i]!;
    const use = nextUse[i]!;
    if (pendingUse[k] === i) {
      hits++;
      pendingUse[k] = use;
      heap.push(use);
      continue;
    }
    if (capacity === 0) continue;
    if (size === capacity) {
      // Drop stale heap entries (keys whose pending use changed or that left the cache).
      while (pendingUse[keyOf(heap.peek())] !== heap.peek()) heap.pop();
      if (heap.peek() < use) continue; // the requested key is the furthest: do not cache it
      pendingUse[keyOf(heap.pop())] = -1;
      size--;
    }
    pendingUse[k] = use;
    heap.push(use);
    size++;
  }
  return hits;
};

class MaxHeap {
  #items: Float64Array;
  #size = 0;

  constructor(capacity: number) {
    this.#items = new Float64Array(Math.max(1, capacity));
  }

  peek(): number {
    return this.#items[0]!;
  }

  push(value: number): void {
    if (this.#size === this.#items.length) {
      const grown = new Float64Array(this.#items.length * 2);
      grown.set(this.#items);
      this.#items = grown;
    }
    const items = this.#items;
    let i = this.#size++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent]! >= value) break;
      items[i] = items[parent]!;
      i = parent;
    }
    items[i] = value;
  }

  pop(): number {
    const items = this.#items;
    const top = items[0]!;
    const last = items[--this.#size]!;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= this.#size) break;
      if (child + 1 < this.#size && items[child + 1]! > items[child]!) child++;
      if (items[child]! <= last) break;
      items[i] = items[child]!;
      i = child;
    }
    items[i] = last;
    return top;
  }
}
