// Pruning the change log: purged rows older than 10 minutes and any row older than a day go, in bounded
// batches, on PostgreSQL (with pruned_below raised so that a feed that fell behind resets instead of missing a
// change) and on the embedded SQLite outbox (through its writer thread). Ages are made by moving changed_at back
// (PostgreSQL) or the pruner's clock forward (SQLite); the schedule runs on a manual clock. Nothing sleeps.
import { join } from "node:path";
import postgresClient from "postgres";
import { describe, expect, it } from "vitest";
import { ChangeLogCursor } from "../../src/origin/feed/change-log-cursor.ts";
import { ChangeLogPruning, PostgresChangeLogPruner, SqliteChangeLogPruner, type PruneRules } from "../../src/origin/purge/change-log-pruner.ts";
import { SqlitePurgeSource } from "../../src/origin/purge/sqlite-purge-source.ts";
import { ManualTimers } from "../../src/origin/purge/timers.ts";
import { OwnedTableStore } from "../../src/origin/store/postgres/owned-table-store.ts";
import { preparePostgres } from "../../src/origin/store/postgres/prepare.ts";
import { SqliteItemStore } from "../../src/origin/store/sqlite-store.ts";
import { deferred, registerCleanup, tempDir } from "./harness.ts";
import { usePostgres } from "./pg-harness.ts";

const postgres = usePostgres();
const body = new TextEncoder().encode("{}");
const MINUTE = 60_000;

/** A prepared database with an item store, a pruner and a connection of the test's own. */
async function onPostgres(rules: Partial<PruneRules> = {}) {
  const url = await postgres.database();
  const options = { url, display: url, poolSize: 2, timeoutMs: 5000, applicationName: "prune-test" };
  await preparePostgres(options, undefined);
  const store = new OwnedTableStore(options);
  const pruner = new PostgresChangeLogPruner({ ...options, ...rules });
  const sql = postgresClient(url, { max: 1, onnotice: () => {} });
  registerCleanup(async () => {
    await Promise.all([store.close(), pruner.close(), sql.end({ timeout: 2 })]);
  });
  const rows = async () =>
    (await sql<{ id: string }[]>`SELECT item_id AS id FROM slim_edge_changes ORDER BY seq`).map((r) => r.id);
  const xidOf = async (id: string) => BigInt((await sql<{ xid: string }[]>`SELECT xid::text AS xid FROM slim_edge_changes WHERE item_id = ${id}`)[0]!.xid);
  const prunedBelow = async () => BigInt((await sql<{ p: string }[]>`SELECT pruned_below::text AS p FROM slim_edge_feed`)[0]!.p);
  const xmin = async () => BigInt((await sql<{ x: string }[]>`SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS x`)[0]!.x);
  /** Moves `id`'s change back in time by `minutes`, marked purged or not. */
  const age = (id: string, minutes: number, purged: boolean) =>
    sql`UPDATE slim_edge_changes SET changed_at = changed_at - ${minutes}::float8 * interval '1 minute', purged = ${purged} WHERE item_id = ${id}`;
  return { url, store, pruner, sql, rows, xidOf, prunedBelow, xmin, age };
}

