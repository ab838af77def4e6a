import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ReadyCache } from "../../src/origin/cache/ready-cache.ts";
import { entryWeight, maxBytesForEntries } from "../../src/origin/cache/slab-budget.ts";
import { SlabCache } from "../../src/origin/cache/slab-cache.ts";

function manualClock(start = 1_000) {
  let time = start;
  return {
    now: () => time,
    advance: (ms: number) => {
      time += ms;
    },
  };
}

/**
 * The cache semantics every origin cache must keep, checked against both: ReadyCache (values on the
 * heap, the caller states each entry's bytes) and SlabCache (values copied off the heap, the cache
 * weighs each entry itself). Both see the same weights: ReadyCache is told SlabCache's weight of the
 * entry, so the same operations make the same policy decisions.
 */
interface TestCache {
  get(key: string): string | undefined;
  set(key: string, value: string): void;
  delete(key: string): boolean;
  clear(): void;
  readonly stats: { hits: number; misses: number; evictions: number; expirations: number; entries: number; bytes: number };
  /** The weight bound the policy enforces now. */
  readonly maximum: number;
  /** Whatever else must hold after every operation (SlabCache: memory within maxBytes). */
  checkMemory(): void;
}

interface Sizing {
  /** The cache holds exactly this many entries whose key and value have these lengths. */
  entries: number;
  keyLength: number;
  valueLength: number;
  ttlMs: number;
  now?: () => number;
}

interface Subject {
  name: string;
  create(sizing: Sizing): TestCache;
}

const weight = (key: string, value: string, ttlMs: number) => entryWeight(key.length, value.length, ttlMs > 0);

const subjects: Subject[] = [
  {
    name: "ReadyCache",
    create({ entries, keyLength, valueLength, ttlMs, now }) {
      const maxBytes = entries * entryWeight(keyLength, valueLength, ttlMs > 0);
      const cache = new ReadyCache<string>({ maxBytes, ttlMs, now });
      return {
        get: (key) => cache.get(key),
        set: (key, value) => cache.set(key, value, weight(key, value, ttlMs)),
        delete: (key) => cache.delete(key),
        clear: () => cache.clear(),
        get stats() {
          return cache.stats;
        },
        maximum: maxBytes,
        checkMemory() {},
      };
    },
  },
  {
    name: "SlabCache",
    create({ entries, keyLength, valueLength, ttlMs, now }) {
      const maxBytes = maxBytesForEntries(entries, keyLength, valueLength, ttlMs > 0, 1024);
      const cache = new SlabCache({ maxBytes, ttlMs, now, slabBytes: 1024 });
      return {
        get(key) {
          const slot = cache.get(key);
          return slot === -1 ? undefined : Buffer.from(cache.value(slot)).toString("latin1");
        },
        set: (key, value) => cache.set(key, Buffer.from(value, "latin1")),
        delete: (key) => cache.delete(key),
        clear: () => cache.clear(),
        get stats() {
          return cache.stats;
        },
        get maximum() {
          return cache.diagnostics.policyMaximum;
        },
        checkMemory() {
          expect(cache.stats.allocatedBytes).toBeLessThanOrEqual(maxBytes);
        },
      };
    },
  },
];

const roomy = { entries: 100, keyLength: 4, valueLength: 16, ttlMs: 0 };

describe.each(subjects)("$name basics", (subject) => {
  it("returns what was set and counts hits and misses", () => {
    const cache = subject.create(roomy);
    expect(cache.get("a")).toBeUndefined();
    cache.set("a", "alpha");
    expect(cache.get("a")).toBe("alpha");
    expect(cache.stats).toMatchObject({ hits: 1, misses: 1, evictions: 0, entries: 1, bytes: weight("a", "alpha", 0) });
  });

  it("delete makes the next get miss", () => {
    const cache = subject.create(roomy);
    cache.set("a", "alpha");
    expect(cache.delete("a")).toBe(true);
    expect(cache.get("a")).toBeUndefined();
    expect(cache.delete("a")).toBe(false);
    expect(cache.stats).toMatchObject({ entries: 0, bytes: 0, evictions: 0 });
  });

  it("replacing a value updates the bytes accounting", () => {
    const cache = subject.create(roomy);
    const [v1, b, v2, v3] = ["1".repeat(100), "b".repeat(50), "2".repeat(300), "3".repeat(20)];
    cache.set("a", v1);
    cache.set("b", b);
    cache.set("a", v2);
    expect(cache.get("a")).toBe(v2);
    expect(cache.stats).toMatchObject({ entries: 2, bytes: weight("a", v2, 0) + weight("b", b, 0) });
    cache.set("a", v3);
    expect(cache.stats).toMatchObject({ entries: 2, bytes: weight("a", v3, 0) + weight("b", b, 0) });
    cache.checkMemory();
  });

  it("never stores an entry larger than the bound, and such a replace drops the old value", () => {
    const cache = subject.create({ ...roomy, entries: 4 });
    const huge = "x".repeat(cache.maximum);
    cache.set("big", huge);
    expect(cache.get("big")).toBeUndefined();
    cache.set("a", "small");
    cache.set("a", huge);
    expect(cache.get("a")).toBeUndefined();
    expect(cache.stats).toMatchObject({ entries: 0, bytes: 0 });
    cache.checkMemory();
  });

  it("clear empties the cache", () => {
    const cache = subject.create({ ...roomy, entries: 20 });
    for (let i = 0; i < 10; i++) cache.set(`k${i}`, `${i}`);
    cache.clear();
    expect(cache.stats).toMatchObject({ entries: 0, bytes: 0 });
    expect(cache.get("k1")).toBeUndefined();
    cache.set("k1", "1");
    expect(cache.get("k1")).toBe("1");
    cache.checkMemory();
  });
});

