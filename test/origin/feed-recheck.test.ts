// What feeds the change log is checked again while the origin runs, not only at start: a trigger dropped (a
// migration, a bulk load that forgot to put it back) would otherwise leave every other instance, and the
// edge, serving what they hold until it expires, with nothing logged. The origin's own table gets its trigger
// back at once; a user's table is reported with its fix and the feed distrusted (cached items older than
// the staleness bound are read again) until feed:install is run again. Either way every cached item is
// dropped once changes reach the log again: those made meanwhile were never logged.
import { describe, expect, it } from "vitest";
import { EVERYTHING_CHANGED } from "../../src/origin/feed/change-log-cursor.ts";
import { PostgresChangeFeed } from "../../src/origin/feed/postgres-change-feed.ts";
import { preparePostgres } from "../../src/origin/store/postgres/prepare.ts";
import { registerCleanup, until } from "./harness.ts";
import { feedInstall, startOnPostgres, usePostgres } from "./pg-harness.ts";

const postgres = usePostgres();
const FAST = { FEED_POLL_MS: "20", FEED_STALE_BOUND_MS: "200" };

const body = async (url: string) => (await fetch(url)).text();
const triggers = (db: string, table: string) => postgres.pg.sql(`SELECT count(*) FROM pg_trigger WHERE tgrelid = '${table}'::regclass AND NOT tgisinternal`, db);

/** Two instances on a new database, `k` written through one and served by the other (which logs to `lines`). */
async function twoServingK() {
  const url = await postgres.database();
  const db = url.slice(url.lastIndexOf("/") + 1);
  const lines: string[] = [];
  const [a, b] = [await startOnPostgres(url, FAST), await startOnPostgres(url, FAST, { log: (l) => lines.push(l) })];
  expect((await fetch(`${a.url}/items/k`, { method: "PUT", headers: { "content-type": "application/json" }, body: '{"v":1}' })).status).toBe(204);
  await until(async () => (await body(`${b.url}/items/k`)) === '{"v":1}', "b to serve the first write");
  return { db, a, b, lines };
}

