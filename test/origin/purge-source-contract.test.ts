// One purge-source contract, two durable queues: the SQLite store's `changes` outbox and PostgreSQL's trigger-fed
// change log. What the purger relies on holds on both: committed changes are taken oldest first, each change
// once (the purger folds repeats), marking is exact, a cut covers exactly what had committed before it, and
// nothing pending is lost across a restart. PostgreSQL adds what commit order does not give for free there:
// a transaction that drew a lower seq and commits after the cut stays pending. The real purge loop then drains
// each source, by tag and by one wide purge. Real SQLite files and a real throwaway PostgreSQL; waits are on
// promises, never on time.
import { join } from "node:path";
import postgresClient from "postgres";
import { describe, expect, it } from "vitest";
import { ALL_ITEMS_TAG } from "../../src/shared/cache-tag.ts";
import type { PurgeApi } from "../../src/origin/purge/cloudflare-purge-api.ts";
import { PostgresPurgeSource } from "../../src/origin/purge/postgres-purge-source.ts";
import { Purger } from "../../src/origin/purge/purger.ts";
import type { PendingChange, PurgeSource } from "../../src/origin/purge/purge-source.ts";
import { SqlitePurgeSource } from "../../src/origin/purge/sqlite-purge-source.ts";
import { PURGE_PLANS, TokenBucket } from "../../src/origin/purge/token-bucket.ts";
import type { ItemStore } from "../../src/origin/store/item-store.ts";
import { OwnedTableStore } from "../../src/origin/store/postgres/owned-table-store.ts";
import { preparePostgres } from "../../src/origin/store/postgres/prepare.ts";
import { SqliteItemStore } from "../../src/origin/store/sqlite-store.ts";
import { deferred, registerCleanup, tempDir } from "./harness.ts";
import { usePostgres } from "./pg-harness.ts";

const postgres = usePostgres();
const body = new TextEncoder().encode('{"v":1}');

/** A store and the purge source over its changes; `restart` closes both and opens them again on the same data. */
interface Opened {
  store: ItemStore;
  source: PurgeSource;
  restart(): Promise<Opened>;
  url?: string;
}

async function openSqlite(path = join(tempDir(), "items.sqlite")): Promise<Opened> {
  const store = new SqliteItemStore(path, { recordChanges: true });
  const source = new SqlitePurgeSource(store);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await store.close();
  };
  registerCleanup(close);
  return {
    store,
    source,
    async restart() {
      await close();
      return openSqlite(path);
    },
  };
}

async function openPostgres(url?: string): Promise<Opened> {
  const database = url ?? (await postgres.database());
  const options = { url: database, display: database, poolSize: 2, timeoutMs: 5000, applicationName: "purge-contract" };
  if (url === undefined) await preparePostgres(options, undefined);
  const store = new OwnedTableStore(options);
  const source = new PostgresPurgeSource(options);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await Promise.all([store.close(), source.close()]);
  };
  registerCleanup(close);
  return {
    store,
    source,
    url: database,
    async restart() {
      await close();
      return openPostgres(database);
    },
  };
}

const ids = (changes: PendingChange[]) => changes.map((c) => c.id);

