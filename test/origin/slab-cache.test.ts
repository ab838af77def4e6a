import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { entryWeight, maxBytesForEntries, metaBytesPerEntry } from "../../src/origin/cache/slab-budget.ts";
import { SlabCache } from "../../src/origin/cache/slab-cache.ts";

// What SlabCache does beyond the semantics it shares with ReadyCache (test/origin/cache.test.ts):
// keys and values as bytes in slabs, collisions, slab exhaustion, compaction, memory within the bound.

/** Deterministic bytes for (key, version): a value that was moved or overwritten is caught. */
function pattern(seed: number, length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  let x = (seed * 2654435761 + 1) >>> 0;
  for (let i = 0; i < length; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    bytes[i] = x >>> 24;
  }
  return bytes;
}

function read(cache: SlabCache, key: string): Uint8Array | undefined {
  const slot = cache.get(key);
  return slot === -1 ? undefined : cache.value(slot).slice();
}

function manualClock(start = 1_000) {
  let time = start;
  return { now: () => time, advance: (ms: number) => void (time += ms) };
}

describe("SlabCache keys", () => {
  it("every key reads back its own bytes when every key hashes alike", () => {
    const cache = new SlabCache({ maxBytes: 1 << 20, ttlMs: 0, hash: () => 7, slabBytes: 4096 });
    const keys = Array.from({ length: 300 }, (_, i) => `item-${i}`);
    keys.forEach((key, i) => cache.set(key, pattern(i, i % 50)));
    keys.forEach((key, i) => expect(read(cache, key)).toEqual(pattern(i, i % 50)));
    // Removing from the middle of the one long probe run must not hide the keys after it.
    for (let i = 0; i < 300; i += 3) expect(cache.delete(keys[i]!)).toBe(true);
    keys.forEach((key, i) => expect(read(cache, key)).toEqual(i % 3 === 0 ? undefined : pattern(i, i % 50)));
    expect(cache.get("item-300")).toBe(-1);
    expect(cache.get("item-3x")).toBe(-1);
    expect(cache.stats.entries).toBe(200);
  });

  it("never answers for another key with the same hash (a prefix, a longer key, an empty key)", () => {
    const cache = new SlabCache({ maxBytes: 1 << 20, ttlMs: 0, hash: () => -1 });
    cache.set("ab", pattern(1, 3));
    expect(cache.get("a")).toBe(-1);
    expect(cache.get("abc")).toBe(-1);
    expect(cache.get("")).toBe(-1);
    expect(cache.get("ba")).toBe(-1);
    cache.set("", pattern(2, 1));
    expect(read(cache, "")).toEqual(pattern(2, 1));
    expect(read(cache, "ab")).toEqual(pattern(1, 3));
  });

  it("accepts every latin1 key, including a long one, and stores it byte for byte", () => {
    const cache = new SlabCache({ maxBytes: 1 << 20, ttlMs: 0 });
    const all = Array.from({ length: 256 }, (_, c) => String.fromCharCode(c)).join("");
    const long = "k".repeat(5_000);
    cache.set(all, pattern(1, 10));
    cache.set(long, pattern(2, 10));
    expect(read(cache, all)).toEqual(pattern(1, 10));
    expect(read(cache, long)).toEqual(pattern(2, 10));
    expect(cache.get(all.slice(1))).toBe(-1);
  });
});