describe("what feeds the change log, checked while the origin runs", () => {
  it("the origin's own table: a dropped trigger is created again, and a change made meanwhile reaches every instance", async () => {
    const { db, a, b, lines } = await twoServingK();

    // A change no trigger logs: made in the transaction that drops it.
    await postgres.pg.sql(
      `BEGIN; DROP TRIGGER slim_edge_record_change ON slim_edge_items;
       UPDATE slim_edge_items SET version = version + 1, body = convert_to('{"v":2}', 'UTF8') WHERE id = 'k'; COMMIT;`,
      db,
    );
    await until(async () => (await body(`${b.url}/items/k`)) === '{"v":2}', "b to serve the change made while the trigger was gone");
    // Whichever instance put it back logged "everything changed": both dropped what they held.
    expect(lines).toContain(`origin: change feed: ${EVERYTHING_CHANGED}; dropping every cached item`);
    expect(await triggers(db, "slim_edge_items")).toBe("2");
    expect((await fetch(`${a.url}/items/k`, { method: "PUT", headers: { "content-type": "application/json" }, body: '{"v":3}' })).status).toBe(204);
    await until(async () => (await body(`${b.url}/items/k`)) === '{"v":3}', "b to serve a write made after the repair");
  });

  it("a trigger disabled and enabled again inside one transaction (pg_restore --disable-triggers): what it let through reaches every instance", async () => {
    const { db, a, b, lines } = await twoServingK();

    // The catalog ends as it began, enabled: only the trigger rows' versions say that anything happened.
    await postgres.pg.sql(
      `BEGIN; ALTER TABLE slim_edge_items DISABLE TRIGGER USER;
       UPDATE slim_edge_items SET version = version + 1, body = convert_to('{"v":2}', 'UTF8') WHERE id = 'k';
       ALTER TABLE slim_edge_items ENABLE ALWAYS TRIGGER slim_edge_record_change, ENABLE ALWAYS TRIGGER slim_edge_record_change_truncate; COMMIT;`,
      db,
    );
    await until(async () => (await body(`${b.url}/items/k`)) === '{"v":2}', "b to serve the change the disabled trigger let through");
    expect(lines).toContainEqual(expect.stringMatching(/^origin: change feed: the triggers that log changes were altered since the last check .*; dropping every cached item$/));
    expect(await postgres.pg.sql("SELECT count(*) FROM slim_edge_changes WHERE item_id = 'k'", db)).toBe("1"); // the PUT's alone
  });

  it("the origin's own table as a role that may not re-create its triggers: reported naming who may, distrusted until an origin started as that role puts them back", async () => {
    const url = await postgres.database();
    const db = url.slice(url.lastIndexOf("/") + 1);
    await (await startOnPostgres(url)).close(); // the schema, created by its owner
    await postgres.pg.sql(
      `DO $$ BEGIN CREATE ROLE recheck_app LOGIN PASSWORD 'recheck_app-pw'; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
       GRANT SELECT, INSERT, UPDATE ON slim_edge_items TO recheck_app; GRANT SELECT, UPDATE, DELETE ON slim_edge_changes TO recheck_app;
       GRANT SELECT, UPDATE ON slim_edge_feed TO recheck_app;`,
      db,
    );
    const lines: string[] = [];
    const app = await startOnPostgres(url.replace("postgres://postgres@", "postgres://recheck_app:recheck_app-pw@"), FAST, { log: (l) => lines.push(l) });
    await postgres.pg.sql("DROP TRIGGER slim_edge_record_change ON slim_edge_items", db);
    await until(() => !app.feed.healthy, "the missing trigger to be reported");
    expect(lines).toContainEqual(
      expect.stringMatching(/^origin: change feed: changes no longer reach the change log \(missing the triggers on .*slim_edge_items.*, so changes are not logged, and role recheck_app may not create them: start an origin once as postgres, which creates what is missing\)/),
    );
    expect(await triggers(db, "slim_edge_items")).toBe("1"); // only the TRUNCATE trigger: nothing was attempted

    // What the refusal says: an origin started as the table's owner puts the trigger back (logging that
    // everything changed), and the running one trusts its feed again.
    const owner = await startOnPostgres(url, FAST);
    expect(await triggers(db, "slim_edge_items")).toBe("2");
    await until(() => app.feed.healthy, "the feed to be trusted again");
    expect(lines).toContain("origin: change feed: changes reach the change log again");
    expect(await postgres.pg.sql("SELECT count(*) FROM slim_edge_changes WHERE item_id = ''", db)).toBe("1");
    await owner.close();
  });

  it("is left alone while running: an older trigger function (another version deploying beside this one), and a renamed items table (reported, not created empty)", async () => {
    const url = await postgres.database();
    const db = url.slice(url.lastIndexOf("/") + 1);
    const lines: string[] = [];
    const origin = await startOnPostgres(url, FAST, { log: (l) => lines.push(l) });
    const stats = (origin.feed as PostgresChangeFeed).pollStats;
    const twoChecks = async () => {
      const from = stats.rechecks;
      await until(() => stats.rechecks >= from + 2, "two more checks", 15_000);
    };
    await postgres.pg.sql(
      `CREATE OR REPLACE FUNCTION public.slim_edge_record_change() RETURNS trigger LANGUAGE plpgsql
         SECURITY DEFINER SET search_path FROM CURRENT AS $f$ BEGIN INSERT INTO public.slim_edge_changes (item_id) VALUES ('x'); RETURN NULL; END $f$`,
      db,
    );
    const proconfig = "SELECT array_to_string(proconfig, ';') FROM pg_proc WHERE proname = 'slim_edge_record_change'";
    const older = await postgres.pg.sql(proconfig, db);
    await twoChecks();
    expect(await postgres.pg.sql(proconfig, db)).toBe(older);
    expect(origin.feed.healthy).toBe(true);

    await postgres.pg.sql("ALTER TABLE slim_edge_items RENAME TO slim_edge_items_moved", db);
    await until(() => !origin.feed.healthy, "the renamed table to be reported");
    expect(lines).toContainEqual(expect.stringMatching(/changes no longer reach the change log \(missing the items table .*slim_edge_items.*, so changes are not logged: put back what was moved or renamed, or start an origin/));
    await twoChecks();
    expect(await postgres.pg.sql("SELECT to_regclass('slim_edge_items') IS NULL", db)).toBe("t");
    await postgres.pg.sql("ALTER TABLE slim_edge_items_moved RENAME TO slim_edge_items", db);
    await until(() => origin.feed.healthy, "the feed to be trusted again");
    expect(lines.filter((l) => l.includes(EVERYTHING_CHANGED))).toEqual([]);
  });

  it("a user's table: a dropped trigger is reported with its fix, cached items are read again, and once feed:install has run every change arrives again", async () => {
    const url = await postgres.database();
    const db = url.slice(url.lastIndexOf("/") + 1);
    await postgres.pg.sql(`CREATE TABLE products (sku text PRIMARY KEY, doc jsonb NOT NULL); INSERT INTO products VALUES ('A-1', '{"n": 1}');`, db);
    const install = async () => (await feedInstall(url, ["--table", "products", "--id-column", "sku"])).code;
    expect(await install()).toBe(0);
    const lines: string[] = [];
    const origin = await startOnPostgres(url, { ...FAST, ITEMS_TABLE: "products", ITEMS_ID_COLUMN: "sku", ITEMS_JSON_COLUMN: "doc" }, { log: (l) => lines.push(l) });
    const item = `${origin.url}/items/A-1`;
    expect(await body(item)).toBe('{"n":1}');

    await postgres.pg.sql(`BEGIN; DROP TRIGGER slim_edge_record_change ON products; UPDATE products SET doc = '{"n": 2}'; COMMIT;`, db);
    await until(() => lines.some((l) => l.includes("changes no longer reach the change log")), "the missing trigger to be reported");
    expect(lines.find((l) => l.includes("changes no longer reach the change log"))).toMatch(
      /^origin: change feed: changes no longer reach the change log \(ITEMS_TABLE: no trigger feeds changes of public\.products .*`npm run feed:install -- --table public\.products --id-column sku`.*\); cached items older than 200 ms are re-read until it is fixed$/,
    );
    expect(origin.feed.healthy).toBe(false);
    await until(async () => (await body(item)) === '{"n":2}', "the cached item to be read again");

    expect(await install()).toBe(0);
    await until(() => origin.feed.healthy, "the feed to be trusted again");
    expect(lines).toContain("origin: change feed: changes reach the change log again");
    expect(lines).toContain("origin: change feed: changes made while they did not were never logged; dropping every cached item");
    await postgres.pg.sql(`UPDATE products SET doc = '{"n": 3}'`, db);
    await until(async () => (await body(item)) === '{"n":3}', "a change made after feed:install to arrive");
  });

  it("a partition created or attached under a served table is no change to what logs: nothing cached is dropped", async () => {
    const url = await postgres.database();
    const db = url.slice(url.lastIndexOf("/") + 1);
    await postgres.pg.sql(
      `CREATE TABLE events (sku text NOT NULL, day int NOT NULL, doc jsonb NOT NULL, PRIMARY KEY (sku, day)) PARTITION BY RANGE (day);
       CREATE TABLE events_1 PARTITION OF events FOR VALUES FROM (1) TO (2); INSERT INTO events VALUES ('A-1', 1, '{"n": 1}');`,
      db,
    );
    expect((await feedInstall(url, ["--table", "events", "--id-column", "sku"])).code).toBe(0);
    const lines: string[] = [];
    const origin = await startOnPostgres(url, { ...FAST, ITEMS_TABLE: "events", ITEMS_ID_COLUMN: "sku", ITEMS_JSON_COLUMN: "doc" }, { log: (l) => lines.push(l) });
    const stats = (origin.feed as PostgresChangeFeed).pollStats;
    expect(await body(`${origin.url}/items/A-1`)).toBe('{"n":1}');

    // Each brings the parent's trigger to the partition as a copy of its own (a new pg_trigger row).
    await postgres.pg.sql(
      `CREATE TABLE events_2 PARTITION OF events FOR VALUES FROM (2) TO (3);
       CREATE TABLE events_3 (LIKE events); ALTER TABLE events ATTACH PARTITION events_3 FOR VALUES FROM (3) TO (4);`,
      db,
    );
    const from = stats.rechecks;
    await until(() => stats.rechecks >= from + 2, "two more checks", 15_000);
    expect(lines.filter((l) => l.includes("dropping every cached item") || l.includes("no longer reach the change log"))).toEqual([]);
    expect(origin.feed.healthy).toBe(true);
    expect(origin.cache.get("A-1")).toBeDefined();
  });

  it("a setup problem its first check finds is reported as such, and the feed starts distrusted (not as a failed poll)", async () => {
    const url = await postgres.database();
    const options = { url, display: url, poolSize: 2, timeoutMs: 10_000, applicationName: "first-check-test" };
    await preparePostgres(options, undefined);
    const lines: string[] = [];
    const problem = "missing the triggers on slim_edge_items (a test's)";
    const feed = new PostgresChangeFeed({ ...options, pollMs: 10, staleBoundMs: 60_000, log: (line) => lines.push(line), recheck: async () => ({ problem }) });
    registerCleanup(() => feed.close());
    await feed.start({ changed: () => {}, lostTrack: () => {} });
    expect(feed.healthy).toBe(false);
    expect(lines).toEqual([expect.stringContaining(`changes no longer reach the change log (${problem})`)]);
  });
});
