import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { epochOf, etagFor, get, RawConnection, start, tempDir, withBody } from "./harness.ts";

describe("cache TTL and byte bound", () => {
  it("serves a cached entry until CACHE_TTL_SECONDS passes, then reads the store again", async () => {
    const dir = tempDir();
    let now = 1_000;
    const origin = await start({ CACHE_TTL_SECONDS: "30" }, { dir, now: () => now });
    const c = await RawConnection.open(origin.port);
    const e = epochOf((await c.send(withBody("PUT", "/items/t", '{"v":1}'))).header("etag"));
    expect((await c.send(get("/items/t"))).body.toString()).toBe('{"v":1}');

    // Another writer (a second instance, an operator) changes the row behind this instance's back.
    const other = new DatabaseSync(join(dir, "items.sqlite"));
    other.prepare("UPDATE items SET version = version + 1, body = ? WHERE id = ?").run(Buffer.from('{"v":"ext"}'), "t");
    other.close();

    now += 29_999;
    const cached = await c.send(get("/items/t"));
    expect(cached.body.toString()).toBe('{"v":1}'); // still within the TTL: served from the cache
    expect(cached.header("etag")).toBe(etagFor(e, 1));

    now += 2;
    const fresh = await c.send(get("/items/t"));
    expect(fresh.body.toString()).toBe('{"v":"ext"}');
    expect(fresh.header("etag")).toBe(etagFor(e, 2)); // an outside writer left the row's epoch as it was
  });

  it("never holds more than CACHE_MAX_BYTES, and answers correctly whatever it evicts", async () => {
    const max = 64 * 1024;
    const origin = await start({ CACHE_MAX_BYTES: "64KiB" });
    const c = await RawConnection.open(origin.port);
    const body = (i: number) => JSON.stringify({ i, pad: "p".repeat(100 + (i % 7) * 20) });
    for (let i = 0; i < 1000; i++) await c.send(withBody("PUT", `/items/k${i}`, body(i)));
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 1000; i += round + 1) {
        const r = await c.send(get(`/items/k${i}`));
        expect(r.body.toString()).toBe(body(i));
        expect(origin.cache.stats.allocatedBytes).toBeLessThanOrEqual(max);
      }
    }
    const stats = origin.cache.stats;
    expect(stats.entries).toBeGreaterThan(0);
    expect(stats.entries).toBeLessThan(1000);
    expect(stats.evictions).toBeGreaterThan(0);
  });

  it("serves an item larger than the whole cache straight from the store", async () => {
    const origin = await start({ CACHE_MAX_BYTES: "64KiB", MAX_ITEM_BYTES: "256KiB" });
    const c = await RawConnection.open(origin.port);
    const big = JSON.stringify({ pad: "x".repeat(100_000) });
    await c.send(withBody("PUT", "/items/big", big));
    for (let i = 0; i < 3; i++) expect((await c.send(get("/items/big"))).body.toString()).toBe(big);
    expect(origin.cache.stats.allocatedBytes).toBeLessThanOrEqual(64 * 1024);
    expect(origin.loader.storeReads).toBe(3);
  });
});
