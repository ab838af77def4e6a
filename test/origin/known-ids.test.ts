// The membership filter in front of the store: ids it rules out are answered 404 without a store read, and
// it never rules out an id that exists (no false negatives), whatever the order of creates, deletes,
// reads and rebuilds; it is not trusted while the change feed cannot vouch for every create.
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ChangeFeed } from "../../src/origin/feed/change-feed.ts";
import { get, RawConnection, start, tempDir, withBody } from "./harness.ts";

const ready = async (origin: { known: { stats: { ready: boolean; builds: number } } }, builds = 1) => {
  while (!origin.known.stats.ready || origin.known.stats.builds < builds) await new Promise((resolve) => setImmediate(resolve));
};

describe("membership filter", () => {
  it("never answers 404 for an item that exists, through creates, deletes, reads and rebuilds (property)", async () => {
    // A tiny capacity: the filter fills up and is rebuilt larger again and again during the run.
    const origin = await start({ ID_FILTER_CAPACITY: "4", SEED_SAMPLE_ITEMS: "3" });
    await ready(origin);
    const c = await RawConnection.open(origin.port);
    const exists = new Set(["1", "2", "3"]);
    const op = fc.record({ kind: fc.constantFrom("put", "delete", "get", "get"), id: fc.constantFrom("1", "2", "3", "a", "b", "c", "d", "e", "f", "g", "h") });
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40, size: "max" }), async (ops) => {
        for (const { kind, id } of ops) {
          if (kind === "put") {
            expect((await c.send(withBody("PUT", `/items/${id}`, `{"id":"${id}"}`))).status).toBe(204);
            exists.add(id);
          } else if (kind === "delete") {
            expect((await c.send(get(`/items/${id}`, {}, "DELETE"))).status).toBe(204);
            exists.delete(id);
          }
          // Every id, after every step, from the store or the filter (not the cache): created items are
          // visible at once.
          origin.cache.clear();
          for (const probe of ["1", "2", "3", "a", "b", "c", "d", "e", "f", "g", "h"]) {
            expect((await c.send(get(`/items/${probe}`))).status).toBe(exists.has(probe) ? 200 : 404);
          }
        }
      }),
      { numRuns: 30 },
    );
    expect(origin.known.stats.builds).toBeGreaterThan(1);
    expect(origin.known.stats.rejections).toBeGreaterThan(0);
  });

  it("answers a scan of unknown ids without reading the store, and measures its false positives", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "1000" });
    await ready(origin);
    const c = await RawConnection.open(origin.port);
    const before = origin.loader.storeReads;
    for (let i = 0; i < 1000; i++) expect((await c.send(get(`/items/unknown-${i}`))).status).toBe(404);
    const reads = origin.loader.storeReads - before;
    expect(reads).toBeLessThanOrEqual(10); // false positives of a filter sized for 1,000,000 ids at 1%
    expect(origin.known.stats.rejections).toBe(1000 - reads);
    for (let i = 1; i <= 1000; i += 97) expect((await c.send(get(`/items/${i}`))).status).toBe(200);
  });

  it("reads the store for every miss when turned off (ID_FILTER_CAPACITY=0)", async () => {
    const origin = await start({ ID_FILTER_CAPACITY: "0" });
    const c = await RawConnection.open(origin.port);
    for (let i = 0; i < 50; i++) await c.send(get(`/items/unknown-${i}`));
    expect(origin.loader.storeReads).toBe(50);
  });

  it("is not trusted while the change feed is down: an item another writer created is found", async () => {
    const dir = tempDir();
    let healthy = true;
    const feed: ChangeFeed = {
      get healthy() {
        return healthy;
      },
      stats: { changes: 0, resets: 0, pollFailures: 0, listens: 0 },
      start: () => Promise.resolve(),
      close: () => Promise.resolve(),
    };
    const origin = await start({}, { dir, feed });
    await ready(origin);
    const other = new DatabaseSync(join(dir, "items.sqlite"));
    other.prepare("INSERT INTO items (id, version, epoch, body) VALUES (?, 1, 'Ot', ?)").run("made-elsewhere", Buffer.from('{"x":1}'));
    other.close();
    const c = await RawConnection.open(origin.port);
    expect((await c.send(get("/items/made-elsewhere"))).status).toBe(404); // the feed vouches: the filter is believed
    healthy = false;
    expect((await c.send(get("/items/made-elsewhere"))).status).toBe(200);
  });
});