describe("SlabCache values", () => {
  it("a zero-length value is an entry (the origin's cached 404), not an absence", () => {
    const cache = new SlabCache({ maxBytes: 1 << 20, ttlMs: 0 });
    cache.set("gone", new Uint8Array(0));
    const slot = cache.get("gone");
    expect(slot).not.toBe(-1);
    expect(cache.value(slot).length).toBe(0);
    expect(cache.stats).toMatchObject({ entries: 1, bytes: entryWeight(4, 0, false) });
  });

  it("entries larger than a slab get buffers of their own, counted, and given back", () => {
    const cache = new SlabCache({ maxBytes: 256 * 1024, ttlMs: 0, slabBytes: 256 });
    cache.set("small", pattern(1, 40));
    const before = cache.stats.allocatedBytes;
    cache.set("big", pattern(2, 20_000));
    expect(cache.stats.allocatedBytes).toBeGreaterThanOrEqual(before + 20_000);
    expect(read(cache, "big")).toEqual(pattern(2, 20_000));
    cache.set("big", pattern(3, 30)); // large → small
    expect(read(cache, "big")).toEqual(pattern(3, 30));
    expect(cache.stats.allocatedBytes).toBeLessThan(before + 20_000);
    cache.set("small", pattern(4, 50_000)); // small → large
    expect(read(cache, "small")).toEqual(pattern(4, 50_000));
    expect(cache.delete("small")).toBe(true);
    expect(cache.stats.allocatedBytes).toBeLessThan(before + 20_000);
    expect(cache.stats.allocatedBytes).toBeLessThanOrEqual(256 * 1024);
  });

  it("a value set from a view of a cached value is copied before compaction can reuse its slab", () => {
    const maxBytes = 300_000;
    const cache = new SlabCache({ maxBytes, ttlMs: 0, slabBytes: 4096 });
    let x = 5;
    const random = (n: number) => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 8) % n;
    const expected = new Map<string, Uint8Array>();
    for (let round = 0; round < 20_000; round++) {
      const key = `k${random(2_000)}`;
      const value = pattern(round, 100 + random(300));
      cache.set(key, value); // churn: the slab budget fills with garbage and compaction runs
      expected.set(key, value);
      const from = `k${random(2_000)}`;
      const slot = cache.get(from);
      if (slot === -1) continue;
      const to = random(2) === 0 ? from : `k${random(2_000)}`; // the same key or another
      cache.set(to, cache.value(slot));
      expected.set(to, expected.get(from)!);
    }
    expect(cache.diagnostics.compactedBytes).toBeGreaterThan(0);
    for (const [key, value] of expected) {
      const got = read(cache, key);
      if (got !== undefined) expect(got).toEqual(value);
    }
  });
});

describe("SlabCache TTL and clear", () => {
  it("filledAt is the clock when the value was set; a replace restarts it; an expired get drops the entry", () => {
    const clock = manualClock(5_000);
    const cache = new SlabCache({ maxBytes: 1 << 20, ttlMs: 100, now: clock.now });
    cache.set("a", pattern(1, 5));
    clock.advance(30);
    expect(cache.filledAt(cache.get("a"))).toBe(5_000);
    cache.set("a", pattern(2, 5));
    expect(cache.filledAt(cache.get("a"))).toBe(5_030);
    clock.advance(99);
    expect(read(cache, "a")).toEqual(pattern(2, 5));
    clock.advance(1);
    expect(cache.get("a")).toBe(-1);
    expect(cache.stats).toMatchObject({ expirations: 1, entries: 0, bytes: 0 });
  });

  it("clear forgets every entry, keeps memory within the bound, and the cache works on", () => {
    const maxBytes = 256 * 1024;
    const cache = new SlabCache({ maxBytes, ttlMs: 0, slabBytes: 2048 });
    for (let i = 0; i < 2_000; i++) cache.set(`k${i}`, pattern(i, (i * 37) % 700));
    cache.set("huge", pattern(9, 9_000));
    cache.clear();
    expect(cache.stats).toMatchObject({ entries: 0, bytes: 0 });
    expect(cache.stats.allocatedBytes).toBeLessThanOrEqual(maxBytes);
    for (let i = 0; i < 2_000; i++) expect(cache.get(`k${i}`)).toBe(-1);
    for (let i = 0; i < 2_000; i++) cache.set(`k${i}`, pattern(i + 1, (i * 37) % 700));
    for (let i = 0; i < 2_000; i++) {
      const value = read(cache, `k${i}`);
      if (value !== undefined) expect(value).toEqual(pattern(i + 1, (i * 37) % 700));
    }
    expect(cache.stats.entries).toBeGreaterThan(100);
  });
});

type ChurnOp =
  | { kind: "set"; key: number; length: number }
  | { kind: "get"; key: number }
  | { kind: "delete"; key: number }
  | { kind: "tick"; ms: number }
  | { kind: "clear" };

/** Slabs of 4 KiB keep records up to 512 bytes; larger ones get buffers of their own. */
const SLAB = 4096;
/**
 * Over 40 keys, replaced records leave whole slabs dead (reused from the pool); over 400, the slab
 * budget fills with scattered garbage and compaction runs.
 */