describe("pruning the PostgreSQL change log", () => {
  it("deletes purged rows older than 10 minutes and any row older than a day, and raises pruned_below past them", async () => {
    const db = await onPostgres();
    for (const id of ["old-purged", "recent-purged", "old-pending", "day-old-pending", "new"]) await db.store.put(id, body);
    await db.age("old-purged", 11, true);
    await db.age("recent-purged", 5, true);
    await db.age("old-pending", 11, false); // not purged yet: still owed a purge
    await db.age("day-old-pending", 25 * 60, false); // an edge has dropped it by now
    const doomed = [await db.xidOf("old-purged"), await db.xidOf("day-old-pending")];
    expect(await db.pruner.pruneOnce()).toBe(2);
    expect(await db.rows()).toEqual(["recent-purged", "old-pending", "new"]);
    const below = await db.prunedBelow();
    expect(below).toBe((doomed[0]! > doomed[1]! ? doomed[0]! : doomed[1]!) + 1n); // the highest deleted xid + 1
    expect(await db.pruner.pruneOnce()).toBe(0);
    expect(await db.prunedBelow()).toBe(below); // nothing deleted: left as it was
  });

  it("makes a feed that is behind the deleted rows reset, and leaves one past them alone", async () => {
    const db = await onPostgres();
    const feedId = (await db.sql<{ id: string }[]>`SELECT feed_id::text AS id FROM slim_edge_feed`)[0]!.id;
    const poll = async (cursor: ChangeLogCursor) => {
      // Only the xmin matters here (what the pruner may delete): the snapshot as if nothing ran beyond it.
      const xmin = await db.xmin();
      return cursor.absorb({ snapshot: { xmin, xmax: xmin, xip: [] }, feedId, prunedBelow: await db.prunedBelow(), rows: [] });
    };
    const behind = new ChangeLogCursor();
    await poll(behind); // its watermark is before the change below
    await db.store.put("a", body);
    await db.age("a", 11, true);
    const caughtUp = new ChangeLogCursor();
    await poll(caughtUp); // its watermark is past a's transaction
    expect(await db.pruner.pruneOnce()).toBe(1);
    expect(await poll(behind)).toEqual({ reset: true, reason: expect.stringMatching(/pruned/) });
    expect(await poll(caughtUp)).toEqual({ reset: false, changes: [] });
  });

  it("deletes in bounded statements, walks past rows still owed a purge, and goes on at the next run", async () => {
    const db = await onPostgres({ batch: 3, maxBatches: 2 });
    for (const id of ["p1", "p2"]) await db.store.put(id, body);
    for (let i = 0; i < 8; i++) await db.store.put(`x${i}`, body);
    for (const id of ["p1", "p2"]) await db.age(id, 11, false);
    for (let i = 0; i < 8; i++) await db.age(`x${i}`, 11, true);
    expect(await db.pruner.pruneOnce()).toBe(4); // windows [p1 p2 x0] [x1 x2 x3]
    expect(await db.pruner.pruneOnce()).toBe(4); // [p1 p2 x4] [x5 x6 x7]
    expect(await db.rows()).toEqual(["p1", "p2"]);
  });

  it("keeps rows of transactions newer than the oldest one still open, until it ends", async () => {
    const db = await onPostgres();
    const other = postgresClient(db.url, { max: 1, onnotice: () => {} });
    registerCleanup(() => other.end({ timeout: 2 }));
    const holding = deferred();
    const release = deferred();
    const open = other.begin(async (tx) => {
      await tx`SELECT pg_current_xact_id()`; // an xid older than the change below: the snapshot xmin stays at it
      holding.resolve();
      await release.promise;
    });
    await holding.promise;
    await db.store.put("a", body);
    await db.age("a", 11, true);
    expect(await db.pruner.pruneOnce()).toBe(0); // every feed's watermark is held back too: deleting would reset them all
    release.resolve();
    await open;
    expect(await db.pruner.pruneOnce()).toBe(1);
  });
});

describe("pruning the SQLite change outbox", () => {
  function onSqlite() {
    const store = new SqliteItemStore(join(tempDir(), "items.sqlite"), { recordChanges: true });
    registerCleanup(() => store.close());
    return { store, source: new SqlitePurgeSource(store) };
  }

  it("deletes purged rows older than 10 minutes and any row older than a day, in bounded writer transactions", async () => {
    const { store, source } = onSqlite();
    for (const id of ["a", "b", "c", "d"]) await store.put(id, body);
    const [a, b] = await source.take(2);
    await source.markPurged([a!.key, b!.key]);
    const now = Date.now();
    expect(await new SqliteChangeLogPruner(store, { clock: () => now + 9 * MINUTE }).pruneOnce()).toBe(0);
    expect(await new SqliteChangeLogPruner(store, { clock: () => now + 11 * MINUTE, batch: 1 }).pruneOnce()).toBe(2);
    expect((await source.take(10)).map((c) => c.id)).toEqual(["c", "d"]); // pending: kept
    expect(await new SqliteChangeLogPruner(store, { clock: () => now + 25 * 60 * MINUTE, batch: 1, maxBatches: 1 }).pruneOnce()).toBe(1);
    expect(await new SqliteChangeLogPruner(store, { clock: () => now + 25 * 60 * MINUTE }).pruneOnce()).toBe(1);
    expect(await source.backlog(1000)).toBe(0);
  });
});

describe("the pruning schedule", () => {
  it("runs at start and every interval while running, logs a failing run once, and leaves no timer after stop()", async () => {
    const timers = new ManualTimers();
    const lines: string[] = [];
    let fail = false;
    let runs = 0;
    const pruning = new ChangeLogPruning(
      {
        pruneOnce: async () => {
          runs++;
          if (fail) throw new Error("store down");
          return 2;
        },
      },
      { everyMs: MINUTE, timers, log: (line) => lines.push(line) },
    );
    pruning.start();
    await pruning.settled();
    expect([runs, pruning.deleted, timers.pending]).toEqual([1, 2, 1]);
    fail = true;
    for (let i = 0; i < 2; i++) {
      timers.advance(MINUTE);
      await pruning.settled();
    }
    expect(runs).toBe(3);
    expect(lines).toEqual([expect.stringMatching(/cannot prune the change log \(store down\)/)]);
    fail = false;
    timers.advance(MINUTE);
    await pruning.settled();
    expect(lines.at(-1)).toMatch(/works again/);
    expect(pruning.deleted).toBe(4);
    await pruning.stop();
    expect(timers.pending).toBe(0);
    timers.advance(10 * MINUTE);
    expect(runs).toBe(4);
  });
});
