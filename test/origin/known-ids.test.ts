// The membership filter in front of the store: ids it rules out are answered 404 without a store read, and
// it never rules out an id that exists (no false negatives), whatever the order of creates, deletes,
// reads and rebuilds; it is not trusted while the change feed cannot vouch for every create.
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ChangeFeed } from "../../src/origin/feed/change-feed.ts";
import { KnownIds } from "../../src/origin/reads/known-ids.ts";
import type { ItemStore } from "../../src/origin/store/item-store.ts";
import { SqliteItemStore } from "../../src/origin/store/sqlite-store.ts";
import { deferred, get, RawConnection, start, storeWith, tempDir, withBody } from "./harness.ts";

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

  it("a create in flight across a rebuild (another process died) is found after it: its commit came after the scan", async () => {
    const dir = tempDir();
    const inner = new SqliteItemStore(join(dir, "items.sqlite"));
    const sent = deferred();
    const commit = deferred();
    const store = storeWith(inner, {
      async put(id, body, condition) {
        sent.resolve();
        await commit.promise; // the row is not there for the rebuild's scan
        return inner.put(id, body, condition);
      },
    });
    const origin = await start({}, { dir, store });
    await ready(origin);
    const c = await RawConnection.open(origin.port);
    const written = c.send(withBody("PUT", "/items/late", '{"v":1}'));
    await sent.promise;
    await origin.known.build("changes were missed: a worker died", true);
    commit.resolve();
    expect((await written).status).toBe(204);
    origin.cache.clear();
    expect((await (await RawConnection.open(origin.port)).send(get("/items/late"))).status).toBe(200);
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
      stats: { changes: 0, resets: 0, pollFailures: 0, listens: 0, ignored: 0 },
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

/** A store of `rows` whose every scan reads a snapshot at its start, then waits for `release()` before yielding it. */
function heldStore(rows: string[]) {
  const waiting: (() => void)[] = [];
  let scans = 0;
  let failing = false;
  const store = {
    count: async () => {
      if (failing) throw new Error("the store is gone");
      return rows.length;
    },
    async *ids() {
      scans++;
      const snapshot = [...rows]; // a cursor that has already read past these keys
      await new Promise<void>((resolve) => waiting.push(resolve));
      yield snapshot;
    },
  } as unknown as ItemStore;
  return {
    store,
    scans: () => scans,
    fail: () => (failing = true),
    /** Resolves once a scan waits, then lets it yield. */
    async release() {
      while (waiting.length === 0) await new Promise((resolve) => setImmediate(resolve));
      waiting.shift()!();
    },
  };
}

describe("KnownIds rebuilds", () => {
  it("does not keep a scan that was running when changes were missed: it scans again", async () => {
    const rows = ["a", "b"];
    const held = heldStore(rows);
    const known = new KnownIds(held.store, 100, () => true, () => {});
    const first = known.build("start");
    // Created by another instance while this one's feed was down: the feed never reports it, and the running
    // scan has already read past where it lies.
    rows.push("created-while-missed");
    const second = known.build("changes were missed", true);
    await held.release(); // the first scan ends: not kept
    await held.release(); // the scan run again sees the create
    await Promise.all([first, second]);
    expect(held.scans()).toBe(2);
    expect(known.stats.ready).toBe(true);
    expect(known.mayExist("created-while-missed")).toBe(true);
    expect(known.mayExist("never-created")).toBe(false);
  });

  it("keeps ids learnt during a scan that is run again", async () => {
    const held = heldStore(["a"]);
    const known = new KnownIds(held.store, 100, () => true, () => {});
    const build = known.build("start");
    known.add("written-during-the-first-scan"); // not committed yet when either scan reads
    known.build("changes were missed", true);
    await held.release();
    await held.release();
    await build;
    expect(known.mayExist("written-during-the-first-scan")).toBe(true);
  });

  it("keeps the ids of this instance's writes in flight when a rebuild starts: they may commit after its scan", async () => {
    const rows = ["a"];
    const held = heldStore(rows);
    const inFlight = new Set<string>();
    const known = new KnownIds(held.store, 100, () => true, () => {}, () => inFlight);
    const start = known.build("start");
    await held.release();
    await start;
    // A create is sent: learnt by the filter before it commits.
    inFlight.add("being-created");
    known.add("being-created");
    // Another worker died: everything is distrusted and rebuilt, and the scan reads before the create commits.
    const rebuild = known.build("changes were missed: a worker died", true);
    await held.release();
    await rebuild;
    rows.push("being-created"); // committed now; the SQLite relay never reports a process's own write back to it
    inFlight.delete("being-created");
    expect(known.stats.ready).toBe(true);
    expect(known.mayExist("being-created")).toBe(true);
    expect(known.mayExist("never-created")).toBe(false);
  });

  it("counts an id written again once, so updates never fill the filter", async () => {
    const held = heldStore(["a"]);
    const known = new KnownIds(held.store, 10, () => true, () => {});
    const build = known.build("start");
    await held.release();
    await build;
    for (let i = 0; i < 1_000; i++) known.add("a"); // the same item, updated a thousand times
    expect(known.stats.ids).toBe(1);
    expect(held.scans()).toBe(1); // no rebuild for a full filter
  });

  it("schedules no retry once closed", async () => {
    const held = heldStore([]);
    held.fail();
    const lines: string[] = [];
    const known = new KnownIds(held.store, 100, () => true, (line) => lines.push(line));
    const build = known.build("start");
    known.close();
    await build;
    expect(lines).toEqual([]); // no "retrying in 10 s": nothing left to retry for
  });
});