describe("option and input checks", () => {
  it("ReadyCache rejects invalid sizes and options with a clear error", () => {
    expect(() => new ReadyCache({ maxBytes: -1, ttlMs: 0 })).toThrow(/maxBytes/);
    expect(() => new ReadyCache({ maxBytes: 10, ttlMs: Number.NaN })).toThrow(/ttlMs/);
    const cache = new ReadyCache<string>({ maxBytes: 10, ttlMs: 0 });
    expect(() => cache.set("a", "x", -1)).toThrow(/bytes/);
    expect(() => cache.set("a", "x", 1.5)).toThrow(/bytes/);
  });

  it("SlabCache rejects invalid options, a bound below its fixed structures (naming the minimum), and non-latin1 keys", () => {
    expect(() => new SlabCache({ maxBytes: -1, ttlMs: 0 })).toThrow(/maxBytes/);
    expect(() => new SlabCache({ maxBytes: 1.5, ttlMs: 0 })).toThrow(/maxBytes/);
    expect(() => new SlabCache({ maxBytes: 1 << 20, ttlMs: Number.NaN })).toThrow(/ttlMs/);
    expect(() => new SlabCache({ maxBytes: 1 << 20, ttlMs: 0, slabBytes: 0 })).toThrow(/slabBytes/);
    expect(() => new SlabCache({ maxBytes: 4096, ttlMs: 0 })).toThrow(/maxBytes 4096 .* use at least \d+/);
    const cache = new SlabCache({ maxBytes: 1 << 20, ttlMs: 0 });
    cache.set("caf\u00e9\u00ff", new Uint8Array([1]));
    expect(cache.get("caf\u00e9\u00ff")).not.toBe(-1);
    for (const key of ["\u0100", "snow\u2603", "\u{1f600}"]) {
      expect(() => cache.set(key, new Uint8Array(1))).toThrow(RangeError);
      expect(() => cache.get(key)).toThrow(/latin1/);
      expect(() => cache.delete(key)).toThrow(RangeError);
    }
    expect(() => cache.value(12345)).toThrow(/not the slot of a live entry/);
  });
});

describe.each(subjects)("$name TTL", (subject) => {
  it("an entry is a miss once ttlMs has passed since it was set, and is dropped", () => {
    const clock = manualClock();
    const cache = subject.create({ ...roomy, ttlMs: 5_000, now: clock.now });
    cache.set("a", "alpha");
    clock.advance(4_999);
    expect(cache.get("a")).toBe("alpha");
    clock.advance(1);
    expect(cache.get("a")).toBeUndefined();
    expect(cache.stats).toMatchObject({ hits: 1, misses: 1, expirations: 1, entries: 0, bytes: 0 });
  });

  it("a replace restarts the entry's TTL", () => {
    const clock = manualClock();
    const cache = subject.create({ ...roomy, ttlMs: 100, now: clock.now });
    cache.set("a", "v1");
    clock.advance(60);
    cache.set("a", "v2");
    clock.advance(60);
    expect(cache.get("a")).toBe("v2");
    clock.advance(40);
    expect(cache.get("a")).toBeUndefined();
  });

  it("expired entries stop counting against the byte bound when the cache is written", () => {
    const clock = manualClock();
    const cache = subject.create({ entries: 5, keyLength: 4, valueLength: 20, ttlMs: 10, now: clock.now });
    const value = "x".repeat(20);
    for (let i = 0; i < 5; i++) cache.set(`old${i}`, value);
    expect(cache.stats.entries).toBe(5);
    clock.advance(10);
    cache.set("new0", value);
    expect(cache.stats).toMatchObject({ entries: 1, bytes: weight("new0", value, 10), expirations: 5, evictions: 0 });
    expect(cache.get("new0")).toBe(value);
  });

  it("reclaims a backlog of expired entries a few per write (bounded work), faster than writes add", () => {
    const clock = manualClock();
    const cache = subject.create({ entries: 1_250, keyLength: 6, valueLength: 3, ttlMs: 10, now: clock.now });
    for (let i = 0; i < 1_000; i++) cache.set(`old${i}`, `${i}`);
    expect(cache.stats.entries).toBe(1_000);
    clock.advance(10);
    let previous = cache.stats.entries;
    for (let i = 0; i < 200; i++) {
      cache.set(`new${i}`, `${i}`);
      const reclaimed = previous + 1 - cache.stats.entries;
      expect(reclaimed).toBeGreaterThan(0);
      expect(reclaimed).toBeLessThanOrEqual(8);
      previous = cache.stats.entries;
      if (cache.stats.expirations === 1_000) break;
    }
    for (let i = 0; i < 200; i++) cache.set(`new${i}`, `${i}`);
    for (let i = 0; i < 1_000; i++) expect(cache.get(`old${i}`)).toBeUndefined();
    let bytes = 0;
    for (let i = 0; i < 200; i++) bytes += weight(`new${i}`, `${i}`, 10);
    expect(cache.stats).toMatchObject({ entries: 200, bytes, expirations: 1_000 });
    cache.checkMemory();
  });

  it("ttlMs 0 means entries never expire", () => {
    const clock = manualClock();
    const cache = subject.create({ ...roomy, now: clock.now });
    cache.set("a", "alpha");
    clock.advance(1e12);
    expect(cache.get("a")).toBe("alpha");
  });
});

