import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ReadyCache } from "../../src/origin/cache/ready-cache.ts";

function manualClock(start = 1_000) {
  let time = start;
  return {
    now: () => time,
    advance: (ms: number) => {
      time += ms;
    },
  };
}

describe("ReadyCache basics", () => {
  it("returns what was set and counts hits and misses", () => {
    const cache = new ReadyCache<string>({ maxBytes: 1_000, ttlMs: 0 });
    expect(cache.get("a")).toBeUndefined();
    cache.set("a", "alpha", 10);
    expect(cache.get("a")).toBe("alpha");
    expect(cache.stats).toMatchObject({ hits: 1, misses: 1, evictions: 0, entries: 1, bytes: 10 });
  });

  it("delete makes the next get miss", () => {
    const cache = new ReadyCache<string>({ maxBytes: 1_000, ttlMs: 0 });
    cache.set("a", "alpha", 10);
    expect(cache.delete("a")).toBe(true);
    expect(cache.get("a")).toBeUndefined();
    expect(cache.delete("a")).toBe(false);
    expect(cache.stats).toMatchObject({ entries: 0, bytes: 0, evictions: 0 });
  });

  it("replacing a value updates the bytes accounting", () => {
    const cache = new ReadyCache<string>({ maxBytes: 1_000, ttlMs: 0 });
    cache.set("a", "v1", 100);
    cache.set("b", "b", 50);
    cache.set("a", "v2", 300);
    expect(cache.get("a")).toBe("v2");
    expect(cache.stats).toMatchObject({ entries: 2, bytes: 350 });
    cache.set("a", "v3", 20);
    expect(cache.stats).toMatchObject({ entries: 2, bytes: 70 });
  });

  it("never stores an entry larger than maxBytes, and such a replace drops the old value", () => {
    const cache = new ReadyCache<string>({ maxBytes: 100, ttlMs: 0 });
    cache.set("big", "x", 101);
    expect(cache.get("big")).toBeUndefined();
    cache.set("a", "small", 10);
    cache.set("a", "huge", 1_000);
    expect(cache.get("a")).toBeUndefined();
    expect(cache.stats).toMatchObject({ entries: 0, bytes: 0 });
  });

  it("clear empties the cache", () => {
    const cache = new ReadyCache<number>({ maxBytes: 100, ttlMs: 0 });
    for (let i = 0; i < 10; i++) cache.set(`k${i}`, i, 5);
    cache.clear();
    expect(cache.stats).toMatchObject({ entries: 0, bytes: 0 });
    expect(cache.get("k1")).toBeUndefined();
    cache.set("k1", 1, 5);
    expect(cache.get("k1")).toBe(1);
  });

  it("rejects invalid sizes and options with a clear error", () => {
    expect(() => new ReadyCache({ maxBytes: -1, ttlMs: 0 })).toThrow(/maxBytes/);
    expect(() => new ReadyCache({ maxBytes: 10, ttlMs: Number.NaN })).toThrow(/ttlMs/);
    const cache = new ReadyCache<string>({ maxBytes: 10, ttlMs: 0 });
    expect(() => cache.set("a", "x", -1)).toThrow(/bytes/);
    expect(() => cache.set("a", "x", 1.5)).toThrow(/bytes/);
  });
});

describe("ReadyCache TTL", () => {
  it("an entry is a miss once ttlMs has passed since it was set, and is dropped", () => {
    const clock = manualClock();
    const cache = new ReadyCache<string>({ maxBytes: 1_000, ttlMs: 5_000, now: clock.now });
    cache.set("a", "alpha", 10);
    clock.advance(4_999);
    expect(cache.get("a")).toBe("alpha");
    clock.advance(1);
    expect(cache.get("a")).toBeUndefined();
    expect(cache.stats).toMatchObject({ hits: 1, misses: 1, expirations: 1, entries: 0, bytes: 0 });
  });

  it("a replace restarts the entry's TTL", () => {
    const clock = manualClock();
    const cache = new ReadyCache<string>({ maxBytes: 1_000, ttlMs: 100, now: clock.now });
    cache.set("a", "v1", 1);
    clock.advance(60);
    cache.set("a", "v2", 1);
    clock.advance(60);
    expect(cache.get("a")).toBe("v2");
    clock.advance(40);
    expect(cache.get("a")).toBeUndefined();
  });

  it("expired entries stop counting against the byte bound when the cache is written", () => {
    const clock = manualClock();
    const cache = new ReadyCache<string>({ maxBytes: 100, ttlMs: 10, now: clock.now });
    for (let i = 0; i < 5; i++) cache.set(`old${i}`, "x", 20);
    clock.advance(10);
    cache.set("new", "y", 20);
    expect(cache.stats).toMatchObject({ entries: 1, bytes: 20, expirations: 5, evictions: 0 });
    expect(cache.get("new")).toBe("y");
  });

  it("reclaims a backlog of expired entries a few per write (bounded work), faster than writes add", () => {
    const clock = manualClock();
    const cache = new ReadyCache<number>({ maxBytes: 10_000, ttlMs: 10, now: clock.now });
    for (let i = 0; i < 1_000; i++) cache.set(`old${i}`, i, 1);
    clock.advance(10);
    let previous = cache.stats.entries;
    for (let i = 0; i < 200; i++) {
      cache.set(`new${i}`, i, 1);
      const reclaimed = previous + 1 - cache.stats.entries;
      expect(reclaimed).toBeGreaterThan(0);
      expect(reclaimed).toBeLessThanOrEqual(8);
      previous = cache.stats.entries;
      if (cache.stats.expirations === 1_000) break;
    }
    for (let i = 0; i < 200; i++) cache.set(`new${i}`, i, 1);
    for (let i = 0; i < 1_000; i++) expect(cache.get(`old${i}`)).toBeUndefined();
    expect(cache.stats).toMatchObject({ entries: 200, bytes: 200, expirations: 1_000 });
  });

  it("ttlMs 0 means entries never expire", () => {
    const clock = manualClock();
    const cache = new ReadyCache<string>({ maxBytes: 100, ttlMs: 0, now: clock.now });
    cache.set("a", "alpha", 1);
    clock.advance(1e12);
    expect(cache.get("a")).toBe("alpha");
  });
});

