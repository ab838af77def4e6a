// One store contract, two implementations: every origin behaviour that depends on the store (versions,
// ETags, tombstones, seeding, listing ids, conditional writes) holds the same on the embedded SQLite file
// and on PostgreSQL.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PreconditionFailedError, type DeleteResult, type ItemStore, type PutResult, type WriteCondition } from "../../src/origin/store/item-store.ts";
import { etagFor } from "../../src/origin/store/etag.ts";
import { openPool } from "../../src/origin/store/postgres/connection.ts";
import { OwnedTableStore } from "../../src/origin/store/postgres/owned-table-store.ts";
import { preparePostgres } from "../../src/origin/store/postgres/prepare.ts";
import { SqliteItemStore } from "../../src/origin/store/sqlite-store.ts";
import { registerCleanup, tempDir } from "./harness.ts";
import { usePostgres } from "./pg-harness.ts";

const postgres = usePostgres();
const bytes = (text: string) => new TextEncoder().encode(text);
const text = (body: Uint8Array | undefined) => (body === undefined ? undefined : Buffer.from(body).toString());

/**
 * Two sessions on one store (two processes, or two instances), each with its own write epoch, how many
 * changes the store has logged so far (the SQLite outbox, PostgreSQL's trigger-fed change log), and the
 * transaction of the last change logged where the log records one (PostgreSQL: what its feed reports).
 */
type Open = (epochs: [string, string]) => Promise<[ItemStore, ItemStore, () => Promise<number>, () => Promise<bigint | undefined>]>;

const implementations: [string, Open][] = [
  [
    "SQLite",
    async ([a, b]) => {
      const path = join(tempDir(), "items.sqlite");
      const one = new SqliteItemStore(path, { writeEpoch: a, recordChanges: true });
      const two = new SqliteItemStore(path, { writeEpoch: b, recordChanges: true });
      for (const s of [one, two]) registerCleanup(() => s.close());
      return [one, two, async () => one.pendingChanges(1_000_000).length, async () => undefined];
    },
  ],
  [
    "PostgreSQL",
    async ([a, b]) => {
      const url = await postgres.database();
      const options = { url, display: url, poolSize: 2, timeoutMs: 5000, applicationName: "contract-test" };
      await preparePostgres(options, undefined);
      const stores = [new OwnedTableStore({ ...options, writeEpoch: a }), new OwnedTableStore({ ...options, writeEpoch: b })] as [ItemStore, ItemStore];
      for (const s of stores) registerCleanup(() => s.close());
      const sql = openPool(options, 1);
      registerCleanup(() => sql.end());
      return [
        ...stores,
        async () => Number((await sql<{ n: string }[]>`SELECT count(*) AS n FROM slim_edge_changes`)[0]!.n),
        async () => BigInt((await sql<{ xid: string }[]>`SELECT xid::text AS xid FROM slim_edge_changes ORDER BY seq DESC LIMIT 1`)[0]!.xid),
      ];
    },
  ],
];

/** The ETag a put reports (what it reports of its transaction is checked on its own). */
const tagOf = async (write: Promise<PutResult>) => (await write).etag;
/** Whether a delete found a live item to delete. */
const deletedBy = async (write: Promise<DeleteResult>) => (await write).deleted;

/** What a conditional write did: its value, or "412" when the store refused it. */
async function outcome<T>(write: Promise<T>): Promise<T | "412"> {
  try {
    return await write;
  } catch (error) {
    if (error instanceof PreconditionFailedError) return "412";
    throw error;
  }
}

