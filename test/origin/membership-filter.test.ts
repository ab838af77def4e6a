import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MembershipFilter } from "../../src/origin/filter/membership-filter.ts";

describe("MembershipFilter", () => {
  it("never rules out an id it was given, under interleaved creates, deletes and reads, well past capacity", () => {
    const id = fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: "grapheme", maxLength: 6 }), fc.nat().map((n) => `item-${n % 500}`));
    const op = fc.oneof(
      fc.record({ kind: fc.constant("create" as const), id }),
      fc.record({ kind: fc.constant("delete" as const), id }),
      fc.record({ kind: fc.constant("read" as const), id }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.array(op, { maxLength: 500, size: "max" }), (capacity, ops) => {
        const filter = new MembershipFilter(capacity);
        const created = new Set<string>();
        for (const { kind, id: item } of ops) {
          if (kind === "create") {
            filter.add(item); // the origin adds an id when it creates the row, before answering
            created.add(item);
            expect(filter.mightContain(item)).toBe(true); // visible at once
          } else if (kind === "delete") {
            // Nothing to do: a deleted id stays a "maybe" and the store answers 404 for it.
          } else if (created.has(item)) {
            expect(filter.mightContain(item)).toBe(true);
          }
        }
        for (const item of created) expect(filter.mightContain(item)).toBe(true);
        // Each distinct id at most once (an update adds its id again); a false positive not at all.
        expect(filter.count).toBeLessThanOrEqual(created.size);
      }),
      { numRuns: 200 },
    );
  });

  it("at capacity, rules out at least 99% of absent ids (measured, fixed ids)", () => {
    const capacity = 200_000;
    const filter = new MembershipFilter(capacity);
    for (let i = 0; i < capacity; i++) filter.add(`item-${i}`);
    // Counted once each, less the few that were false positives when added.
    expect(filter.count).toBeLessThanOrEqual(capacity);
    expect(filter.count).toBeGreaterThan(0.99 * capacity);
    const once = filter.count;
    for (let i = 0; i < capacity; i++) filter.add(`item-${i}`); // every item updated
    expect(filter.count).toBe(once);
    let falsePositives = 0;
    for (let i = 0; i < 200_000; i++) if (filter.mightContain(`absent-${i}`)) falsePositives++;
    expect(falsePositives / 200_000).toBeLessThanOrEqual(0.01);
    for (let i = 0; i < capacity; i++) expect(filter.mightContain(`item-${i}`)).toBe(true);
  });

  it("meets a stricter rate when asked, for more bits", () => {
    const capacity = 100_000;
    const strict = new MembershipFilter(capacity, 0.001);
    const usual = new MembershipFilter(capacity);
    for (let i = 0; i < capacity; i++) strict.add(`item-${i}`);
    let falsePositives = 0;
    for (let i = 0; i < 500_000; i++) if (strict.mightContain(`absent-${i}`)) falsePositives++;
    expect(falsePositives / 500_000).toBeLessThanOrEqual(0.001);
    expect(strict.bytes).toBeGreaterThan(usual.bytes);
  });

  it("past capacity keeps every id; only the rate of false positives rises", () => {
    const filter = new MembershipFilter(10_000);
    for (let i = 0; i < 30_000; i++) filter.add(`item-${i}`);
    for (let i = 0; i < 30_000; i++) expect(filter.mightContain(`item-${i}`)).toBe(true);
    let falsePositives = 0;
    for (let i = 0; i < 20_000; i++) if (filter.mightContain(`absent-${i}`)) falsePositives++;
    expect(falsePositives / 20_000).toBeGreaterThan(0.01);
    expect(falsePositives / 20_000).toBeLessThan(0.6);
  });

  it("states its capacity, count and size (about 10 bits per id at 1%)", () => {
    const filter = new MembershipFilter(1_000_000);
    expect(filter.capacity).toBe(1_000_000);
    expect(filter.count).toBe(0);
    filter.add("a");
    filter.add("a"); // an update of the same item
    expect(filter.count).toBe(1);
    filter.add("b");
    expect(filter.count).toBe(2);
    expect((8 * filter.bytes) / 1_000_000).toBeGreaterThan(9.5);
    expect((8 * filter.bytes) / 1_000_000).toBeLessThan(10.5);
    expect(filter.bytes % 64).toBe(0); // whole cache lines
  });

  it("refuses a capacity or rate it cannot honour", () => {
    expect(() => new MembershipFilter(0)).toThrow(/capacity/);
    expect(() => new MembershipFilter(1.5)).toThrow(/capacity/);
    expect(() => new MembershipFilter(10, 0)).toThrow(/falsePositiveRate/);
    expect(() => new MembershipFilter(10, 0.5)).toThrow(/falsePositiveRate/);
    expect(() => new MembershipFilter(10, Number.NaN)).toThrow(/falsePositiveRate/);
  });
});
