// The SQLite relay's feed (feed/relayed-change-feed.ts), in this process: two origins on one SQLite file,
// each one's committed writes delivered to the other's feed the way the cluster's primary delivers them.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { RelayedChangeFeed } from "../../src/origin/feed/relayed-change-feed.ts";
import { SqliteItemStore } from "../../src/origin/store/sqlite-store.ts";
import { deferred, get, once, start, storeWith, tempDir, withBody } from "./harness.ts";

describe("RelayedChangeFeed", () => {
  it("is healthy while the primary was heard from within the bound", async () => {
    let now = 0;
    const feed = new RelayedChangeFeed({ staleBoundMs: 100, now: () => now });
    const seen: string[] = [];
    feed.changed("before-start"); // nothing cached yet: nothing to drop
    await feed.start({ changed: (id) => seen.push(id), lostTrack: (reason) => seen.push(`lost: ${reason}`) });
    expect(feed.healthy).toBe(true);
    now = 100;
    expect(feed.healthy).toBe(true);
    now = 101;
    expect(feed.healthy).toBe(false);
    feed.heartbeat();
    expect(feed.healthy).toBe(true);
    now = 250;
    feed.changed("a");
    expect(feed.healthy).toBe(true);
    feed.lostTrack("worker 2 died");
    expect(seen).toEqual(["a", "lost: worker 2 died"]);
    expect(feed.stats).toEqual({ changes: 1, resets: 1, pollFailures: 0, listens: 1, ignored: 0 });
    await feed.close();
    feed.changed("after-close");
    expect(seen).toHaveLength(2);
  });

  it("a relayed write drops the other process's entry, and a read that began before it cannot put the old version back", async () => {
    const dir = tempDir();
    const relayToA = new RelayedChangeFeed({ staleBoundMs: 60_000 });
    const relayToB = new RelayedChangeFeed({ staleBoundMs: 60_000 });
    let hold = false;
    const readDone = deferred();
    const release = deferred();
    let storeReads = 0;
    const inner = new SqliteItemStore(join(dir, "items.sqlite"));
    const bStore = storeWith(inner, {
      async get(id) {
        storeReads++;
        const row = await inner.get(id);
        if (hold) {
          hold = false;
          readDone.resolve();
          await release.promise;
        }
        return row;
      },
    });
    const a = await start({}, { dir, feed: relayToA, onCommitted: (id) => relayToB.changed(id) });
    const b = await start({}, { dir, store: bStore, feed: relayToB, onCommitted: (id) => relayToA.changed(id) });

    const v1 = await once(a.port, withBody("PUT", "/items/x", '{"v":1}'));
    expect((await once(b.port, get("/items/x"))).header("etag")).toBe(v1.header("etag")); // B caches v1
    const v2 = await once(b.port, withBody("PUT", "/items/x", '{"v":2}'));
    expect((await once(a.port, get("/items/x"))).header("etag")).toBe(v2.header("etag")); // relayed to A

    // B reads x from the store (v2), A writes v3 while that read is on its way back, then the read lands.
    b.cache.clear();
    hold = true;
    const early = once(b.port, get("/items/x"));
    await readDone.promise;
    const v3 = await once(a.port, withBody("PUT", "/items/x", '{"v":3}'));
    release.resolve();
    expect((await early).header("etag")).toBe(v2.header("etag")); // it began before the write: fine
    const reads = storeReads;
    const after = await once(b.port, get("/items/x"));
    expect(after.header("etag")).toBe(v3.header("etag")); // not the v2 the early read brought back
    expect(storeReads).toBe(reads + 1);
    expect(relayToB.stats.changes).toBe(2);

    // Lost track (a process died between its commit and its report): everything is read again.
    await once(b.port, get("/items/x"));
    const cached = storeReads;
    relayToB.lostTrack("worker 3 died");
    await once(b.port, get("/items/x"));
    expect(storeReads).toBe(cached + 1);
  });
});