describe.each([
  ["SQLite", () => openSqlite()],
  ["PostgreSQL", () => openPostgres()],
] as const)("purge source contract: %s", (_, open) => {
  it("takes committed changes oldest first and counts them in the backlog", async () => {
    const { store, source } = await open();
    expect(await source.take(10)).toEqual([]);
    expect(await source.backlog(1000)).toBe(0);
    await store.put("a", body);
    await store.put("b", body);
    expect(ids(await source.take(10))).toEqual(["a", "b"]);
    expect(ids(await source.take(1))).toEqual(["a"]);
    expect(await source.backlog(1000)).toBe(2);
  });

  it("records the same id changed twice as two changes (the purger folds them into one tag)", async () => {
    const { store, source } = await open();
    await store.put("a", body);
    await store.put("a", body);
    const taken = await source.take(10);
    expect(ids(taken)).toEqual(["a", "a"]);
    expect(new Set(taken.map((c) => c.key)).size).toBe(2);
  });

  it("records deleting a live item, and nothing for deleting what is not there", async () => {
    const { store, source } = await open();
    await store.put("a", body);
    expect((await store.delete("a")).deleted).toBe(true);
    expect((await store.delete("a")).deleted).toBe(false);
    expect((await store.delete("never")).deleted).toBe(false);
    expect(ids(await source.take(10))).toEqual(["a", "a"]);
  });

  it("markPurged removes exactly the changes it names from take and the backlog", async () => {
    const { store, source } = await open();
    for (const id of ["a", "b", "c"]) await store.put(id, body);
    const [a, b, c] = await source.take(10);
    await source.markPurged([a!.key, c!.key]);
    expect(await source.take(10)).toEqual([b]);
    expect(await source.backlog(1000)).toBe(1);
    await source.markPurged([a!.key]); // again: nothing changes, nothing fails
    await source.markPurged([]);
    expect(await source.backlog(1000)).toBe(1);
  });

  it("latest reads the newest changes, purged or pending, newest first, each with when it was made on the store's clock", async () => {
    const { store, source } = await open();
    expect(await source.latest(10)).toEqual([]);
    const before = Date.now();
    for (const id of ["a", "b", "c"]) await store.put(id, body);
    const after = Date.now();
    const [a] = await source.take(1);
    await source.markPurged([a!.key]);
    const latest = await source.latest(2);
    expect(latest.map(({ id, purged }) => ({ id, purged }))).toEqual([
      { id: "c", purged: false },
      { id: "b", purged: false },
    ]);
    expect((await source.latest(10)).map(({ id, purged }) => ({ id, purged }))).toEqual([
      { id: "c", purged: false },
      { id: "b", purged: false },
      { id: "a", purged: true },
    ]);
    // The same machine's clock here: the store's (PostgreSQL's now(), SQLite's writer) within the writes' span.
    for (const change of latest) {
      expect(change.changedAt).toBeGreaterThanOrEqual(before - 1000);
      expect(change.changedAt).toBeLessThanOrEqual(after + 1000);
    }
    expect(latest[0]!.changedAt).toBeGreaterThanOrEqual(latest[1]!.changedAt);
  });

  it("a cut covers what was pending when it was taken; a change committed after it stays pending", async () => {
    const { store, source } = await open();
    expect((await source.cut()).count).toBe(0);
    await store.put("a", body);
    await store.put("b", body);
    const [a] = await source.take(1);
    await source.markPurged([a!.key]);
    await store.put("c", body);
    const cut = await source.cut(); // before the wide purge is sent
    expect(cut.count).toBe(2); // b and c
    await store.put("d", body); // committed while the wide purge is in flight: it may not have covered d
    await source.markCut(cut); // the wide purge was accepted
    expect(ids(await source.take(10))).toEqual(["d"]);
    expect(await source.backlog(1000)).toBe(1);
  });

  it("keeps what is pending across a restart of the store", async () => {
    const first = await open();
    for (const id of ["a", "b", "c"]) await first.store.put(id, body);
    const [a] = await first.source.take(1);
    await first.source.markPurged([a!.key]);
    const second = await first.restart();
    expect(ids(await second.source.take(10))).toEqual(["b", "c"]);
    await second.store.put("d", body);
    const taken = await second.source.take(10);
    expect(ids(taken)).toEqual(["b", "c", "d"]);
    expect(taken.some((c) => c.key === a!.key)).toBe(false); // keys are never reused
  });
});