describe.each(implementations)("store contract: %s", (name, open) => {
  it("reports the transaction of each write that changed something as the change log records it (PostgreSQL), none otherwise", async () => {
    const [one, , , lastLogged] = await open(["Nn", "Oo"]);
    const writes: (() => Promise<PutResult | DeleteResult>)[] = [
      () => one.put("t", bytes("1")),
      () => one.put("t", bytes("2"), { ifMatch: "*" }),
      () => one.put("t", bytes("3"), { ifNoneMatch: ['"other"'] }),
      () => one.delete("t", { ifMatch: "*" }),
      () => one.put("t", bytes("4")),
      () => one.delete("t"),
    ];
    for (const write of writes) {
      const { transaction } = await write();
      expect(transaction).toBe(name === "SQLite" ? undefined : await lastLogged());
    }
    expect(await one.delete("t")).toEqual({ deleted: false, transaction: undefined });
    expect(await one.delete("t", { ifNoneMatch: "*" })).toEqual({ deleted: false, transaction: undefined });
  });

  it("versions every write, never reuses a version after a delete, and stamps the writer's epoch", async () => {
    const [one, two] = await open(["Aa", "Bb"]);
    expect(await one.get("k")).toBeUndefined();
    expect(await tagOf(one.put("k", bytes('{"v":1}')))).toBe(etagFor("Aa", 1));
    expect(await tagOf(two.put("k", bytes('{"v":2}')))).toBe(etagFor("Bb", 2));
    // Both sessions read the same row: the same ETag whoever asks (what lets the edge revalidate anywhere).
    for (const s of [one, two]) expect(await s.get("k")).toEqual({ etag: etagFor("Bb", 2), body: expect.anything() });
    expect(text((await one.get("k"))?.body)).toBe('{"v":2}');
    expect(await deletedBy(one.delete("k"))).toBe(true);
    expect(await two.get("k")).toBeUndefined();
    expect(await deletedBy(two.delete("k"))).toBe(false);
    expect(await tagOf(one.put("k", bytes('{"v":3}')))).toBe(etagFor("Aa", 4)); // the tombstone kept version 3
    expect(one.writable).toBe(true);
  });

  it("counts, lists and seeds only live items, and seeds only an empty store", async () => {
    const [one, two] = await open(["Cc", "Dd"]);
    expect(await one.seedIfEmpty([["a", bytes("1")], ["b", bytes("2")], ["c", bytes("3")]])).toBe(3);
    expect(await two.seedIfEmpty([["z", bytes("9")]])).toBe(0);
    await two.delete("b");
    expect(await one.count()).toBe(2);
    const ids: string[] = [];
    for await (const batch of one.ids()) ids.push(...batch);
    expect(ids.sort()).toEqual(["a", "c"]);
    expect(await one.get("a")).toEqual({ etag: etagFor("Cc", 1), body: expect.anything() });
    expect(await one.ping()).toBe(true);
  });

  it("keeps bodies byte for byte", async () => {
    const [one] = await open(["Ee", "Ff"]);
    const body = bytes('{"s":"é ✓ \\u0000","n":1.0e3}');
    await one.put("u", body);
    expect(Buffer.from((await one.get("u"))!.body).equals(Buffer.from(body))).toBe(true);
  });

  describe("conditional writes (If-Match / If-None-Match), evaluated with the write", () => {
    /** Refused, and nothing changed: same item (or still none), no change logged. */
    async function refusedChangesNothing(store: ItemStore, changes: () => Promise<number>, id: string, write: () => Promise<unknown>) {
      const before = await store.get(id);
      const logged = await changes();
      expect(await outcome(write())).toBe("412");
      const after = await store.get(id);
      expect(after?.etag).toBe(before?.etag);
      expect(text(after?.body)).toBe(text(before?.body));
      expect(await changes()).toBe(logged);
    }

    it("PUT If-Match: the current strong ETag or `*` writes; a stale, foreign or missing one, or a missing item, is refused", async () => {
      const [one, two, changes] = await open(["Gg", "Hh"]);
      const e1 = await tagOf(one.put("k", bytes('{"v":1}')));
      // Another session's ETag is matched as well: both compute the same ETag from the row.
      const e2 = await tagOf(two.put("k", bytes('{"v":2}'), { ifMatch: [e1] }));
      expect(e2).toBe(etagFor("Hh", 2));
      expect(await tagOf(one.put("k", bytes('{"v":3}'), { ifMatch: ['"other"', e2] }))).toBe(etagFor("Gg", 3));
      const e3 = etagFor("Gg", 3);
      for (const ifMatch of [[e1], [e2], ['"nope"'], [], [etagFor("Hh", 3)], [e3.slice(0, -1) + '0"'], ['"Gg03"']]) {
        await refusedChangesNothing(one, changes, "k", () => one.put("k", bytes('{"v":"no"}'), { ifMatch }));
      }
      expect(await tagOf(two.put("k", bytes('{"v":4}'), { ifMatch: "*" }))).toBe(etagFor("Hh", 4));
      // No live item: If-Match never holds, and the refusal leaves no row behind (the next version is 1).
      await refusedChangesNothing(one, changes, "new", () => one.put("new", bytes("1"), { ifMatch: "*" }));
      await refusedChangesNothing(one, changes, "new", () => one.put("new", bytes("1"), { ifMatch: [etagFor("Gg", 1)] }));
      expect(await tagOf(one.put("new", bytes("1")))).toBe(etagFor("Gg", 1));
      // A tombstone is no live item either.
      await one.delete("new");
      await refusedChangesNothing(one, changes, "new", () => one.put("new", bytes("2"), { ifMatch: "*" }));
      await refusedChangesNothing(one, changes, "new", () => one.put("new", bytes("2"), { ifMatch: [etagFor("Gg", 2)] }));
    });

    it("PUT If-None-Match: `*` creates only; a list refuses the current ETag (weak comparison: tags without W/)", async () => {
      const [one, two, changes] = await open(["Ii", "Jj"]);
      expect(await tagOf(one.put("c", bytes('{"v":1}'), { ifNoneMatch: "*" }))).toBe(etagFor("Ii", 1));
      await refusedChangesNothing(two, changes, "c", () => two.put("c", bytes('{"v":2}'), { ifNoneMatch: "*" }));
      await one.delete("c");
      expect(await tagOf(two.put("c", bytes('{"v":3}'), { ifNoneMatch: "*" }))).toBe(etagFor("Jj", 3)); // over the tombstone
      const current = etagFor("Jj", 3);
      await refusedChangesNothing(one, changes, "c", () => one.put("c", bytes("0"), { ifNoneMatch: ['"x"', current] }));
      expect(await tagOf(one.put("c", bytes('{"v":4}'), { ifNoneMatch: [etagFor("Jj", 2), '"x"'] }))).toBe(etagFor("Ii", 4));
      expect(await tagOf(one.put("fresh", bytes("1"), { ifNoneMatch: [etagFor("Ii", 1)] }))).toBe(etagFor("Ii", 1)); // nothing to match
      expect(await tagOf(one.put("c", bytes('{"v":5}'), { ifNoneMatch: [] }))).toBe(etagFor("Ii", 5));
    });

    it("PUT with both: If-Match must hold and If-None-Match must too", async () => {
      const [one, , changes] = await open(["Kk", "Ll"]);
      const e1 = await tagOf(one.put("b", bytes("1")));
      await refusedChangesNothing(one, changes, "b", () => one.put("b", bytes("2"), { ifMatch: [e1], ifNoneMatch: [e1] }));
      await refusedChangesNothing(one, changes, "b", () => one.put("b", bytes("2"), { ifMatch: "*", ifNoneMatch: "*" }));
      await refusedChangesNothing(one, changes, "missing", () => one.put("missing", bytes("2"), { ifMatch: "*", ifNoneMatch: ['"x"'] }));
      expect(await tagOf(one.put("b", bytes("2"), { ifMatch: [e1], ifNoneMatch: ['"x"'] }))).toBe(etagFor("Kk", 2));
    });

    it("DELETE: If-Match refuses a stale ETag or a missing item; If-None-Match `*` refuses a live one; a list its current ETag", async () => {
      const [one, two, changes] = await open(["Mm", "Nn"]);
      const e1 = await tagOf(one.put("d", bytes("1")));
      const e2 = await tagOf(two.put("d", bytes("2")));
      await refusedChangesNothing(one, changes, "d", () => one.delete("d", { ifMatch: [e1] }));
      await refusedChangesNothing(one, changes, "d", () => one.delete("d", { ifNoneMatch: "*" }));
      await refusedChangesNothing(one, changes, "d", () => one.delete("d", { ifNoneMatch: [e2] }));
      await refusedChangesNothing(one, changes, "d", () => one.delete("d", { ifMatch: [e2], ifNoneMatch: [e2] }));
      expect(await deletedBy(one.delete("d", { ifMatch: [e2] }))).toBe(true);
      expect(await one.get("d")).toBeUndefined();
      await refusedChangesNothing(one, changes, "d", () => one.delete("d", { ifMatch: "*" }));
      await refusedChangesNothing(one, changes, "d", () => one.delete("d", { ifMatch: [e2] }));
      // No live item and no If-Match: the condition holds, and there is nothing to delete.
      const logged = await changes();
      expect(await deletedBy(one.delete("d", { ifNoneMatch: "*" }))).toBe(false);
      expect(await deletedBy(one.delete("d", { ifNoneMatch: [e2] }))).toBe(false);
      expect(await changes()).toBe(logged);
      const e4 = await tagOf(one.put("d", bytes("4")));
      expect(await deletedBy(two.delete("d", { ifNoneMatch: [e2] }))).toBe(true);
      expect(await tagOf(one.put("d", bytes("6")))).toBe(etagFor("Mm", 6));
      expect(await deletedBy(two.delete("d", { ifMatch: "*" }))).toBe(true);
      expect(e4).toBe(etagFor("Mm", 4));
    });

    it("matches ETags with multi-digit versions, and only as issued", async () => {
      const [one, , changes] = await open(["Oo", "Pp"]);
      let etag = "";
      for (let v = 1; v <= 65; v++) etag = await tagOf(one.put("m", bytes(String(v))));
      expect(etag).toBe(etagFor("Oo", 65)); // "Oo11"
      await refusedChangesNothing(one, changes, "m", () => one.put("m", bytes("x"), { ifMatch: [etagFor("Oo", 64)] }));
      await refusedChangesNothing(one, changes, "m", () => one.put("m", bytes("x"), { ifMatch: ['"Oo011"', `W/${etag}`, '"Oo65"'] }));
      expect(await tagOf(one.put("m", bytes("66"), { ifMatch: [etag] }))).toBe(etagFor("Oo", 66));
    });

    it("two sessions racing on one ETag: exactly one write wins, the other is refused", async () => {
      const [one, two, changes] = await open(["Qq", "Rr"]);
      const e1 = await tagOf(one.put("r", bytes("0")));
      const logged = await changes();
      const race = async (writes: Promise<unknown>[]) => {
        const results = await Promise.all(writes.map(outcome));
        expect(results.filter((r) => r === "412")).toHaveLength(writes.length - 1);
        return results.find((r) => r !== "412");
      };
      const winner = (await race([tagOf(one.put("r", bytes('"one"'), { ifMatch: [e1] })), tagOf(two.put("r", bytes('"two"'), { ifMatch: [e1] }))])) as string;
      expect((await one.get("r"))?.etag).toBe(winner);
      expect(await race([tagOf(one.put("x", bytes("1"), { ifNoneMatch: "*" })), tagOf(two.put("x", bytes("2"), { ifNoneMatch: "*" }))])).toMatch(/^"..1"$/);
      expect(await race([deletedBy(one.delete("r", { ifMatch: [winner] })), deletedBy(two.delete("r", { ifMatch: [winner] }))])).toBe(true);
      expect(await changes()).toBe(logged + 3);
    });

    it("writes without a condition are unchanged", async () => {
      const [one] = await open(["Ss", "Tt"]);
      const none: WriteCondition | undefined = undefined;
      expect(await tagOf(one.put("u", bytes("1"), none))).toBe(etagFor("Ss", 1));
      expect(await deletedBy(one.delete("u", none))).toBe(true);
      expect(await deletedBy(one.delete("u", none))).toBe(false);
    });
  });
});
