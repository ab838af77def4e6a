// OwedRepeats: the backlog bound counts distinct tags, so a tag owed again (a hot id, or a repeat a new leader
// inherits for a tag it already owes) never turns the owed repeats into a purge of every item early.
import { describe, expect, it } from "vitest";
import { OwedRepeats } from "../../src/origin/purge/owed-repeats.ts";
import { ALL_ITEMS_TAG } from "../../src/shared/cache-tag.ts";

describe("OwedRepeats", () => {
  it("counts a tag owed again once, with or without the same case, against the bound", () => {
    const owed = new OwedRepeats(5);
    owed.owe(["item:a", "item:b", "item:c", "item:d"], 1_000);
    owed.owe(["item:c", "item:D"], 2_000);
    expect(owed.owesEveryItem).toBe(false);
    expect(owed.size).toBe(4);
    // The re-owed tags moved to the end, due at the later time.
    expect(owed.dueBy(1_000, 30)).toEqual({ send: ["item:a", "item:b"], covered: [] });
    expect(owed.dueBy(2_000, 30).send).toEqual(["item:a", "item:b", "item:c", "item:D"]);
  });

  it("more distinct tags than the bound become one repeat of every item", () => {
    const owed = new OwedRepeats(5);
    owed.owe(["item:a", "item:b", "item:c", "item:d"], 1_000);
    owed.owe(["item:a", "item:e"], 2_000);
    expect(owed.owesEveryItem).toBe(false);
    owed.owe(["item:f"], 3_000);
    expect(owed.owesEveryItem).toBe(true);
    expect(owed.size).toBe(1);
    expect(owed.dueBy(3_000, 30).send).toEqual([ALL_ITEMS_TAG]);
  });
});
