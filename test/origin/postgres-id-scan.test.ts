// Listing every id of a PostgreSQL item table (what the membership filter is built from) under the store's
// deadline: each page is its own short statement, so a scan longer than STORE_TIMEOUT_MS in total (millions
// of ids, or a consumer that yields to the event loop between batches) completes, lists every id exactly
// once in its canonical spelling, pages integer ids in integer order, and leaves the pool answering point
// reads correctly. (A single cursor was one statement for the whole scan: cancelled at the deadline, after
// which postgres.js could hand its leftover rows to the connection's next query, a "not found" for an
// existing item.)
import { describe, expect, it } from "vitest";
import type { ItemStore } from "../../src/origin/store/item-store.ts";
import { OwnedTableStore } from "../../src/origin/store/postgres/owned-table-store.ts";
import { preparePostgres } from "../../src/origin/store/postgres/prepare.ts";
import { installScript } from "../../src/origin/store/postgres/schema.ts";
import { UserTableStore } from "../../src/origin/store/postgres/user-table-store.ts";
import { registerCleanup } from "./harness.ts";
import { usePostgres } from "./pg-harness.ts";

const postgres = usePostgres();

/** More rows than one batch of the old cursor (10,000), so that a scan is several round trips whatever the page. */
const ROWS = 25_000;
const TIMEOUT_MS = 200;
/** One pool connection: the point reads after a scan use the connection the scan used. */
const options = (url: string) => ({ url, display: url, poolSize: 1, timeoutMs: TIMEOUT_MS, applicationName: "id-scan-test", idBatch: 1_000 });

/**
 * Every batch of `store.ids()`, pausing once after the first for longer than the deadline: a consumer the
 * event loop keeps busy (the membership filter yields between batches). `between` runs after each batch.
 */
async function scan(store: ItemStore, between: (batch: number) => Promise<void> = async () => {}): Promise<string[]> {
  const ids: string[] = [];
  let batches = 0;
  for await (const batch of store.ids()) {
    ids.push(...batch);
    if (++batches === 1) await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS * 1.5));
    await between(batches);
  }
  expect(batches).toBeGreaterThan(2);
  return ids;
}

/** `ids` lists exactly `expected`, each once. */
function expectExactly(ids: string[], expected: Iterable<string>): void {
  const want = [...expected].sort();
  expect(ids.length).toBe(want.length);
  expect([...ids].sort()).toEqual(want);
}

async function userTable(url: string, table: string, idColumn: string): Promise<UserTableStore> {
  await postgres.pg.sql(installScript(table, idColumn), url.slice(url.lastIndexOf("/") + 1));
  const shape = await preparePostgres(options(url), { table, idColumn, jsonColumn: undefined, versionColumn: undefined });
  const store = new UserTableStore(options(url), shape!);
  registerCleanup(() => store.close());
  return store;
}