type Op =
  | { kind: "set"; key: number; length: number }
  | { kind: "get"; key: number }
  | { kind: "delete"; key: number }
  | { kind: "tick"; ms: number };

/** Room for 6 entries of 100-byte values; values up to 1,500 bytes (some larger than the bound). */
const PROPERTY_SIZING = { entries: 6, keyLength: 2, valueLength: 100 };
const opArbitrary: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant("set" as const), key: fc.nat(30), length: fc.nat(1_500) }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant("get" as const), key: fc.nat(30) }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant("delete" as const), key: fc.nat(30) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant("tick" as const), ms: fc.nat(40) }), weight: 1 },
);

describe.each(subjects)("$name properties", (subject) => {
  it("honours the byte bound, never serves a stale or expired value, and keeps stats consistent", () => {
    fc.assert(
      fc.property(fc.array(opArbitrary, { maxLength: 300, size: "max" }), fc.constantFrom(0, 50), (ops, ttlMs) => {
        const clock = manualClock();
        const cache = subject.create({ ...PROPERTY_SIZING, ttlMs, now: clock.now });
        const latest = new Map<number, { value: string; writtenAt: number }>();
        let gets = 0;
        let version = 0;
        for (const op of ops) {
          if (op.kind === "set") {
            const value = `${op.key}@${version++}:`.padEnd(op.length, "v");
            cache.set(String(op.key), value);
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
          expect(stats.bytes).toBeLessThanOrEqual(cache.maximum);
          expect(stats.bytes).toBeGreaterThanOrEqual(0);
          expect(stats.entries).toBeGreaterThanOrEqual(0);
          expect(stats.hits + stats.misses).toBe(gets);
          cache.checkMemory();
        }
      }),
      { numRuns: 200 },
    );
  });

  it("entries and bytes equal what a get can still find (no TTL)", () => {
    fc.assert(
      fc.property(fc.array(opArbitrary, { maxLength: 300, size: "max" }), (ops) => {
        const cache = subject.create({ ...PROPERTY_SIZING, ttlMs: 0 });
        const values = new Map<number, string>();
        for (const op of ops) {
          if (op.kind === "set") {
            const value = "v".repeat(op.length);
            cache.set(String(op.key), value);
            values.set(op.key, value);
          } else if (op.kind === "get") {
            cache.get(String(op.key));
          } else if (op.kind === "delete") {
            cache.delete(String(op.key));
            values.delete(op.key);
          }
        }
        const { entries, bytes } = cache.stats;
        let found = 0;
        let foundBytes = 0;
        for (const [key, value] of values) {
          if (cache.get(String(key)) !== undefined) {
            found++;
            foundBytes += weight(String(key), value, 0);
          }
        }
        expect(entries).toBe(found);
        expect(bytes).toBe(foundBytes);
      }),
      { numRuns: 200 },
    );
  });
});

describe.each(subjects)("$name bound under a skewed stream", (subject) => {
  it("holds at most as many equal entries as it was sized for", () => {
    const cache = subject.create({ entries: 64, keyLength: 3, valueLength: 0, ttlMs: 0 });
    let x = 12345;
    for (let i = 0; i < 20_000; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      const key = String(Math.floor(1000 * (x / 2 ** 32) ** 3));
      const value = "p".repeat(3 - key.length); // every entry weighs the same
      if (cache.get(key) === undefined) cache.set(key, value);
      expect(cache.stats.entries).toBeLessThanOrEqual(64);
    }
    expect(cache.stats.bytes).toBe(cache.stats.entries * entryWeight(3, 0, false));
    expect(cache.stats.evictions).toBeGreaterThan(0);
    cache.checkMemory();
  });
});
