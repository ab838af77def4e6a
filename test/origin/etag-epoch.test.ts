import { copyFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { SqliteItemStore } from "../../src/origin/store/sqlite-store.ts";
import { epochOf, etagFor, get, once, start, tempDir, until, withBody } from "./harness.ts";
import { startOnPostgres, usePostgres } from "./pg-harness.ts";

/** An origin on `dir`'s database whose store session writes with `writeEpoch` (random if omitted). */
function startOn(dir: string, writeEpoch?: string) {
  const store = new SqliteItemStore(join(dir, "items.sqlite"), writeEpoch === undefined ? {} : { writeEpoch });
  return start({}, { dir, store });
}

const put = async (port: number, id: string, body: string) => {
  const r = await once(port, withBody("PUT", `/items/${id}`, body));
  expect(r.status).toBe(204);
  return r.header("etag")!;
};

describe("ETag epochs: an ETag never names two different contents", () => {
  it("after the database is lost, the same id and version get a new ETag and the edge's old copy a 200", async () => {
    const dir = tempDir();
    const first = await startOn(dir, "Aa");
    const old = await put(first.port, "k", '{"price":10}');
    expect(old).toBe('"Aa1"');
    await first.close();
    rmSync(dir, { recursive: true, force: true }); // volume lost: a new, empty database

    const second = await startOn(dir, "Bb");
    expect(await put(second.port, "k", '{"price":99}')).toBe('"Bb1"'); // version 1 again, another epoch
    const revalidated = await once(second.port, get("/items/k", { "If-None-Match": old }));
    expect(revalidated.status).toBe(200);
    expect(revalidated.body.toString()).toBe('{"price":99}');
  });

  it("after a restore from an older backup, rewritten items get ETags the lost history never used", async () => {
    const dir = tempDir();
    const backupDir = tempDir();
    const first = await startOn(dir, "Aa");
    await put(first.port, "k", '{"v":"A"}'); // "Aa1"
    await first.close(); // checkpoints the WAL into the file
    copyFileSync(join(dir, "items.sqlite"), join(backupDir, "items.sqlite")); // the backup

    const later = await startOn(dir, "Cc");
    const lost = await put(later.port, "k", '{"v":"B"}'); // version 2, then lost with the restore
    expect(lost).toBe('"Cc2"');
    await later.close();

    const restored = await startOn(backupDir, "Dd");
    // Untouched items keep their ETag (the edge still gets 304s for them)...
    expect((await once(restored.port, get("/items/k", { "If-None-Match": '"Aa1"' }))).status).toBe(304);
    // ...and version 2 is written again, for other content, under an epoch of its own.
    expect(await put(restored.port, "k", '{"v":"D"}')).toBe('"Dd2"');
    const revalidated = await once(restored.port, get("/items/k", { "If-None-Match": lost }));
    expect(revalidated.status).toBe(200);
    expect(revalidated.body.toString()).toBe('{"v":"D"}');
  });

  it("draws a random write epoch for every store session", async () => {
    const epochs = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const store = new SqliteItemStore(join(tempDir(), "items.sqlite"));
      expect(store.writeEpoch).toMatch(/^[0-9A-Za-z_-]{2}$/);
      epochs.add(store.writeEpoch);
      await store.close();
    }
    expect(epochs.size).toBeGreaterThan(1); // all five equal: p = 4096^-4
  });

  it("upgrades a version 1 database in place: its items get one random epoch, stable across restarts", async () => {
    const dir = tempDir();
    const path = join(dir, "items.sqlite");
    const legacy = new DatabaseSync(path);
    legacy.exec("CREATE TABLE items (id TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL, body BLOB) WITHOUT ROWID");
    legacy.exec("PRAGMA user_version = 1");
    legacy.prepare("INSERT INTO items (id, version, body) VALUES (?, ?, ?)").run("old", 7, Buffer.from('{"old":true}'));
    legacy.prepare("INSERT INTO items (id, version, body) VALUES (?, ?, ?)").run("gone", 4, null);
    legacy.close();

    const first = await startOn(dir, "Ee");
    const r = await once(first.port, get("/items/old"));
    expect(r.body.toString()).toBe('{"old":true}');
    const etag = r.header("etag")!;
    const legacyEpoch = epochOf(etag);
    expect(etag).toBe(etagFor(legacyEpoch, 7));
    expect(await put(first.port, "gone", '{"back":1}')).toBe('"Ee5"'); // the tombstone's count goes on
    await first.close();

    const check = new DatabaseSync(path, { readOnly: true });
    expect((check.prepare("PRAGMA user_version").get() as { user_version: number }).user_version).toBe(3); // 1 → 3 at once
    check.close();

    const second = await startOn(dir, "Ff");
    expect((await once(second.port, get("/items/old"))).header("etag")).toBe(etag);
    expect((await once(second.port, get("/items/gone"))).header("etag")).toBe('"Ee5"');
  });

  it("refuses a write epoch outside the ETag alphabet", () => {
    expect(() => new SqliteItemStore(join(tempDir(), "items.sqlite"), { writeEpoch: 'a"' })).toThrow(/write epoch/);
  });
});

describe("ETag epochs on PostgreSQL", () => {
  const postgres = usePostgres();

  it("after the items table is truncated under running instances, an id written again gets an ETag the lost rows never had", async () => {
    const url = await postgres.database();
    const db = url.slice(url.lastIndexOf("/") + 1);
    const [writer, other] = [await startOnPostgres(url, { FEED_POLL_MS: "20" }), await startOnPostgres(url, { FEED_POLL_MS: "20" })];
    const old = await put(writer.port, "k", '{"v":"before"}');
    expect((await once(other.port, get("/items/k"))).header("etag")).toBe(old);

    await postgres.pg.sql("TRUNCATE slim_edge_items", db); // the tombstones go too: version 1 comes again
    for (const o of [writer, other]) await until(async () => (await once(o.port, get("/items/k"))).status === 404, "the truncate to reach every instance");
    for (const o of [writer, other]) {
      const again = await put(o.port, "k", `{"v":"after ${o.port}"}`);
      expect(again).not.toBe(old);
      // The other instance hears of the write through the feed (not at once): wait for it, then revalidate.
      await until(async () => (await once(other.port, get("/items/k"))).header("etag") === again, "the write to reach the other instance");
      const revalidated = await once(other.port, get("/items/k", { "If-None-Match": old }));
      expect([revalidated.status, revalidated.body.toString()]).toEqual([200, `{"v":"after ${o.port}"}`]);
    }
  });
});
