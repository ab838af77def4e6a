import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FrequencySketch } from "../../src/origin/cache/frequency-sketch.ts";
import { GhostHistory } from "../../src/origin/cache/ghost-history.ts";
import { hashKey } from "../../src/origin/cache/key-hash.ts";
import { SlotLists } from "../../src/origin/cache/slot-lists.ts";

describe("SlotLists", () => {
  function contents(lists: SlotLists, list: number): number[] {
    const out: number[] = [];
    for (let slot = lists.head(list); slot !== -1; slot = lists.next(slot)) out.push(slot);
    return out;
  }

  it("behaves like arrays of slots under push, move and remove, across growth", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ slot: fc.nat(63), list: fc.nat(2), remove: fc.boolean() }), { maxLength: 200 }),
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
