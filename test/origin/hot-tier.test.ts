import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Wire, type ReadyEntry } from "../../src/origin/http/wire.ts";
import { hotTierBytes, maxBytesWithHotTier } from "../../src/origin/reads/hot-tier.ts";
import { readyItems, type ReadyItems } from "../../src/origin/reads/ready-items.ts";

// The ready items' heap tier (src/origin/reads/hot-tier.ts): popular ids answered from heap strings in
// front of the slab cache. It must change nothing a caller can see but the time a hit takes.

const wire = new Wire({ sendDate: false, reasonPhrase: true });
const encoder = new TextEncoder();
const MiB = 2 ** 20;

/** Item `id` at `version`, its body `length` bytes long. */
function item(id: string, version: number, length = 80): ReadyEntry {
  const body = encoder.encode(`{"id":"${id}","v":${version},"pad":"${"x".repeat(length)}"}`);
  return wire.entry({ etag: `"t${version}"`, body });
}

function manualClock(start = 1_000) {
  let time = start;
  return { now: () => time, advance: (ms: number) => void (time += ms) };
}

/** What a caller sees of an answer (a reused view or a heap entry alike). */
function seen(entry: ReadyEntry | undefined) {
  if (entry === undefined) return undefined;
  if (!entry.found) return { found: false };
  return { found: true, etag: entry.etag, r200: entry.r200, r304: entry.r304, headLength: entry.headLength };
}

/** Read `id` until the tier answers it (the policy names popular slots as it applies hits, in batches). */
function readUntilHot(items: ReadyItems, id: string): void {
  for (let reads = 1; reads <= 500; reads++) {
    const before = items.stats.hotHits;
    items.get(id);
    if (items.stats.hotHits > before) return;
  }
  throw new Error(`${id} was never answered by the heap tier`);
}