describe("listing ids from PostgreSQL under STORE_TIMEOUT_MS", () => {
  it("the origin's own table: every live id once, tombstones left out, and point reads right afterwards", async () => {
    const url = await postgres.database();
    await preparePostgres(options(url), undefined);
    const db = url.slice(url.lastIndexOf("/") + 1);
    await postgres.pg.sql(
      `INSERT INTO slim_edge_items (id, version, epoch, body)
         SELECT 'id' || g, 1, 'Aa', CASE WHEN g % 10 = 0 THEN NULL ELSE convert_to('{"n":' || g || '}', 'UTF8') END
         FROM generate_series(1, ${ROWS}) g`,
      db,
    );
    const store = new OwnedTableStore(options(url));
    registerCleanup(() => store.close());
    const live = Array.from({ length: ROWS }, (_, i) => i + 1).filter((n) => n % 10 !== 0);
    expectExactly(await scan(store), live.map((n) => `id${n}`));
    for (const n of [1, 9, 12_345, ROWS - 1]) expect(Buffer.from((await store.get(`id${n}`))!.body).toString()).toBe(`{"n":${n}}`);
    expect(await store.get("id10")).toBeUndefined();
  });

  it("the origin's own table while it changes: every id that exists throughout the scan is listed once", async () => {
    const url = await postgres.database();
    await preparePostgres(options(url), undefined);
    const db = url.slice(url.lastIndexOf("/") + 1);
    await postgres.pg.sql(`INSERT INTO slim_edge_items SELECT 'id' || g, 1, 'Aa', '\\x7b7d' FROM generate_series(1, ${ROWS}) g`, db);
    const store = new OwnedTableStore(options(url));
    registerCleanup(() => store.close());
    const touched = new Set<string>();
    const ids = await scan(store, async (batch) => {
      // Ahead of and behind the scan (ids sort as text: id1, id10, id100, ...): creates and deletes.
      for (const id of [`new-${batch}`, `id${batch}0000${batch}`, `zz${batch}`]) {
        touched.add(id);
        await store.put(id, new Uint8Array([123, 125]));
      }
      for (const id of [`id${2 * batch + 1}`, `id9${batch}`]) {
        touched.add(id);
        await store.delete(id);
      }
    });
    expect(new Set(ids).size).toBe(ids.length);
    const throughout = Array.from({ length: ROWS }, (_, i) => `id${i + 1}`).filter((id) => !touched.has(id));
    const listed = new Set(ids);
    expect(throughout.filter((id) => !listed.has(id))).toEqual([]);
  });

  it("a user table with an integer id column: integer order, canonical spelling, negative ids", async () => {
    const url = await postgres.database();
    const db = url.slice(url.lastIndexOf("/") + 1);
    // Text order would differ ("-1" < "-10" < "1" < "10" < "2"): paging must compare integers.
    await postgres.pg.sql(`CREATE TABLE nums (n integer PRIMARY KEY, doc jsonb); INSERT INTO nums SELECT g, jsonb_build_object('n', g) FROM generate_series(-50, ${ROWS - 51}) g`, db);
    const store = await userTable(url, "nums", "n");
    expectExactly(await scan(store), Array.from({ length: ROWS }, (_, i) => String(i - 50)));
    expect((await store.get("-7"))?.body).toBeDefined();
    expect(Buffer.from((await store.get("24000"))!.body).toString()).toBe('{"n":24000,"doc":{"n":24000}}');
    expect(await store.get(String(ROWS))).toBeUndefined();
  });

  it("a user table with a text id column: the column's own order, and ids no request could name are listed as they are", async () => {
    const url = await postgres.database();
    const db = url.slice(url.lastIndexOf("/") + 1);
    await postgres.pg.sql(
      `CREATE TABLE docs (sku varchar(40) COLLATE "C" PRIMARY KEY, doc jsonb);
       INSERT INTO docs SELECT 'Sku-' || g, jsonb_build_object('n', g) FROM generate_series(1, ${ROWS}) g;
       INSERT INTO docs VALUES ('a b', '{}'), ('ü', '{}'), ('', '{}'), ('Z', '{}'), ('sku-1', '{}');`,
      db,
    );
    const store = await userTable(url, "docs", "sku");
    expectExactly(await scan(store), [...Array.from({ length: ROWS }, (_, i) => `Sku-${i + 1}`), "a b", "ü", "", "Z", "sku-1"]);
    expect(Buffer.from((await store.get("Sku-17"))!.body).toString()).toBe('{"doc":{"n":17},"sku":"Sku-17"}');
    expect(await store.get("Sku-0")).toBeUndefined();
  });

  it("a user table with a uuid id column: lowercase canonical spelling", async () => {
    const url = await postgres.database();
    const db = url.slice(url.lastIndexOf("/") + 1);
    await postgres.pg.sql(`CREATE TABLE things (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), n int); INSERT INTO things (n) SELECT g FROM generate_series(1, ${ROWS}) g`, db);
    const expected = (await postgres.pg.sql(`SELECT id::text FROM things`, db)).split("\n");
    const store = await userTable(url, "things", "id");
    const ids = await scan(store);
    expectExactly(ids, expected);
    expect(ids.every((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id))).toBe(true);
    expect(await store.get(expected[0]!)).toBeDefined();
  });
});
