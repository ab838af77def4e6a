// The embedded store's change outbox (schema version 3): older files are upgraded in place without touching
// their items or ETags, a change row commits in the same transaction as its item (or neither does), and only
// sessions opened with recordChanges fill it. Real SQLite files.
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { SqlitePurgeSource } from "../../src/origin/purge/sqlite-purge-source.ts";
import { SqliteItemStore } from "../../src/origin/store/sqlite-store.ts";
import { etagFor, registerCleanup, tempDir } from "./harness.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

function open(path: string, options: { writeEpoch?: string; recordChanges?: boolean } = { recordChanges: true }): SqliteItemStore {
  const store = new SqliteItemStore(path, options);
  registerCleanup(() => store.close());
  return store;
}

/** Reads the file on a connection of the test's own. */
function inspect<T>(path: string, read: (db: DatabaseSync) => T): T {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

const userVersion = (db: DatabaseSync) => (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version;
const changeRows = (db: DatabaseSync) => db.prepare("SELECT id, purged FROM changes ORDER BY seq").all() as { id: string; purged: number }[];

describe("SQLite change outbox", () => {
  it("upgrades a version 2 file in place: items and ETags unchanged, the outbox added and filled from then on", async () => {
    const path = join(tempDir(), "items.sqlite");
    const legacy = new DatabaseSync(path);
    legacy.exec("CREATE TABLE items (id TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL, epoch TEXT NOT NULL DEFAULT 'Qq', body BLOB) WITHOUT ROWID");
    legacy.exec("PRAGMA user_version = 2");
    legacy.prepare("INSERT INTO items (id, version, epoch, body) VALUES (?, ?, ?, ?)").run("old", 3, "Pp", Buffer.from('{"old":true}'));
    legacy.close();

    const first = open(path, { writeEpoch: "Gg", recordChanges: true });
    expect(await first.get("old")).toEqual({ etag: etagFor("Pp", 3), body: expect.anything() });
    expect(inspect(path, userVersion)).toBe(3);
    expect(inspect(path, changeRows)).toEqual([]); // nothing changed yet: the upgrade records nothing
    expect((await first.put("old", bytes('{"old":false}'))).etag).toBe(etagFor("Gg", 4));
    await first.close();

    const second = open(path); // already version 3: opened as is
    expect(inspect(path, userVersion)).toBe(3);
    expect(second.pendingChanges(10).map((c) => c.id)).toEqual(["old"]);
    expect((await second.get("old"))?.etag).toBe(etagFor("Gg", 4));
    const indexes = inspect(path, (db) => db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'changes' ORDER BY name").all());
    expect(indexes).toEqual([{ name: "changes_changed_at" }, { name: "changes_unpurged" }]);
  });

  it("refuses a file of a newer schema than it understands", () => {
    const path = join(tempDir(), "items.sqlite");
    const future = new DatabaseSync(path);
    future.exec("PRAGMA user_version = 4");
    future.close();
    expect(() => new SqliteItemStore(path)).toThrow(/schema version 4, newer than this origin understands \(3\)/);
  });

  it("commits a change row with its item, or neither: a refused change row rolls the write back", async () => {
    const path = join(tempDir(), "items.sqlite");
    const store = open(path);
    const side = new DatabaseSync(path);
    side.exec("CREATE TRIGGER refuse_change BEFORE INSERT ON changes WHEN NEW.id = 'bad' BEGIN SELECT RAISE(ABORT, 'refused'); END");
    side.close();
    // Sent together, so they share a group commit: the bad one fails alone, its neighbours commit.
    const results = await Promise.allSettled([store.put("a", bytes("1")), store.put("bad", bytes("2")), store.delete("a")]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(await store.get("bad")).toBeUndefined(); // the item did not commit without its change row
    expect(inspect(path, changeRows)).toEqual([
      { id: "a", purged: 0 },
      { id: "a", purged: 0 },
    ]);
  });

  it("records seeded items, since an edge may hold a 404 or an older database's copy of them", async () => {
    const store = open(join(tempDir(), "items.sqlite"));
    expect(await store.seedIfEmpty([["x", bytes("1")], ["y", bytes("2")]])).toBe(2);
    expect(await store.seedIfEmpty([["z", bytes("3")]])).toBe(0);
    expect(store.pendingChanges(10).map((c) => c.id)).toEqual(["x", "y"]);
  });

  it("records nothing without recordChanges, and a purge source refuses such a store", async () => {
    const path = join(tempDir(), "items.sqlite");
    const store = open(path, {});
    await store.put("a", bytes("1"));
    await store.delete("a");
    await store.seedIfEmpty([["s", bytes("1")]]);
    expect(store.recordsChanges).toBe(false);
    expect(inspect(path, changeRows)).toEqual([]);
    expect(() => new SqlitePurgeSource(store)).toThrow(/without recordChanges/);
  });

  it("marks a large cut in several writer transactions, writes interleaving", async () => {
    const store = open(join(tempDir(), "items.sqlite"));
    const source = new SqlitePurgeSource(store);
    await store.seedIfEmpty(Array.from({ length: 12_000 }, (_, i) => [`id${i}`, bytes("1")] as const));
    const cut = await source.cut();
    expect(cut.count).toBe(12_000);
    const marking = source.markCut(cut);
    await store.put("late", bytes("1")); // queued between the batches, committed after the cut
    await marking;
    expect((await source.take(10)).map((c) => c.id)).toEqual(["late"]);
  });
});
