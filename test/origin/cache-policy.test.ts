import { describe, expect, it } from "vitest";
import { ReadyCache } from "../../src/origin/cache/ready-cache.ts";

interface Cacheish {
  get(key: string): unknown;
  set(key: string, value: unknown, bytes: number): void;
}

/** Hit ratio of a cache-aside loop over `trace`: get, and set (1 byte) on a miss. */
function hitRatio(trace: number[], cache: Cacheish): number {
  let hits = 0;
  for (const id of trace) {
    const key = String(id);
    if (cache.get(key) !== undefined) hits++;
    else cache.set(key, id, 1);
  }
  return hits / trace.length;
}

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

describe("slim-edge policy (ReadyCache with 1-byte entries)", () => {
  it("keeps part of a loop that does not fit, where LRU keeps nothing", () => {
    const trace = repeat(40, range(0, 150));
    const ours = hitRatio(trace, new ReadyCache({ maxBytes: 100, ttlMs: 0 }));
    expect(hitRatio(trace, lru(100))).toBe(0);
    expect(ours).toBeGreaterThan(0.4);
  });

  it("a one-time scan does not flush a popular working set", () => {
    const warm = repeat(50, range(0, 50));
    const scan = range(1_000, 6_000);
    const after = repeat(5, range(0, 50));
    const ours = new ReadyCache({ maxBytes: 100, ttlMs: 0 });
    const baseline = lru(100);
    hitRatio([...warm, ...scan], ours);
    hitRatio([...warm, ...scan], baseline);
    expect(hitRatio(after, ours)).toBeGreaterThan(0.95);
    expect(hitRatio(after, baseline)).toBeLessThanOrEqual(0.8);
  });

  it("beats LRU on skewed (Zipf-like) traffic", () => {
    const random = seededRandom(7);
    const trace = Array.from({ length: 50_000 }, () => Math.floor(5_000 * random() ** 4));
    expect(hitRatio(trace, new ReadyCache({ maxBytes: 200, ttlMs: 0 }))).toBeGreaterThan(hitRatio(trace, lru(200)));
  });

  it("follows a working set that keeps moving (recency), about as well as LRU", () => {
    const random = seededRandom(1);
    const trace = Array.from({ length: 60_000 }, (_, t) => Math.floor(t / 50) + Math.floor(random() * 200));
    const ours = hitRatio(trace, new ReadyCache({ maxBytes: 150, ttlMs: 0 }));
    expect(ours).toBeGreaterThan(0.95 * hitRatio(trace, lru(150)));
  });

  it("with mixed entry sizes, keeps the byte bound and still serves the popular entries", () => {
    const cache = new ReadyCache<number>({ maxBytes: 10_000, ttlMs: 0 });
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
      expect(cache.stats.bytes).toBeLessThanOrEqual(10_000);
    }
    expect(hotHits / hotRequests).toBeGreaterThan(0.9);
  });
});
