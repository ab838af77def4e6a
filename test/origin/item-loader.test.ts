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