type Op =
  | { kind: "set"; key: number; bytes: number }
  | { kind: "get"; key: number }
  | { kind: "delete"; key: number }
  | { kind: "tick"; ms: number };

const MAX_BYTES = 200;
const opArbitrary: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant("set" as const), key: fc.nat(30), bytes: fc.nat(MAX_BYTES + 40) }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant("get" as const), key: fc.nat(30) }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant("delete" as const), key: fc.nat(30) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant("tick" as const), ms: fc.nat(40) }), weight: 1 },
);

describe("ReadyCache properties", () => {
  it("honours the byte bound, never serves a stale or expired value, and keeps stats consistent", () => {
    fc.assert(
      fc.property(fc.array(opArbitrary, { maxLength: 300 }), fc.constantFrom(0, 50), (ops, ttlMs) => {
        const clock = manualClock();
        const cache = new ReadyCache<string>({ maxBytes: MAX_BYTES, ttlMs, now: clock.now });
        const latest = new Map<number, { value: string; writtenAt: number }>();
        let gets = 0;
        let version = 0;
        for (const op of ops) {
          if (op.kind === "set") {
            const value = `${op.key}@${version++}`;
            cache.set(String(op.key), value, op.bytes);
            latest.set(op.key, { value, writtenAt: clock.now() });
          } else if (op.kind === "get") {
            gets++;
            const got = cache.get(String(op.key));
            const expected = latest.get(op.key);
            if (got !== undefined) {
              expect(got).toBe(expected?.value);
              if (ttlMs > 0) expect(clock.now() - expected!.writtenAt).toBeLessThan(ttlMs);
            }
          } else if (op.kind === "delete") {
            cache.delete(String(op.key));
            latest.delete(op.key);
          } else {
            clock.advance(op.ms);
          }
          const stats = cache.stats;
          expect(stats.bytes).toBeLessThanOrEqual(MAX_BYTES);
          expect(stats.bytes).toBeGreaterThanOrEqual(0);
          expect(stats.entries).toBeGreaterThanOrEqual(0);
          expect(stats.hits + stats.misses).toBe(gets);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("entries and bytes equal what a get can still find (no TTL)", () => {
    fc.assert(
      fc.property(fc.array(opArbitrary, { maxLength: 300 }), (ops) => {
        const cache = new ReadyCache<string>({ maxBytes: MAX_BYTES, ttlMs: 0 });
        const sizes = new Map<number, number>();
        for (const op of ops) {
          if (op.kind === "set") {
            cache.set(String(op.key), "v", op.bytes);
            sizes.set(op.key, op.bytes);
          } else if (op.kind === "get") {
            cache.get(String(op.key));
          } else if (op.kind === "delete") {
            cache.delete(String(op.key));
            sizes.delete(op.key);
          }
        }
        const { entries, bytes } = cache.stats;
        let found = 0;
        let foundBytes = 0;
        for (const [key, size] of sizes) {
          if (cache.get(String(key)) !== undefined) {
            found++;
            foundBytes += size;
          }
        }
        expect(entries).toBe(found);
        expect(bytes).toBe(foundBytes);
      }),
      { numRuns: 300 },
    );
  });
});

describe("ReadyCache bound under a skewed stream", () => {
  it("holds at most maxBytes entries of size 1", () => {
    const cache = new ReadyCache<number>({ maxBytes: 64, ttlMs: 0 });
    let x = 12345;
    for (let i = 0; i < 20_000; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      const id = Math.floor(1000 * (x / 2 ** 32) ** 3);
      if (cache.get(String(id)) === undefined) cache.set(String(id), id, 1);
      expect(cache.stats.entries).toBeLessThanOrEqual(64);
    }
    expect(cache.stats.bytes).toBe(cache.stats.entries);
    expect(cache.stats.evictions).toBeGreaterThan(0);
  });
});