describe.each([
  ["SQLite", () => openSqlite()],
  ["PostgreSQL", () => openPostgres()],
] as const)("the purge loop on the %s source", (_, open) => {
  /** A Purger over `source` and an API that accepts every call and records its tags. */
  function purgerOver(source: PurgeSource, backlogBound?: number) {
    const calls: string[][] = [];
    const api: PurgeApi = {
      purgeTags: async (tags) => {
        calls.push([...tags]);
        return { kind: "accepted" };
      },
      verify: async () => ({ kind: "accepted" }),
    };
    const purger = new Purger({ source, api, bucket: new TokenBucket(PURGE_PLANS.enterprise), ...(backlogBound === undefined ? {} : { backlogBound }) });
    registerCleanup(() => purger.stop());
    return { purger, calls };
  }

  it("purges each changed id's tag once and leaves nothing pending", async () => {
    const { store, source } = await open();
    for (const id of ["a", "b", "a"]) await store.put(id, body);
    const { purger, calls } = purgerOver(source);
    purger.start();
    await purger.whenIdle();
    expect(calls).toEqual([["item:a", "item:b"]]);
    expect(await source.backlog(1000)).toBe(0);
  });

  it("over the backlog bound, sends one wide purge and marks what it covered", async () => {
    const { store, source } = await open();
    for (const id of ["a", "b", "c"]) await store.put(id, body);
    const { purger, calls } = purgerOver(source, 2);
    purger.start();
    await purger.whenIdle();
    expect(calls).toEqual([[ALL_ITEMS_TAG]]);
    expect(purger.stats()).toMatchObject({ fallbacks: 1, pending: 0 });
    expect(await source.backlog(1000)).toBe(0);
  });
});

describe("purge source on PostgreSQL: commit order is not seq order", () => {
  /** A second session that starts a transaction, runs `statement` in it, and commits only when told. */
  async function heldOpen(url: string, statement: string) {
    const other = postgresClient(url, { max: 1, onnotice: () => {} });
    registerCleanup(() => other.end({ timeout: 2 }));
    const ran = deferred();
    const release = deferred();
    const done = other.begin(async (tx) => {
      await tx.unsafe(statement);
      ran.resolve();
      await release.promise;
    });
    await ran.promise;
    return {
      commit: async () => {
        release.resolve();
        await done;
      },
    };
  }

  it("a transaction that drew a lower seq and commits after the cut stays pending", async () => {
    const { store, source, url } = await openPostgres();
    const slow = await heldOpen(url!, "INSERT INTO slim_edge_items (id, version, epoch, body) VALUES ('slow', 1, 'Zz', '\\x7b7d')");
    await store.put("fast", body); // a higher seq, committed first
    const cut = await source.cut();
    expect(cut.count).toBe(1); // what had committed: fast
    await slow.commit(); // after the cut: the wide purge may have missed it
    await source.markCut(cut);
    const left = await source.take(10);
    expect(ids(left)).toEqual(["slow"]);
    const [fastKey] = await seqsOf(url!, "fast");
    expect(BigInt(left[0]!.key)).toBeLessThan(BigInt(fastKey!)); // it did draw the lower seq
  });

  it("a cut covers changes that committed while an older transaction (holding the snapshot xmin back) is open", async () => {
    const { store, source, url } = await openPostgres();
    const old = await heldOpen(url!, "SELECT pg_current_xact_id()"); // an xid, older than every change below
    await store.put("a", body);
    await store.put("b", body);
    const cut = await source.cut();
    expect(cut.count).toBe(2);
    await source.markCut(cut);
    expect(await source.backlog(1000)).toBe(0);
    await old.commit();
  });

  it("hands a TRUNCATE of the items table to the purger as a change with id \"\" (everything)", async () => {
    const { store, source, url } = await openPostgres();
    await store.put("a", body);
    const sql = postgresClient(url!, { max: 1, onnotice: () => {} });
    registerCleanup(() => sql.end({ timeout: 2 }));
    await sql`TRUNCATE slim_edge_items`;
    expect(ids(await source.take(10))).toEqual(["a", ""]);
  });
});

/** The seqs of an id's rows in the change log, read on a connection of the test's own. */
async function seqsOf(url: string, id: string): Promise<string[]> {
  const sql = postgresClient(url, { max: 1, onnotice: () => {} });
  try {
    return (await sql<{ seq: string }[]>`SELECT seq::text AS seq FROM slim_edge_changes WHERE item_id = ${id} ORDER BY seq`).map((r) => r.seq);
  } finally {
    await sql.end({ timeout: 2 });
  }
}
