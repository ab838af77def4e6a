// Serving the user's own table (ITEMS_TABLE): read only, typed ids in their canonical spelling, ETags every
// instance computes alike, changes made by any other writer of the table fed to every instance through the
// trigger `npm run feed:install` installs, and every misconfiguration refused at start naming the variable.
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/shared/config/config-error.ts";
import type { PostgresChangeFeed } from "../../src/origin/feed/postgres-change-feed.ts";
import { startOrigin } from "../../src/origin/start-origin.ts";
import { testConfig, until } from "./harness.ts";
import { feedInstall, startOnPostgres, usePostgres } from "./pg-harness.ts";

const postgres = usePostgres();

async function catalogue(): Promise<{ url: string; db: string }> {
  const url = await postgres.database();
  const db = url.slice(url.lastIndexOf("/") + 1);
  await postgres.pg.sql(
    `CREATE TABLE products (sku text PRIMARY KEY, doc jsonb NOT NULL, revision int NOT NULL DEFAULT 1);
     INSERT INTO products VALUES ('A-1', '{"name": "anvil", "price": 10}', 1), ('B-2', '{"name": "bolt"}', 7);
     CREATE TABLE orders (id bigint PRIMARY KEY, total numeric, status text);
     INSERT INTO orders VALUES (7, 12.50, 'open');`,
    db,
  );
  return { url, db };
}

async function get(url: string): Promise<{ status: number; etag: string | null; body: string }> {
  const res = await fetch(url);
  return { status: res.status, etag: res.headers.get("etag"), body: await res.text() };
}

