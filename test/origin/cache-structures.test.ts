import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FrequencySketch } from "../../src/origin/cache/frequency-sketch.ts";
import { GhostHistory } from "../../src/origin/cache/ghost-history.ts";
import { hashKey } from "../../src/origin/cache/key-hash.ts";
import { SlotIndex } from "../../src/origin/cache/slot-index.ts";
import { SlotLists } from "../../src/origin/cache/slot-lists.ts";
import { SlotPool } from "../../src/origin/cache/slot-pool.ts";

describe("SlotLists", () => {
  function contents(lists: SlotLists, list: number): number[] {
    const out: number[] = [];
    for (let slot = lists.head(list); slot !== -1; slot = lists.next(slot)) out.push(slot);
    return out;
  }

  it("behaves like arrays of slots under push, move and remove, across growth", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ slot: fc.nat(63), list: fc.nat(2), remove: fc.boolean() }), { maxLength: 200, size: "max" }),
        (ops) => {
          const lists = new SlotLists(3, 4);
          const model: number[][] = [[], [], []];
          const where = new Map<number, number>();
          for (const { slot, list, remove } of ops) {
            lists.ensureCapacity(slot + 1);
            const current = where.get(slot);
            if (current !== undefined) {
              model[current] = model[current]!.filter((s) => s !== slot);
              if (remove) {
                lists.remove(slot);
                where.delete(slot);
                continue;
              }
              lists.moveToTail(list, slot);
            } else {
              if (remove) continue;
              lists.pushTail(list, slot);
            }
            model[list]!.push(slot);
            where.set(slot, list);
          }
          for (let list = 0; list < 3; list++) expect(contents(lists, list)).toEqual(model[list]);
        },
      ),
    );
  });
});

describe("FrequencySketch", () => {
  it("counts each key up to 15, and distinct keys independently", () => {
    const sketch = new FrequencySketch(1_000);
    const a = hashKey("a", 1);
    const b = hashKey("b", 1);
    for (let i = 0; i < 5; i++) sketch.increment(a);
    sketch.increment(b);
    expect(sketch.frequency(a)).toBe(5);
    expect(sketch.frequency(b)).toBe(1);
    expect(sketch.frequency(hashKey("never seen", 1))).toBe(0);
    for (let i = 0; i < 20; i++) sketch.increment(a);
    expect(sketch.frequency(a)).toBe(15);
  });

  it("ages: after enough increments, old counts are halved", () => {
    const sketch = new FrequencySketch(16);
    const hot = hashKey("hot", 1);
    for (let i = 0; i < 12; i++) sketch.increment(hot);
    expect(sketch.frequency(hot)).toBe(12);
    for (let i = 0; sketch.frequency(hot) === 12 && i < 1_000; i++) sketch.increment(hashKey(`other${i}`, 1));
    expect(sketch.frequency(hot)).toBe(6);
  });

  it("rarely overestimates a key it never saw when sized for the keys it counts", () => {
    const sketch = new FrequencySketch(10_000);
    for (let i = 0; i < 10_000; i++) sketch.increment(hashKey(`seen${i}`, 9));
    let overestimated = 0;
    for (let i = 0; i < 10_000; i++) if (sketch.frequency(hashKey(`unseen${i}`, 9)) > 0) overestimated++;
    expect(overestimated / 10_000).toBeLessThan(0.05);
  });

  it("keeps every count when it widens (a key's block is its old one or its copy in the new half)", () => {
    const sketch = new FrequencySketch(16);
    const hashes = Array.from({ length: 40 }, (_, i) => hashKey(`k${i}`, 3));
    hashes.forEach((hash, i) => {
      for (let n = 0; n < i % 9; n++) sketch.increment(hash);
    });
    const before = hashes.map((hash) => sketch.frequency(hash));
    const bytes = sketch.byteSize;
    sketch.ensureCapacity(1_000);
    expect(sketch.capacity).toBe(1_024);
    expect(sketch.byteSize).toBe(64 * bytes);
    expect(sketch.byteSize).toBe(FrequencySketch.bytesFor(1_000));
    expect(hashes.map((hash) => sketch.frequency(hash))).toEqual(before);
  });
});

describe("GhostHistory", () => {
  it("remembers exactly the last `capacity` records", () => {
    const ghosts = new GhostHistory(3);
    for (const hash of [1, 2, 3, 4]) ghosts.add(hash);
    expect([1, 2, 3, 4].map((h) => ghosts.has(h))).toEqual([false, true, true, true]);
  });

  it("a hash recorded twice is remembered until its last record leaves", () => {
    const ghosts = new GhostHistory(3);
    for (const hash of [7, 8, 7, 9]) ghosts.add(hash); // the first 7 has left: [8, 7, 9]
    expect(ghosts.has(7)).toBe(true);
    ghosts.add(10); // [7, 9, 10]
    expect(ghosts.has(7)).toBe(true);
    expect(ghosts.has(8)).toBe(false);
    ghosts.add(11); // [9, 10, 11]
    expect(ghosts.has(7)).toBe(false);
  });

  it("keeps its records, oldest first, when it grows", () => {
    const ghosts = new GhostHistory(2);
    ghosts.add(1);
    ghosts.add(2);
    ghosts.add(3);
    ghosts.ensureCapacity(3);
    ghosts.add(4);
    expect([1, 2, 3, 4].map((h) => ghosts.has(h))).toEqual([false, true, true, true]);
    ghosts.add(5);
    expect(ghosts.has(2)).toBe(false);
  });
});

