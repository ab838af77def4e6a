import { describe, expect, it } from "vitest";
import type { ItemStore, StoredItem } from "../../src/origin/store/item-store.ts";
import { SqliteItemStore } from "../../src/origin/store/sqlite-store.ts";
import { deferred, etagFor, get, RawConnection, start, tempDir, withBody, type RawResponse } from "./harness.ts";
import { join } from "node:path";

/** The real SQLite store, with reads counted and held at a gate the test opens. */
class GatedStore implements ItemStore {
  readonly inner: SqliteItemStore;
  readonly description = "gated SQLite";
  readonly writable = true;
  reads = 0;
  gate = deferred();
  readStarted = deferred();
  constructor(path: string) {
    this.inner = new SqliteItemStore(path);
  }
  async get(id: string): Promise<StoredItem | undefined> {
    this.reads++;
    const row = await this.inner.get(id);
    this.readStarted.resolve();
    await this.gate.promise;
    return row;
  }
  put(id: string, body: Uint8Array) {
    return this.inner.put(id, body);
  }
  delete(id: string) {
    return this.inner.delete(id);
  }
  count() {
    return this.inner.count();
  }
  seedIfEmpty(items: Iterable<readonly [string, Uint8Array]>) {
    return this.inner.seedIfEmpty(items);
  }
  ids() {
    return this.inner.ids();
  }
  ping() {
    return this.inner.ping();
  }
  close() {
    return this.inner.close();
  }
}

function joins(n: number) {
  let seen = 0;
  const all = deferred();
  return {
    all: all.promise,
    onJoin: () => {
      if (++seen === n) all.resolve();
    },
  };
}

describe("miss coalescing", () => {
  it("N concurrent misses for one id make one store read", async () => {
    const dir = tempDir();
    const store = new GatedStore(join(dir, "items.sqlite"));
    await store.inner.seedIfEmpty([["hot", Buffer.from('{"hot":true}')]]);
    const N = 25;
    const joined = joins(N - 1);
    const origin = await start({}, { dir, store, loaderHooks: { onJoin: joined.onJoin } });

    const conns = await Promise.all(Array.from({ length: N }, () => RawConnection.open(origin.port)));
    const replies: Promise<RawResponse>[] = conns.map((c) => c.send(get("/items/hot")));
    await joined.all; // every request is now waiting on the one read
    expect(store.reads).toBe(1);
    store.gate.resolve();
    const responses = await Promise.all(replies);
    const etag = etagFor(store.inner.writeEpoch, 1); // seeded by this store session
    for (const r of responses) expect(r.text).toBe(`HTTP/1.1 200 OK\r\nETag: ${etag}\r\nContent-Length: 12\r\n\r\n{"hot":true}`);
    expect(store.reads).toBe(1);
    expect(origin.loader.coalesced).toBe(N - 1);

    // Filled once: later reads are hits.
    expect((await conns[0]!.send(get("/items/hot", { "If-None-Match": etag }))).status).toBe(304);
    expect(store.reads).toBe(1);
  });

  it("coalesces misses for absent ids too, and caches the 404", async () => {
    const dir = tempDir();
    const store = new GatedStore(join(dir, "items.sqlite"));
    const joined = joins(4);
    // Without the membership filter, which would answer these without any store read.
    const origin = await start({ ID_FILTER_CAPACITY: "0" }, { dir, store, loaderHooks: { onJoin: joined.onJoin } });
    const conns = await Promise.all(Array.from({ length: 5 }, () => RawConnection.open(origin.port)));
    const replies = conns.map((c) => c.send(get("/items/ghost")));
    await joined.all;
    store.gate.resolve();
    for (const r of await Promise.all(replies)) expect(r.status).toBe(404);
    await conns[0]!.send(get("/items/ghost"));
    expect(store.reads).toBe(1);
  });

  it("a write during an in-flight read wins: the older read is not cached", async () => {
    const dir = tempDir();
    const store = new GatedStore(join(dir, "items.sqlite"));
    await store.inner.seedIfEmpty([["k", Buffer.from('{"v":1}')]]);
    const origin = await start({}, { dir, store });
    const reader = await RawConnection.open(origin.port);
    const writer = await RawConnection.open(origin.port);

    const stale = reader.send(get("/items/k"));
    await store.readStarted.promise; // the read has the old row and is parked at the gate
    const put = await writer.send(withBody("PUT", "/items/k", '{"v":2}'));
    expect(put.header("etag")).toBe(etagFor(store.inner.writeEpoch, 2));
    store.gate.resolve();
    expect((await stale).body.toString()).toBe('{"v":1}'); // it began before the write finished

    const fresh = await reader.send(get("/items/k"));
    expect(fresh.header("etag")).toBe(put.header("etag"));
    expect(fresh.body.toString()).toBe('{"v":2}');
  });

  it("a failing store read answers 500 to every waiter and is retried next time", async () => {
    const dir = tempDir();
    const store = new GatedStore(join(dir, "items.sqlite"));
    await store.inner.seedIfEmpty([["k", Buffer.from("1")]]);
    let fail = true;
    const original = store.get.bind(store);
    store.get = async (id: string) => {
      if (fail) {
        store.reads++;
        throw new Error("disk on fire");
      }
      return original(id);
    };
    store.gate.resolve();
    const origin = await start({}, { dir, store });
    const c = await RawConnection.open(origin.port);
    const r = await c.send(get("/items/k"));
    expect(r.status).toBe(500);
    expect(r.body.toString()).not.toContain("disk on fire");
    fail = false;
    expect((await c.send(get("/items/k"))).status).toBe(200);
  });
});