describe("heap tier", () => {
  it("answers an id read often from the heap, and sees a new version, a delete and an expiry at once", () => {
    const clock = manualClock();
    const items = readyItems({ maxBytes: 8 * MiB, ttlMs: 60_000, now: clock.now });
    items.set("7", item("7", 1));
    readUntilHot(items, "7");
    expect(items.stats.hotEntries).toBe(1);
    const hotHits = items.stats.hotHits;
    expect(seen(items.get("7"))).toEqual(seen(item("7", 1)));
    expect(items.stats.hotHits).toBe(hotHits + 1);

    items.set("7", item("7", 2));
    expect(items.stats.hotEntries).toBe(0);
    expect(seen(items.get("7"))).toEqual(seen(item("7", 2)));
    readUntilHot(items, "7");
    expect(seen(items.get("7"))).toEqual(seen(item("7", 2)));

    readUntilHot(items, "7");
    expect(items.delete("7")).toBe(true);
    expect(items.stats.hotEntries).toBe(0);
    expect(items.get("7")).toBeUndefined();

    items.set("7", item("7", 3));
    readUntilHot(items, "7");
    clock.advance(60_000);
    const expirations = items.stats.expirations;
    expect(items.get("7")).toBeUndefined();
    expect(items.stats).toMatchObject({ hotEntries: 0, expirations: expirations + 1 });
  });

  it("counts a heap-tier hit as a hit of the cache, with the entry's age", () => {
    const clock = manualClock();
    const items = readyItems({ maxBytes: 8 * MiB, ttlMs: 60_000, now: clock.now });
    items.set("a", item("a", 1));
    readUntilHot(items, "a");
    clock.advance(1_234);
    const { hits, misses } = items.stats;
    items.get("a");
    expect(items.lastAgeMs()).toBe(1_234);
    expect(items.stats).toMatchObject({ hits: hits + 1, misses });
  });

  it("keeps a cached 404 too, and a kept heap entry is the entry itself (nothing to copy)", () => {
    const items = readyItems({ maxBytes: 8 * MiB, ttlMs: 0 });
    items.set("gone", { found: false });
    readUntilHot(items, "gone");
    expect(items.get("gone")).toEqual({ found: false });
    items.set("1", item("1", 1));
    readUntilHot(items, "1");
    const entry = items.get("1")!;
    expect(items.keep(entry)).toBe(entry);
  });

  it("leaves the tier empty when reads are spread over many ids, each read once", () => {
    const items = readyItems({ maxBytes: 8 * MiB, ttlMs: 0 });
    for (let id = 1; id <= 5_000; id++) items.set(String(id), item(String(id), 1));
    for (let id = 1; id <= 5_000; id++) items.get(String(id));
    expect(items.stats).toMatchObject({ hits: 5_000, hotEntries: 0, hotHits: 0 });
  });

  it("is not made for a cache too small to spare it room: the slabs get all of CACHE_MAX_BYTES", () => {
    expect(hotTierBytes(373 * 1024)).toBe(0);
    expect(hotTierBytes(64 * MiB)).toBe(2 * MiB);
    expect(hotTierBytes(64 * 1024 * MiB)).toBe(4 * MiB);
    const items = readyItems({ maxBytes: 1 * MiB, ttlMs: 0 });
    items.set("1", item("1", 1));
    for (let i = 0; i < 500; i++) items.get("1");
    expect(items.stats).toMatchObject({ hits: 500, hotEntries: 0, hotHits: 0 });
  });

  it("maxBytesWithHotTier gives the slabs exactly what they were sized for", () => {
    fc.assert(
      fc.property(fc.integer({ min: 64 * 1024, max: 2 ** 40 }), (slabMaxBytes) => {
        const maxBytes = maxBytesWithHotTier(slabMaxBytes);
        expect(maxBytes - hotTierBytes(maxBytes)).toBe(slabMaxBytes);
      }),
    );
  });

  it("refuses a tier share larger than the whole bound, naming the option", () => {
    expect(() => readyItems({ maxBytes: MiB, ttlMs: 0, hotTierBytes: 2 * MiB })).toThrow(/hotTierBytes must be an integer from 0 to maxBytes \(1048576\), got 2097152/);
  });

  it("changes nothing a caller sees: the same answers, ages and counters as the slabs alone (fast-check)", () => {
    const tierBytes = 96 * 1024;
    const slabBytes = 256 * 1024;
    let hotHits = 0;
    // A few popular ids among many (the tier holds about a hundred entries, the slabs a few hundred).
    const id = fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 0, max: 7 }) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 400 }) });
    const op = fc.oneof(
      { weight: 6, arbitrary: fc.record({ kind: fc.constant("get" as const), id }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant("set" as const), id, version: fc.nat(9), length: fc.integer({ min: 0, max: 600 }) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant("delete" as const), id: fc.integer({ min: 0, max: 400 }) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 400 }) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant("missing" as const), id: fc.integer({ min: 0, max: 400 }) }) },
    );
    fc.assert(
      fc.property(fc.array(op, { minLength: 200, maxLength: 3_000 }), fc.boolean(), (ops, clearOnce) => {
        const clock = manualClock();
        const ttlMs = 5_000;
        const tiered = readyItems({ maxBytes: slabBytes + tierBytes, hotTierBytes: tierBytes, ttlMs, now: clock.now });
        const plain = readyItems({ maxBytes: slabBytes, hotTierBytes: 0, ttlMs, now: clock.now });
        for (const [i, o] of ops.entries()) {
          if (clearOnce && i === ops.length >> 1) {
            tiered.clear();
            plain.clear();
          }
          if (o.kind === "get") {
            const id = String(o.id);
            expect(seen(tiered.get(id))).toEqual(seen(plain.get(id)));
            expect(tiered.lastAgeMs()).toBe(plain.lastAgeMs());
          } else if (o.kind === "set") {
            const entry = item(String(o.id), o.version, o.length);
            tiered.set(String(o.id), entry);
            plain.set(String(o.id), entry);
          } else if (o.kind === "missing") {
            tiered.set(String(o.id), { found: false });
            plain.set(String(o.id), { found: false });
          } else if (o.kind === "delete") {
            expect(tiered.delete(String(o.id))).toBe(plain.delete(String(o.id)));
          } else {
            clock.advance(o.ms);
          }
          const { allocatedBytes, hotEntries: _entries, hotHits: _hits, ...counters } = tiered.stats;
          const { allocatedBytes: _plainAllocated, hotEntries: _plainEntries, hotHits: _plainHits, ...plainCounters } = plain.stats;
          expect(counters).toEqual(plainCounters);
          expect(allocatedBytes).toBeLessThanOrEqual(slabBytes + tierBytes);
        }
        hotHits += tiered.stats.hotHits;
      }),
      { numRuns: 40 },
    );
    // The comparison means something only if the tier answered: it did, many times.
    expect(hotHits).toBeGreaterThan(500);
  });
});