describe("GhostHistory against a model", () => {
  it("has() is true exactly for the last `capacity` records, across growth", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.array(fc.oneof(fc.record({ add: fc.integer({ min: -5, max: 20 }) }), fc.record({ grow: fc.nat(8) })), { maxLength: 200, size: "max" }),
        (initial, ops) => {
          const ghosts = new GhostHistory(initial);
          let capacity = initial;
          let model: number[] = [];
          for (const op of ops) {
            if ("add" in op) {
              ghosts.add(op.add);
              model.push(op.add);
              if (model.length > capacity) model = model.slice(model.length - capacity);
            } else {
              capacity = Math.max(capacity, capacity + op.grow);
              ghosts.ensureCapacity(capacity);
            }
            expect(ghosts.capacity).toBe(capacity);
            for (let hash = -5; hash <= 20; hash++) expect(ghosts.has(hash)).toBe(model.includes(hash));
          }
        },
      ),
    );
  });

  it("states its size, and what one built for a capacity holds", () => {
    const ghosts = new GhostHistory(100);
    expect(ghosts.byteSize).toBe(GhostHistory.bytesFor(100));
    expect(ghosts.byteSize).toBe(4 * 100 + 8 * 256);
  });
});

describe("SlotIndex against a Map", () => {
  const keyArbitrary = fc.string({ unit: fc.constantFrom("a", "b", "c", "d"), maxLength: 4 });

  it.each([
    ["a good hash", (key: string) => hashKey(key, 1)],
    ["a weak hash (every key collides)", () => 7],
    ["a weak hash (a few chains)", (key: string) => key.length],
  ])("finds exactly the keys inserted and not removed, with %s", (_name, hash) => {
    fc.assert(
      fc.property(fc.array(fc.record({ key: keyArbitrary, remove: fc.boolean() }), { maxLength: 300, size: "max" }), (ops) => {
        const keyOf: string[] = [];
        const index = new SlotIndex((slot, key) => keyOf[slot] === key, 4);
        const model = new Map<string, number>();
        const free: number[] = [];
        for (const { key, remove } of ops) {
          const slot = model.get(key);
          if (remove && slot !== undefined) {
            index.remove(hash(key), slot);
            model.delete(key);
            free.push(slot);
          } else if (!remove && slot === undefined) {
            const fresh = free.pop() ?? keyOf.length;
            keyOf[fresh] = key;
            index.insert(hash(key), fresh);
            model.set(key, fresh);
          }
          expect(index.size).toBe(model.size);
        }
        for (const key of new Set(ops.map((op) => op.key))) expect(index.find(hash(key), key)).toBe(model.get(key) ?? -1);
      }),
    );
  });
});

describe("SlotPool", () => {
  it("hands out the lowest unused numbers, reuses given-back ones, and restarts on clear", () => {
    const pool = new SlotPool();
    expect([pool.take(), pool.take(), pool.take()]).toEqual([0, 1, 2]);
    pool.give(1);
    expect(pool.take()).toBe(1);
    expect(pool.take()).toBe(3);
    expect(pool.highWater).toBe(4);
    pool.clear();
    expect(pool.take()).toBe(0);
  });
});

describe("the hit path's co-located structures", () => {
  it("tagged SlotLists keep each slot's list and word beside its links, across growth", () => {
    const lists = new SlotLists(3, 2, true);
    lists.pushTail(1, 0);
    lists.setWord(0, -123);
    lists.ensureCapacity(100);
    lists.pushTail(2, 99);
    lists.setWord(99, 77);
    expect([lists.listOf(0), lists.word(0), lists.listOf(99), lists.word(99)]).toEqual([1, -123, 2, 77]);
    lists.moveToTail(2, 0);
    expect(lists.listOf(0)).toBe(2);
    expect(lists.head(2)).toBe(99);
    lists.remove(0);
    expect(lists.listOf(0)).toBe(-1);
    expect(lists.listOf(50)).toBe(-1);
    expect(lists.word(0)).toBe(-123);
  });

  it("SlotIndex files two words with each slot, refiles them, and keeps them through removals", () => {
    const keyOf = ["a", "b", "c"];
    const index = new SlotIndex((slot, key) => keyOf[slot] === key, 4);
    for (let slot = 0; slot < 3; slot++) index.insert(7, slot, 10 + slot, 20 + slot);
    index.refile(7, 1, 31, 41);
    expect(index.find(7, "b")).toBe(1);
    expect([index.foundFirst, index.foundSecond]).toEqual([31, 41]);
    index.remove(7, 0);
    expect(index.find(7, "c")).toBe(2);
    expect([index.foundFirst, index.foundSecond]).toEqual([12, 22]);
    index.refile(7, 0, 1, 1); // absent: no-op
    expect(index.find(7, "a")).toBe(-1);
  });
});
