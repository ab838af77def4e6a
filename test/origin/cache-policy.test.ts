import { describe, expect, it } from "vitest";
import { ReadyCache } from "../../src/origin/cache/ready-cache.ts";
import { maxBytesForEntries } from "../../src/origin/cache/slab-budget.ts";
import { SlabCache } from "../../src/origin/cache/slab-cache.ts";

interface Cacheish {
  get(key: string): unknown;
  /** Insert or replace; `size` is the value's length (the entry's bytes beside its key). */
  set(key: string, value: unknown, size: number): void;
}

/** Hit ratio of a cache-aside loop over `trace`: get, and set (an empty value) on a miss. */
function hitRatio(trace: number[], cache: Cacheish): number {
  let hits = 0;
  for (const id of trace) {
    const key = String(id);
    if (cache.get(key) !== undefined) hits++;
    else cache.set(key, id, 0);
  }
  return hits / trace.length;
}

/**
 * The policy through both caches. `entries`: how many entries of `keyLength`-char keys and
 * `valueLength`-byte values fit. ReadyCache counts 1 byte plus the value's length per entry;
 * SlabCache weighs each entry itself and is sized to hold exactly `entries` such entries. Keys are
 * padded with the value so that every entry of a trace weighs the same.
 */
const policies: { name: string; create(entries: number, valueLength?: number): Cacheish }[] = [
  {
    name: "ReadyCache",
    create(entries, valueLength = 0) {
      const cache = new ReadyCache<unknown>({ maxBytes: entries * (1 + valueLength), ttlMs: 0 });
      return { get: (key) => cache.get(key), set: (key, value, size) => cache.set(key, value, 1 + size) };
    },
  },
  {
    name: "SlabCache",
    create(entries, valueLength = 0) {
      const keyLength = 8;
      const cache = new SlabCache({ maxBytes: maxBytesForEntries(entries, keyLength, valueLength, false), ttlMs: 0 });
      return {
        get: (key) => (cache.get(key) === -1 ? undefined : true),
        set: (key, _value, size) => cache.set(key, new Uint8Array(size + keyLength - key.length)),
      };
    },
  },
];

/** The textbook LRU, for comparison. */
function lru(capacity: number): Cacheish {
  const map = new Map<string, unknown>();
  return {
    get(key) {
      const value = map.get(key);
      if (value !== undefined) {
        map.delete(key);
        map.set(key, value);
      }
      return value;
    },
    set(key, value) {
      map.set(key, value);
      if (map.size > capacity) map.delete(map.keys().next().value!);
    },
  };
}

function seededRandom(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return x / 2 ** 32;
  };
}

const repeat = (times: number, ids: number[]) => Array.from({ length: times }, () => ids).flat();
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

describe.each(policies)("slim-edge policy through $name", ({ create }) => {
  it("keeps part of a loop that does not fit, where LRU keeps nothing", () => {
    const trace = repeat(40, range(0, 150));
    const ours = hitRatio(trace, create(100));
    expect(hitRatio(trace, lru(100))).toBe(0);
    expect(ours).toBeGreaterThan(0.4);
  });

  it("a one-time scan does not flush a popular working set", () => {
    const warm = repeat(50, range(0, 50));
    const scan = range(1_000, 6_000);
    const after = repeat(5, range(0, 50));
    const ours = create(100);
    const baseline = lru(100);
    hitRatio([...warm, ...scan], ours);
    hitRatio([...warm, ...scan], baseline);
    expect(hitRatio(after, ours)).toBeGreaterThan(0.95);
    expect(hitRatio(after, baseline)).toBeLessThanOrEqual(0.8);
  });

  it("beats LRU on skewed (Zipf-like) traffic", () => {
    const random = seededRandom(7);
    const trace = Array.from({ length: 50_000 }, () => Math.floor(5_000 * random() ** 4));
    expect(hitRatio(trace, create(200))).toBeGreaterThan(hitRatio(trace, lru(200)));
  });

  it("follows a working set that keeps moving (recency), about as well as LRU", () => {
    const random = seededRandom(1);
    const trace = Array.from({ length: 60_000 }, (_, t) => Math.floor(t / 50) + Math.floor(random() * 200));
    const ours = hitRatio(trace, create(150));
    expect(ours).toBeGreaterThan(0.95 * hitRatio(trace, lru(150)));
  });

  it("with mixed entry sizes, keeps the byte bound and still serves the popular entries", () => {
    // Room for about 19 entries of the average size (525 bytes); sizes run from 50 to 1,000.
    const cache = create(19, 525);
    const random = seededRandom(3);
    const size = (id: number) => 50 + ((id * 7919) % 950);
    let hotHits = 0;
    let hotRequests = 0;
    for (let i = 0; i < 30_000; i++) {
      const hot = random() < 0.5;
      const id = hot ? Math.floor(random() * 10) : 100 + Math.floor(random() * 5_000);
      if (hot) hotRequests++;
      if (cache.get(String(id)) !== undefined) {
        if (hot) hotHits++;
      } else {
        cache.set(String(id), id, size(id));
      }
    }
    expect(hotHits / hotRequests).toBeGreaterThan(0.9);
  });
});

describe("the byte bound with mixed entry sizes", () => {
  it("ReadyCache's counted bytes and SlabCache's allocated memory never exceed their bounds", () => {
    const ready = new ReadyCache<number>({ maxBytes: 10_000, ttlMs: 0 });
    const maxBytes = maxBytesForEntries(19, 8, 525, false);
    const slab = new SlabCache({ maxBytes, ttlMs: 0 });
    const random = seededRandom(3);
    for (let i = 0; i < 30_000; i++) {
      const id = random() < 0.5 ? Math.floor(random() * 10) : 100 + Math.floor(random() * 5_000);
      const size = 50 + ((id * 7919) % 950);
      if (ready.get(String(id)) === undefined) ready.set(String(id), id, size);
      if (slab.get(String(id)) === -1) slab.set(String(id), new Uint8Array(size));
      expect(ready.stats.bytes).toBeLessThanOrEqual(10_000);
      expect(slab.stats.allocatedBytes).toBeLessThanOrEqual(maxBytes);
    }
  });
});
