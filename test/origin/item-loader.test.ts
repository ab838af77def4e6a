// The loader's generations, driven step by step with a store whose reads the test answers: no read that
// overlapped a change puts the version from before it back into the cache.
import { describe, expect, it } from "vitest";
import { Wire } from "../../src/origin/http/wire.ts";
import { ItemLoader } from "../../src/origin/reads/item-loader.ts";
import { readyItems } from "../../src/origin/reads/ready-items.ts";
import type { ItemStore, StoredItem } from "../../src/origin/store/item-store.ts";
import { deferred } from "./harness.ts";

const wire = new Wire({ sendDate: false, reasonPhrase: true });
const row = (etag: string, body: string): StoredItem => ({ etag, body: Buffer.from(body) });

/** A loader over a store whose every read returns `answer` once the test resolves it. */
function loaderWithHeldReads() {
  const cache = readyItems({ maxBytes: 8 * 2 ** 20, ttlMs: 0 });
  const answer = deferred<StoredItem | undefined>();
  const store = { get: () => answer.promise } as unknown as ItemStore;
  const loader = new ItemLoader(cache, store, (item) => wire.entry(item));
  const cachedEtag = (id: string) => {
    const entry = cache.get(id);
    return entry?.found ? entry.etag : undefined;
  };
  return { loader, answer, cachedEtag };
}

describe("ItemLoader", () => {
  it("a read that started while a write ran does not put the row from before the commit back", async () => {
    const { loader, answer, cachedEtag } = loaderWithHeldReads();
    const ticket = loader.beginWrite("x");
    const read = loader.load("x"); // a miss on another connection, reading the row before the commit
    loader.endWrite(ticket, wire.entry(row('"Aa2"', '{"v":2}'))); // committed; the 204 goes out
    expect(cachedEtag("x")).toBe('"Aa2"');
    answer.resolve(row('"Aa1"', '{"v":1}')); // the read's answer arrives late
    expect(await read).toMatchObject({ found: true, etag: '"Aa1"' }); // it still answers the request that waited on it
    expect(cachedEtag("x")).toBe('"Aa2"');
  });

  it("a read that started before the write does not fill the cache either", async () => {
    const { loader, answer, cachedEtag } = loaderWithHeldReads();
    const read = loader.load("x");
    const ticket = loader.beginWrite("x");
    loader.endWrite(ticket, wire.entry(row('"Aa2"', '{"v":2}')));
    answer.resolve(row('"Aa1"', '{"v":1}'));
    await read;
    expect(cachedEtag("x")).toBe('"Aa2"');
  });

  it("a read with nothing overlapping it fills the cache", async () => {
    const { loader, answer, cachedEtag } = loaderWithHeldReads();
    const read = loader.load("x");
    answer.resolve(row('"Aa1"', '{"v":1}'));
    await read;
    expect(cachedEtag("x")).toBe('"Aa1"');
  });
});

describe("ItemLoader and the feed's report of this instance's own writes (PostgreSQL)", () => {
  const v2 = wire.entry(row('"Aa2"', '{"v":2}'));

  it("keeps the entry when the report names the write's transaction, after the write ended", () => {
    const { loader, cachedEtag } = loaderWithHeldReads();
    loader.endWrite(loader.beginWrite("x"), v2, 7n);
    loader.changed("x", 7n);
    expect(cachedEtag("x")).toBe('"Aa2"');
    expect(loader.ownChangesKept).toBe(1);
    loader.changed("x", 7n); // a second report of it is another change as far as the loader knows: dropped
    expect(cachedEtag("x")).toBeUndefined();
  });

  it("keeps the entry when the report came before the write ended here", () => {
    const { loader, cachedEtag } = loaderWithHeldReads();
    const ticket = loader.beginWrite("x");
    loader.changed("x", 7n);
    loader.endWrite(ticket, v2, 7n);
    expect(cachedEtag("x")).toBe('"Aa2"');
    expect(loader.ownChangesKept).toBe(1);
    loader.changed("x", 8n); // and nothing is awaited any more: the next change drops it
    expect(cachedEtag("x")).toBeUndefined();
  });

  it("drops it for a report of any other transaction, before or after the write ended", () => {
    const { loader, cachedEtag } = loaderWithHeldReads();
    loader.endWrite(loader.beginWrite("x"), v2, 7n);
    loader.changed("x", 8n);
    expect(cachedEtag("x")).toBeUndefined();
    loader.changed("x", 7n); // the own report, late: nothing to keep, nothing kept
    expect(loader.ownChangesKept).toBe(0);

    const ticket = loader.beginWrite("y");
    loader.changed("y", 8n);
    loader.endWrite(ticket, v2, 7n);
    expect(cachedEtag("y")).toBeUndefined();
  });

  it("drops it when another change came too, whatever the order of the reports", () => {
    const { loader, cachedEtag } = loaderWithHeldReads();
    for (const [first, second] of [
      [7n, 8n],
      [8n, 7n],
    ] as const) {
      const ticket = loader.beginWrite("x");
      loader.changed("x", first);
      loader.changed("x", second);
      loader.endWrite(ticket, v2, 7n);
      expect(cachedEtag("x")).toBeUndefined();
    }
    const ticket = loader.beginWrite("x");
    loader.changed("x", 7n);
    loader.changed("x"); // a change whose transaction the feed does not know
    loader.endWrite(ticket, v2, 7n);
    expect(cachedEtag("x")).toBeUndefined();
  });

  it("two writes of one id in flight at once: neither result is kept, even with the first one's own report", () => {
    const { loader, cachedEtag } = loaderWithHeldReads();
    const first = loader.beginWrite("x");
    loader.changed("x", 7n); // the first write's own report
    const second = loader.beginWrite("x");
    loader.endWrite(first, v2, 7n); // the second write is still running: the first's result may be old already
    expect(cachedEtag("x")).toBeUndefined();
    loader.endWrite(second, wire.entry(row('"Aa3"', '{"v":3}')), 9n);
    expect(cachedEtag("x")).toBeUndefined(); // the first write's end came between
  });

  it("a write without a transaction (SQLite), or with an unknown outcome, awaits no report", () => {
    const { loader, cachedEtag } = loaderWithHeldReads();
    loader.endWrite(loader.beginWrite("x"), v2);
    loader.changed("x", 7n);
    expect(cachedEtag("x")).toBeUndefined();
    loader.endWrite(loader.beginWrite("y"), undefined, 7n);
    loader.changed("y", 7n);
    expect(loader.ownChangesKept).toBe(0);
  });

  it("a reset forgets every awaited report: the entry cached after it is dropped by the report, as before", () => {
    const { loader, cachedEtag } = loaderWithHeldReads();
    loader.endWrite(loader.beginWrite("x"), v2, 7n);
    loader.invalidateAll();
    loader.endWrite(loader.beginWrite("y"), v2, 9n);
    loader.changed("x", 7n);
    expect(loader.ownChangesKept).toBe(0);
    loader.changed("y", 9n);
    expect(cachedEtag("y")).toBe('"Aa2"');
  });
});