function churnOps(keys: number): fc.Arbitrary<ChurnOp[]> {
  const op: fc.Arbitrary<ChurnOp> = fc.oneof(
    {
      arbitrary: fc.record({
        kind: fc.constant("set" as const),
        key: fc.nat(keys),
        length: fc.oneof({ arbitrary: fc.nat(450), weight: 3 }, { arbitrary: fc.integer({ min: 450, max: 3 * SLAB }), weight: 1 }),
      }),
      weight: 120,
    },
    { arbitrary: fc.record({ kind: fc.constant("get" as const), key: fc.nat(keys) }), weight: 60 },
    { arbitrary: fc.record({ kind: fc.constant("delete" as const), key: fc.nat(keys) }), weight: 30 },
    { arbitrary: fc.record({ kind: fc.constant("tick" as const), ms: fc.nat(30) }), weight: 20 },
    { arbitrary: fc.constant({ kind: "clear" as const }), weight: 1 },
  );
  return fc.array(op, { maxLength: 600, size: "max" });
}

describe("SlabCache under random churn (slab exhaustion, fragmentation, reuse)", () => {
  it("memory never exceeds the bound and every entry it finds holds its own latest bytes", () => {
    fc.assert(
      fc.property(fc.oneof(churnOps(40), churnOps(400)), fc.constantFrom(0, 60), fc.constantFrom(200_000, 400_000), (ops, ttlMs, maxBytes) => {
        const clock = manualClock();
        const cache = new SlabCache({ maxBytes, ttlMs, now: clock.now, slabBytes: SLAB });
        const model = new Map<number, { version: number; length: number; at: number }>();
        let version = 0;
        for (const op of ops) {
          if (op.kind === "set") {
            model.set(op.key, { version: ++version, length: op.length, at: clock.now() });
            cache.set(`key-${op.key}`, pattern(version, op.length));
          } else if (op.kind === "get") {
            const value = read(cache, `key-${op.key}`);
            const expected = model.get(op.key);
            if (value !== undefined) {
              expect(value).toEqual(pattern(expected!.version, expected!.length));
              if (ttlMs > 0) expect(clock.now() - expected!.at).toBeLessThan(ttlMs);
            }
          } else if (op.kind === "delete") {
            cache.delete(`key-${op.key}`);
            model.delete(op.key);
          } else if (op.kind === "tick") {
            clock.advance(op.ms);
          } else {
            cache.clear();
            model.clear();
          }
          expect(cache.stats.allocatedBytes).toBeLessThanOrEqual(maxBytes);
          expect(cache.stats.bytes).toBeLessThanOrEqual(cache.diagnostics.policyMaximum);
        }
        // Every live entry intact; entries and bytes are exactly what can be found.
        let found = 0;
        let bytes = 0;
        for (const [key, { version: v, length }] of model) {
          const value = read(cache, `key-${key}`);
          if (value === undefined) continue;
          expect(value).toEqual(pattern(v, length));
          found++;
          bytes += entryWeight(`key-${key}`.length, length, ttlMs > 0);
        }
        expect(cache.stats.entries).toBe(found);
        expect(cache.stats.bytes).toBe(bytes);
      }),
      { numRuns: 100 },
    );
  });

  it("a long churn exhausts the slabs, compacts and reuses them, and keeps every live entry intact", () => {
    const maxBytes = 400_000;
    const cache = new SlabCache({ maxBytes, ttlMs: 0, slabBytes: SLAB });
    const model = new Map<number, { version: number; length: number }>();
    let x = 42;
    const random = (n: number) => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 8) % n;
    for (let i = 0; i < 30_000; i++) {
      const key = random(1_500);
      const action = random(10);
      if (action < 6) {
        const length = random(4) === 0 ? 450 + random(3 * SLAB) : random(450);
        model.set(key, { version: i, length });
        cache.set(`key-${key}`, pattern(i, length));
      } else if (action < 8) {
        cache.delete(`key-${key}`);
        model.delete(key);
      } else {
        const value = read(cache, `key-${key}`);
        if (value !== undefined) expect(value).toEqual(pattern(model.get(key)!.version, model.get(key)!.length));
      }
      expect(cache.stats.allocatedBytes).toBeLessThanOrEqual(maxBytes);
    }
    const diagnostics = cache.diagnostics;
    expect(diagnostics.compactedBytes).toBeGreaterThan(0);
    expect(diagnostics.slabBytes + diagnostics.structureBytes).toBeGreaterThan(0.9 * maxBytes);
    expect(cache.stats.evictions).toBeGreaterThan(1_000);
    let found = 0;
    for (const [key, { version, length }] of model) {
      const value = read(cache, `key-${key}`);
      if (value === undefined) continue;
      expect(value).toEqual(pattern(version, length));
      found++;
    }
    expect(found).toBe(cache.stats.entries);
  });

  it("the same holds when every key collides", () => {
    fc.assert(
      fc.property(churnOps(400), (ops) => {
        const cache = new SlabCache({ maxBytes: 200_000, ttlMs: 0, slabBytes: SLAB, hash: (key) => key.length % 2 });
        const model = new Map<number, Uint8Array>();
        for (const op of ops) {
          if (op.kind === "set") {
            const value = pattern(op.key * 1000 + op.length, op.length);
            model.set(op.key, value);
            cache.set(`${op.key}`, value);
          } else if (op.kind === "delete") {
            cache.delete(`${op.key}`);
            model.delete(op.key);
          } else if (op.kind === "get") {
            const value = read(cache, `${op.key}`);
            if (value !== undefined) expect(value).toEqual(model.get(op.key));
          }
          expect(cache.stats.allocatedBytes).toBeLessThanOrEqual(200_000);
        }
        for (const [key, value] of model) {
          const got = read(cache, `${key}`);
          if (got !== undefined) expect(got).toEqual(value);
        }
      }),
      { numRuns: 100 },
    );
  });

  it("after the structures grew for many small entries, large entries still fit within the bound", () => {
    const maxBytes = 2 << 20;
    const cache = new SlabCache({ maxBytes, ttlMs: 0, slabBytes: 16 * 1024 });
    for (let i = 0; i < 40_000; i++) cache.set(`tiny-${i}`, new Uint8Array(0));
    const tinyEntries = cache.stats.entries;
    for (let i = 0; i < 3_000; i++) {
      cache.set(`large-${i}`, pattern(i, 1_000 + (i % 5) * 1_000));
      expect(cache.stats.allocatedBytes).toBeLessThanOrEqual(maxBytes);
    }
    expect(cache.stats.entries).toBeLessThan(tinyEntries);
    for (let i = 2_900; i < 3_000; i++) {
      const value = read(cache, `large-${i}`);
      if (value !== undefined) expect(value).toEqual(pattern(i, 1_000 + (i % 5) * 1_000));
    }
  });
});