async function eventually(url: string, body: string | null): Promise<void> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const r = await get(url);
    if (body === null ? r.status === 404 : r.body === body) return;
    if (Date.now() > deadline) throw new Error(`${url} answers ${r.status} ${r.body}, not ${body ?? "404"}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe("serving the user's own table", () => {
  it("reads a JSON column, refuses writes with 405, and every other writer's change reaches every instance", async () => {
    const { url, db } = await catalogue();
    const install = await feedInstall(url, ["--table", "products", "--id-column", "sku"]);
    expect(install).toMatchObject({ code: 0, out: expect.stringMatching(/now reach every origin instance/) });
    const env = { ITEMS_TABLE: "products", ITEMS_ID_COLUMN: "sku", ITEMS_JSON_COLUMN: "doc" };
    const [a, b] = [await startOnPostgres(url, env), await startOnPostgres(url, env)];

    const first = await get(`${a.url}/items/A-1`);
    expect(first).toEqual({ status: 200, etag: expect.stringMatching(/^"[0-9A-Za-z_-]{12}"$/), body: '{"name":"anvil","price":10}' });
    expect((await get(`${b.url}/items/A-1`)).etag).toBe(first.etag); // from the content: the same everywhere
    expect((await get(`${a.url}/items/nope`)).status).toBe(404);

    const write = await fetch(`${a.url}/items/A-1`, { method: "PUT", headers: { "content-type": "application/json" }, body: "{}" });
    expect(write.status).toBe(405);
    expect(write.headers.get("allow")).toBe("GET, HEAD");
    const refusal = ((await write.json()) as { error: string }).error;
    expect(refusal).toBe("items come from a table the origin does not own (ITEMS_TABLE): change them there; PUT and DELETE are refused");
    expect(refusal).not.toContain("postgres://"); // no database address for clients
    // Any other method: 405 naming only what this origin serves here.
    const post = await fetch(`${a.url}/items/A-1`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");

    await postgres.pg.sql(`UPDATE products SET doc = '{"name": "anvil", "price": 12}' WHERE sku = 'A-1'`, db);
    for (const o of [a, b]) await eventually(`${o.url}/items/A-1`, '{"name":"anvil","price":12}');
    await postgres.pg.sql(`INSERT INTO products VALUES ('C-3', '{"name": "cog"}')`, db);
    for (const o of [a, b]) await eventually(`${o.url}/items/C-3`, '{"name":"cog"}');
    await postgres.pg.sql(`DELETE FROM products WHERE sku = 'C-3'`, db);
    for (const o of [a, b]) await eventually(`${o.url}/items/C-3`, null);
    await postgres.pg.sql(`UPDATE products SET sku = 'A-9' WHERE sku = 'A-1'`, db); // the old id goes too
    for (const o of [a, b]) await eventually(`${o.url}/items/A-1`, null);
    await postgres.pg.sql("TRUNCATE products", db);
    for (const o of [a, b]) await eventually(`${o.url}/items/B-2`, null);
  });

  it("/healthz is 503 while the table cannot be read (here: renamed), as every miss is, and 204 once it can", async () => {
    const { url, db } = await catalogue();
    await feedInstall(url, ["--table", "products", "--id-column", "sku"]);
    const origin = await startOnPostgres(url, { ITEMS_TABLE: "products", ITEMS_ID_COLUMN: "sku", ITEMS_JSON_COLUMN: "doc" });
    const healthz = async () => (await fetch(`${origin.url}/healthz`)).status;
    expect(await healthz()).toBe(204);
    await postgres.pg.sql("ALTER TABLE products RENAME TO products_old", db);
    expect([(await get(`${origin.url}/items/B-2`)).status, await healthz()]).toEqual([503, 503]);
    await postgres.pg.sql("ALTER TABLE products_old RENAME TO products", db);
    expect([(await get(`${origin.url}/items/B-2`)).status, await healthz()]).toEqual([200, 204]);

    // The origin's own table too.
    const own = await postgres.database();
    const ownDb = own.slice(own.lastIndexOf("/") + 1);
    const writer = await startOnPostgres(own);
    expect(await (await fetch(`${writer.url}/healthz`)).status).toBe(204);
    await postgres.pg.sql("ALTER TABLE slim_edge_items RENAME TO slim_edge_items_old", ownDb);
    expect((await fetch(`${writer.url}/healthz`)).status).toBe(503);
    await postgres.pg.sql("ALTER TABLE slim_edge_items_old RENAME TO slim_edge_items", ownDb);
    expect((await fetch(`${writer.url}/healthz`)).status).toBe(204);
  });

  it("serves whole rows with integer ids in their canonical spelling, ETags from a version column", async () => {
    const { url, db } = await catalogue();
    await feedInstall(url, ["--table", "public.orders"]);
    const origin = await startOnPostgres(url, { ITEMS_TABLE: "public.orders", ITEMS_VERSION_COLUMN: "total" });
    expect(await get(`${origin.url}/items/7`)).toEqual({ status: 200, etag: expect.stringMatching(/^"[0-9A-Za-z_-]{12}"$/), body: '{"id":7,"total":12.50,"status":"open"}' });
    for (const id of ["07", "-0", "9223372036854775808", "x"]) expect((await get(`${origin.url}/items/${id}`)).status).toBe(404);
    await postgres.pg.sql(`ALTER TABLE orders ADD COLUMN v bigint NOT NULL DEFAULT 1`, db);
    const versioned = await startOnPostgres(url, { ITEMS_TABLE: "orders", ITEMS_VERSION_COLUMN: "v" });
    expect((await get(`${versioned.url}/items/7`)).etag).toBe('"v1"');
  });

  it("after a change to the columns, whole-row bodies change with no change logged: the documented remedies bring them to every instance", async () => {
    const { url, db } = await catalogue();
    await feedInstall(url, ["--table", "orders"]);
    const [a, b] = [await startOnPostgres(url, { ITEMS_TABLE: "orders" }), await startOnPostgres(url, { ITEMS_TABLE: "orders" })];
    const before = await get(`${a.url}/items/7`);
    expect(before.body).toBe('{"id":7,"total":12.50,"status":"open"}');
    expect((await get(`${b.url}/items/7`)).body).toBe(before.body);
    await postgres.pg.sql(`ALTER TABLE orders ADD COLUMN note text NOT NULL DEFAULT 'none'`, db);
    // No row changed as far as a trigger can tell: nothing is logged, and after a poll that began once the
    // column was there the instance still serves the old body.
    const feed = a.feed as PostgresChangeFeed;
    const polls = feed.pollStats.polls;
    await until(() => feed.pollStats.polls >= polls + 2, "two more polls");
    expect(feed.stats.changes).toBe(0);
    expect((await get(`${a.url}/items/7`)).body).toBe(before.body);
    // Remedy without a version column: record "everything changed" by hand; the ETag follows the content.
    await postgres.pg.sql(`INSERT INTO slim_edge_changes (item_id) VALUES ('')`, db);
    for (const o of [a, b]) await eventually(`${o.url}/items/7`, '{"id":7,"note":"none","total":12.50,"status":"open"}'); // jsonb's key order
    expect((await get(`${a.url}/items/7`)).etag).not.toBe(before.etag);

    // With a version column the ETag does not follow the content: bump the versions, which logs every row.
    await postgres.pg.sql(`ALTER TABLE orders ADD COLUMN v bigint NOT NULL DEFAULT 1`, db);
    const versioned = await startOnPostgres(url, { ITEMS_TABLE: "orders", ITEMS_VERSION_COLUMN: "v" });
    expect(await get(`${versioned.url}/items/7`)).toMatchObject({ etag: '"v1"', body: '{"v":1,"id":7,"note":"none","total":12.50,"status":"open"}' });
    await postgres.pg.sql(`ALTER TABLE orders ADD COLUMN region text NOT NULL DEFAULT 'eu'`, db);
    await postgres.pg.sql(`UPDATE orders SET v = v + 1`, db);
    await eventually(`${versioned.url}/items/7`, '{"v":2,"id":7,"note":"none","total":12.50,"region":"eu","status":"open"}');
    expect((await get(`${versioned.url}/items/7`)).etag).toBe('"v2"');
  });

  it("serves the table as a role that does not own it, given the grants --grant-to installs", async () => {
    const { url, db } = await catalogue();
    await postgres.pg.sql("DO $$ BEGIN CREATE ROLE reader LOGIN PASSWORD 'reader-pw'; EXCEPTION WHEN duplicate_object THEN NULL; END $$", db);
    expect(await feedInstall(url, ["--table", "products", "--id-column", "sku", "--grant-to", "reader"])).toMatchObject({ code: 0 });
    const asReader = url.replace("postgres://postgres@", "postgres://reader:reader-pw@");
    const origin = await startOnPostgres(asReader, { ITEMS_TABLE: "products", ITEMS_ID_COLUMN: "sku", ITEMS_JSON_COLUMN: "doc" });
    expect((await get(`${origin.url}/items/B-2`)).body).toBe('{"name":"bolt"}');
    await postgres.pg.sql(`UPDATE products SET doc = '{"name": "bolt", "size": 8}' WHERE sku = 'B-2'`, db);
    await eventually(`${origin.url}/items/B-2`, '{"name":"bolt","size":8}');
    // What the leader does with the log as that role: mark changes purged, prune.
    await postgres.pg.sql("SET ROLE reader; UPDATE slim_edge_changes SET purged = true; DELETE FROM slim_edge_changes WHERE purged; UPDATE slim_edge_feed SET pruned_below = pruned_below; RESET ROLE;", db);
  });

  it("prints the install SQL with --print, and refuses to run without a table or a database", async () => {
    const printed = await feedInstall(undefined, ["--table", "shop.products", "--id-column", "sku", "--print"]);
    expect(printed.code).toBe(0);
    expect(printed.out).toMatch(/CREATE OR REPLACE TRIGGER slim_edge_record_change AFTER INSERT OR UPDATE OR DELETE ON "shop"."products"/);
    expect(await feedInstall(undefined, ["--table", "products"])).toMatchObject({ code: 2, out: expect.stringMatching(/set DATABASE_URL/) });
    expect(await feedInstall("postgres://x@127.0.0.1:1/x", [])).toMatchObject({ code: 2, out: expect.stringMatching(/--table is required/) });
  });

  it.each([
    ["an unknown id column", { ITEMS_TABLE: "products", ITEMS_ID_COLUMN: "code" }, "ITEMS_ID_COLUMN", /has no column 'code'; its columns are sku, doc, revision/],
    ["an unknown JSON column", { ITEMS_TABLE: "products", ITEMS_ID_COLUMN: "sku", ITEMS_JSON_COLUMN: "data" }, "ITEMS_JSON_COLUMN", /has no column 'data'/],
    ["a JSON column that is not JSON", { ITEMS_TABLE: "products", ITEMS_ID_COLUMN: "sku", ITEMS_JSON_COLUMN: "revision" }, "ITEMS_JSON_COLUMN", /revision is integer; use a json, jsonb or text column/],
    ["an unsupported id type", { ITEMS_TABLE: "orders", ITEMS_ID_COLUMN: "total" }, "ITEMS_ID_COLUMN", /total is numeric; item ids must be text, an integer or a uuid/],
    ["a table without the trigger", { ITEMS_TABLE: "products", ITEMS_ID_COLUMN: "sku" }, "ITEMS_TABLE", /no trigger feeds changes of public\.products .* `npm run feed:install -- --table public\.products --id-column sku`/],
  ])("refuses %s at start, naming the variable and the fix", async (_, env, variable, message) => {
    const { url } = await catalogue();
    // The change log is installed (with the trigger on the table, except where its absence is the point).
    await feedInstall(url, variable === "ITEMS_TABLE" ? ["--table", "orders"] : ["--table", env.ITEMS_TABLE, "--id-column", env.ITEMS_ID_COLUMN]);
    const error = await startOrigin({ config: testConfig({ DATABASE_URL: url, ...env }), log: () => {} }).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([{ variable, message: expect.stringMatching(message) }]);
  });

  it("refuses a table whose database has no change log yet, and a view whose table is not fed", async () => {
    const { url, db } = await catalogue();
    const noLog = await startOrigin({ config: testConfig({ DATABASE_URL: url, ITEMS_TABLE: "products", ITEMS_ID_COLUMN: "sku" }), log: () => {} }).catch((e: unknown) => e);
    expect((noLog as ConfigError).problems[0]!.message).toMatch(/the change log \(slim_edge_changes\) is not installed/);
    await feedInstall(url, ["--table", "orders"]);
    await postgres.pg.sql("CREATE VIEW catalogue AS SELECT sku AS id, doc FROM products", db);
    const view = await startOrigin({ config: testConfig({ DATABASE_URL: url, ITEMS_TABLE: "catalogue", ITEMS_JSON_COLUMN: "doc" }), log: () => {} }).catch((e: unknown) => e);
    expect((view as ConfigError).problems[0]!.message).toMatch(/no trigger feeds changes of public\.products \(a table the view public\.catalogue reads\)/);
    await feedInstall(url, ["--table", "products", "--id-column", "sku"]);
    // orders, fed to bring the log, is no table of the view: another deployment, as far as the origin can tell.
    const beside = await startOrigin({ config: testConfig({ DATABASE_URL: url, ITEMS_TABLE: "catalogue", ITEMS_JSON_COLUMN: "doc" }), log: () => {} }).catch((e: unknown) => e);
    expect((beside as ConfigError).problems).toEqual([
      {
        variable: "ITEMS_TABLE",
        message: expect.stringMatching(
          /^the change log also records changes of public\.orders \(a trigger calls slim_edge_record_change there\), which this origin does not serve \(it serves public\.catalogue\).*if it is served no more, drop the triggers: `(DROP TRIGGER slim_edge_record_change ON public\.orders; DROP TRIGGER slim_edge_record_change_truncate ON public\.orders;)`\.$/,
        ),
      },
    ]);
    await postgres.pg.sql(/`(DROP TRIGGER [^`]+)`/.exec((beside as ConfigError).problems[0]!.message)![1]!, db);
    const served = await startOnPostgres(url, { ITEMS_TABLE: "catalogue", ITEMS_JSON_COLUMN: "doc" });
    expect((await get(`${served.url}/items/B-2`)).body).toBe('{"name":"bolt"}');
  });

  it("refuses a second deployment in the database, either way round, before it changes anything; feed:install says what it means", async () => {
    const { url, db } = await catalogue();
    const own = await startOnPostgres(url); // the origin's own table, slim_edge_items, and its triggers
    await own.close();
    const installed = await feedInstall(url, ["--table", "products", "--id-column", "sku"]);
    expect(installed).toMatchObject({
      code: 0,
      out: expect.stringContaining(
        "feed:install: note: the change log also records changes of public.slim_edge_items. That is right if ITEMS_TABLE is a view that reads it and public.products; if it belongs to another deployment, an origin serving either refuses to start (one deployment per database: docs/limits.md).",
      ),
    });
    // A trigger of another name feeding the log counts too, and is named in the fix.
    await postgres.pg.sql(`CREATE TRIGGER "Audit feed" AFTER INSERT ON orders FOR EACH ROW EXECUTE FUNCTION slim_edge_record_change('id')`, db);
    const log = "SELECT count(*) FROM slim_edge_changes";
    const before = await postgres.pg.sql(log, db);
    const products = { ITEMS_TABLE: "products", ITEMS_ID_COLUMN: "sku" };
    const second = await startOrigin({ config: testConfig({ DATABASE_URL: url, ...products }), log: () => {} }).catch((e: unknown) => e);
    expect((second as ConfigError).problems).toEqual([
      {
        variable: "ITEMS_TABLE",
        message: expect.stringMatching(
          /^the change log also records changes of public\.orders, public\.slim_edge_items .*\(it serves public\.products\): another deployment in this database\?.*Give each deployment a database of its own, or serve the tables through one view as ITEMS_TABLE; if they are served no more, drop the triggers: `DROP TRIGGER "Audit feed" ON public\.orders; DROP TRIGGER slim_edge_record_change ON public\.slim_edge_items; DROP TRIGGER slim_edge_record_change_truncate ON public\.slim_edge_items;`\.$/,
        ),
      },
    ]);
    const first = await startOrigin({ config: testConfig({ DATABASE_URL: url }), log: () => {} }).catch((e: unknown) => e);
    expect((first as ConfigError).problems).toEqual([
      { variable: "DATABASE_URL", message: expect.stringMatching(/^the change log also records changes of public\.orders, public\.products .*\(it serves "public"\."slim_edge_items"\)/) },
    ]);
    expect(await postgres.pg.sql(log, db)).toBe(before); // neither logged "everything changed" nor repaired anything
    // The fix the refusal names is the one that works.
    await postgres.pg.sql(/`(DROP TRIGGER [^`]+)`/.exec((second as ConfigError).problems[0]!.message)![1]!, db);
    const served = await startOnPostgres(url, { ...products, ITEMS_JSON_COLUMN: "doc" });
    expect((await get(`${served.url}/items/A-1`)).status).toBe(200);
  });

  it("refuses ITEMS_* with the SQLite store, a column without ITEMS_TABLE, and seeding a table it does not own", () => {
    expect(() => testConfig({ ITEMS_TABLE: "products" })).toThrow(/ITEMS_TABLE: needs PostgreSQL/);
    // ITEMS_ID_COLUMN has a default ("id"): writing it is still a request the SQLite store cannot honour.
    expect(() => testConfig({ ITEMS_ID_COLUMN: "sku" })).toThrow(/ITEMS_ID_COLUMN: needs PostgreSQL/);
    expect(() => testConfig({ ITEMS_ID_COLUMN: " " })).not.toThrow(); // empty means the default, as everywhere
    expect(() => testConfig({ FEED_POLL_MS: "2000" })).toThrow(/FEED_POLL_MS: needs PostgreSQL .*no change log to poll/);
    const orphan = (() => {
      try {
        testConfig({ DATABASE_URL: "postgres://db/x", ITEMS_ID_COLUMN: "sku", ITEMS_JSON_COLUMN: "doc" });
      } catch (error) {
        return (error as ConfigError).problems;
      }
      throw new Error("a column without ITEMS_TABLE was accepted");
    })();
    expect(orphan.map((p) => p.variable)).toEqual(["ITEMS_ID_COLUMN", "ITEMS_JSON_COLUMN"]);
    expect(orphan[0]!.message).toBe("names a column of ITEMS_TABLE, which is not set: set ITEMS_TABLE to the table to serve, or unset ITEMS_ID_COLUMN.");
    expect(() => testConfig({ DATABASE_URL: "postgres://db/x", ITEMS_TABLE: "products", SEED_SAMPLE_ITEMS: "5" })).toThrow(/SEED_SAMPLE_ITEMS: cannot seed a table the origin does not own/);
  });
});
