// A change-log row whose id is not an item id (a user's table may hold any text: `€-legacy` cannot even be a
// cache key) must not keep the other changes of its transaction from the cache, whether NOTIFY or a poll
// brings them, nor make the feed unhealthy. Waits are on what the origin answers, bounded; nothing sleeps.
import { describe, expect, it } from "vitest";
import { PostgresChangeFeed } from "../../src/origin/feed/postgres-change-feed.ts";
import { preparePostgres } from "../../src/origin/store/postgres/prepare.ts";
import { registerCleanup } from "./harness.ts";
import { feedInstall, startOnPostgres, usePostgres } from "./pg-harness.ts";

const postgres = usePostgres();

async function body(url: string): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  return `${res.status} ${await res.text()}`;
}

/** Resolves once `url` answers `expected`; fails after 10 s (a liveness bound, not a timing claim). */
async function answersEventually(url: string, expected: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const got = await body(url);
    if (got === expected) return;
    if (Date.now() > deadline) throw new Error(`${url} still answers ${JSON.stringify(got)}, not ${JSON.stringify(expected)}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("change feed and ids that are not item ids", () => {
  it("invalidates the valid ids of a transaction that also changed a non-item id, by NOTIFY and by a poll", async () => {
    const { pg } = postgres;
    const db = "items_" + process.pid + "_not_item_ids";
    const url = await pg.createDatabase(db);
    const lines: string[] = [];
    const origin = await startOnPostgres(url, { FEED_POLL_MS: "20", FEED_STALE_BOUND_MS: "5000" }, { log: (line) => lines.push(line) });
    const feed = origin.feed as PostgresChangeFeed;
    expect(feed).toBeInstanceOf(PostgresChangeFeed);
    await pg.sql(`INSERT INTO slim_edge_items VALUES ('ok', 1, 'Zz', '{"v":0}')`, db);
    await answersEventually(`${origin.url}/items/ok`, '200 {"v":0}');
    expect(origin.cache.get("ok")).toBeDefined(); // so only the feed can make the next answer new

    // NOTIFY path (the polls read the same rows and find them applied). The trigger records item ids only;
    // a non-item id's row and NOTIFY are made by hand, as another writer or an earlier version would.
    await pg.sql(
      `BEGIN;
       INSERT INTO slim_edge_items VALUES ('€-legacy', 1, 'Zz', '{}');
       WITH c AS (INSERT INTO slim_edge_changes (item_id) VALUES ('€-by-hand') RETURNING seq, xid)
         SELECT pg_notify('slim_edge_changes', c.seq || ':' || c.xid || ':€-by-hand') FROM c;
       UPDATE slim_edge_items SET version = 2, body = '{"v":1}' WHERE id = 'ok';
       INSERT INTO slim_edge_items VALUES ('has space', 1, 'Zz', '{}');
       COMMIT;`,
      db,
    );
    await answersEventually(`${origin.url}/items/ok`, '200 {"v":1}');

    // Poll path: the same kind of transaction with its NOTIFYs lost (the trigger off, its rows logged by hand,
    // as a listener that was away would have missed them): a poll brings it. (The trigger check, every 5 s
    // here, also notices the trigger was turned off and on, and may drop the cache too.)
    expect(origin.cache.get("ok")).toBeDefined();
    const read = feed.pollStats.rowsRead;
    await pg.sql(
      `BEGIN;
       ALTER TABLE slim_edge_items DISABLE TRIGGER slim_edge_record_change;
       UPDATE slim_edge_items SET version = 3, body = '{"v":2}' WHERE id = 'ok';
       ALTER TABLE slim_edge_items ENABLE ALWAYS TRIGGER slim_edge_record_change;
       INSERT INTO slim_edge_changes (item_id) VALUES ('€-legacy-2'), ('ok'), ('${"x".repeat(200)}');
       COMMIT;`,
      db,
    );
    await answersEventually(`${origin.url}/items/ok`, '200 {"v":2}');
    expect(feed.pollStats.rowsRead - read).toBeGreaterThanOrEqual(3);

    expect(feed.healthy).toBe(true);
    expect(feed.stats).toMatchObject({ pollFailures: 0 });
    // The trigger records item ids only: the non-item ids ignored are the three logged by hand.
    expect(feed.stats.ignored).toBe(3);
    expect(await pg.sql("SELECT count(*) FROM slim_edge_changes WHERE item_id IN ('€-legacy', 'has space')", db)).toBe("0");
    expect(feed.pollStats).toMatchObject({ handlerFailures: 0 });
    expect(lines.filter((l) => l.includes("not item ids"))).toHaveLength(1); // said once, not per change
    expect(lines.join("\n")).not.toMatch(/cannot poll|failed/);
    // The only cache drops are the trigger check's, never the non-item ids'.
    expect(lines.filter((l) => l.includes("dropping every cached item") && !l.includes("triggers that log changes were altered"))).toEqual([]);
    expect(await body(`${origin.url}/healthz`)).toMatch(/^204/);
  });

  it("a user's table may hold ids of any length: only item ids are recorded, so NOTIFY's 8,000-byte limit never fails a writer", async () => {
    const { pg } = postgres;
    const url = await postgres.database();
    const db = url.slice(url.lastIndexOf("/") + 1);
    await pg.sql("CREATE TABLE products (sku text PRIMARY KEY, doc jsonb NOT NULL)", db);
    expect((await feedInstall(url, ["--table", "products", "--id-column", "sku"])).code).toBe(0);
    await pg.sql(
      `INSERT INTO products VALUES (repeat('a', 9000), '{}'), ('A-1', '{"n": 1}');
       UPDATE products SET doc = '{"n": 2}' WHERE sku = repeat('a', 9000);
       UPDATE products SET sku = 'A-2' WHERE sku = repeat('a', 9000);
       DELETE FROM products WHERE sku = 'A-2';`,
      db,
    );
    // The id change logs the new id alone (the old one no request could name), and the delete logs it again.
    expect(await pg.sql("SELECT string_agg(item_id, ',' ORDER BY seq) FROM slim_edge_changes", db)).toBe("A-1,A-2,A-2");
  });

  it("a handler that throws for one change is logged with its id, and the others of its batch are still delivered", async () => {
    const { pg } = postgres;
    const db = "items_" + process.pid + "_throwing_handler";
    const url = await pg.createDatabase(db);
    const options = { url, display: url, poolSize: 2, timeoutMs: 10_000, applicationName: "throwing-handler-test" };
    await preparePostgres(options, undefined);
    const delivered: string[] = [];
    const resets: string[] = [];
    const lines: string[] = [];
    const feed = new PostgresChangeFeed({ ...options, pollMs: 20, staleBoundMs: 60_000, log: (line) => lines.push(line) });
    registerCleanup(() => feed.close());
    await feed.start({
      changed: (id) => {
        if (id.startsWith("boom")) throw new Error("handler broke");
        delivered.push(id);
      },
      lostTrack: (reason) => resets.push(reason),
    });
    const until = async (condition: () => boolean, what: string) => {
      const deadline = Date.now() + 10_000;
      while (!condition()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify({ delivered, resets, lines })}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    };
    // Poll path (NOTIFY lost): one batch, the failing change in the middle.
    await pg.sql(
      `BEGIN; SET LOCAL session_replication_role = replica;
       INSERT INTO slim_edge_changes (item_id) VALUES ('a'), ('boom1'), ('b'); COMMIT;`,
      db,
    );
    await until(() => delivered.includes("b"), "b");
    // NOTIFY path.
    await pg.sql(`BEGIN; INSERT INTO slim_edge_items VALUES ('boom2', 1, 'Zz', '{}'), ('c', 1, 'Zz', '{}'); COMMIT;`, db);
    await until(() => delivered.includes("c"), "c");
    expect(delivered).toEqual(["a", "b", "c"]);
    // Whatever the failed handler left undone, everything cached is dropped (once per failed change).
    expect(resets).toEqual([expect.stringContaining('"boom1"'), expect.stringContaining('"boom2"')]);
    expect(lines.filter((l) => l.includes("failed (handler broke)"))).toEqual([expect.stringContaining('"boom1"'), expect.stringContaining('"boom2"')]);
    expect(feed.pollStats.handlerFailures).toBe(2);
    expect(feed.stats).toMatchObject({ pollFailures: 0, resets: 2 });
    expect(feed.healthy).toBe(true);
  });
});
