// One store contract, two implementations: every origin behaviour that depends on the store (versions,
// ETags, tombstones, seeding, listing ids) holds the same on the embedded SQLite file and on PostgreSQL.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ItemStore } from "../../src/origin/store/item-store.ts";
import { etagFor } from "../../src/origin/store/etag.ts";
import { OwnedTableStore } from "../../src/origin/store/postgres/owned-table-store.ts";
import { preparePostgres } from "../../src/origin/store/postgres/prepare.ts";
import { SqliteItemStore } from "../../src/origin/store/sqlite-store.ts";
import { registerCleanup, tempDir } from "./harness.ts";
import { usePostgres } from "./pg-harness.ts";

const postgres = usePostgres();
const bytes = (text: string) => new TextEncoder().encode(text);
const text = (body: Uint8Array | undefined) => (body === undefined ? undefined : Buffer.from(body).toString());

/** Two sessions on one store (two processes, or two instances), each with its own write epoch. */
type Open = (epochs: [string, string]) => Promise<[ItemStore, ItemStore]>;

const implementations: [string, Open][] = [
  [
    "SQLite",
    async ([a, b]) => {
      const path = join(tempDir(), "items.sqlite");
      const stores = [new SqliteItemStore(path, { writeEpoch: a }), new SqliteItemStore(path, { writeEpoch: b })] as [ItemStore, ItemStore];
      for (const s of stores) registerCleanup(() => s.close());
      return stores;
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
      return stores;
    },
  ],
];

describe.each(implementations)("store contract: %s", (_, open) => {
  it("versions every write, never reuses a version after a delete, and stamps the writer's epoch", async () => {
    const [one, two] = await open(["Aa", "Bb"]);
    expect(await one.get("k")).toBeUndefined();
    expect(await one.put("k", bytes('{"v":1}'))).toBe(etagFor("Aa", 1));
    expect(await two.put("k", bytes('{"v":2}'))).toBe(etagFor("Bb", 2));
    // Both sessions read the same row: the same ETag whoever asks (what lets the edge revalidate anywhere).
    for (const s of [one, two]) expect(await s.get("k")).toEqual({ etag: etagFor("Bb", 2), body: expect.anything() });
    expect(text((await one.get("k"))?.body)).toBe('{"v":2}');
    expect(await one.delete("k")).toBe(true);
    expect(await two.get("k")).toBeUndefined();
    expect(await two.delete("k")).toBe(false);
    expect(await one.put("k", bytes('{"v":3}'))).toBe(etagFor("Aa", 4)); // the tombstone kept version 3
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
});