describe("SlabCache fills its bound with entries", () => {
  it("at steady state the memory is near maxBytes and most of it holds records", () => {
    const maxBytes = 8 << 20;
    const cache = new SlabCache({ maxBytes, ttlMs: 0 });
    let x = 1;
    for (let i = 0; cache.stats.evictions < 20_000; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      cache.set(`item-${i}`, new Uint8Array(100 + (x % 500)));
    }
    const { allocatedBytes, bytes, entries } = cache.stats;
    const records = bytes - entries * metaBytesPerEntry(false);
    expect(allocatedBytes).toBeLessThanOrEqual(maxBytes);
    expect(allocatedBytes).toBeGreaterThan(0.95 * maxBytes);
    // The rest: slot arrays and index (52 B/entry, ~10%), the sketch (~6%), the compaction reserve (6%).
    expect(records).toBeGreaterThan(0.7 * maxBytes);
  });
});

describe("SlabCache keeps entries off the heap", () => {
  it("the V8 heap does not grow with the entry count (20,000 vs 300,000 entries)", () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const heapGrowth = (entries: number) => {
      const cache = new SlabCache({ maxBytes: 1 << 28, ttlMs: 60_000 });
      const value = new Uint8Array(20);
      gc();
      const before = process.memoryUsage().heapUsed;
      for (let i = 0; i < entries; i++) cache.set(`item-${i}`, value);
      gc();
      const growth = process.memoryUsage().heapUsed - before;
      expect(cache.stats.entries).toBe(entries);
      return growth;
    };
    heapGrowth(20_000); // compile the path first
    const small = heapGrowth(20_000);
    const large = heapGrowth(300_000);
    // ReadyCache grows ~200 B of heap per entry (60 MB here); SlabCache's heap is a few objects per slab.
    expect(large - small).toBeLessThan(1 << 20);
  });
});
