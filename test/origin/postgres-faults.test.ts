// PostgreSQL faults, each with a clear answer and nothing lost: the server stopped (cached reads keep
// answering, misses and writes 503 within the bound and the log says why, recovery without a restart of the
// origin), a slow server (store calls time out), and configurations refused at start naming the variable.
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/shared/config/config-error.ts";
import { startOrigin } from "../../src/origin/start-origin.ts";
import postgresClient from "postgres";
import type { PostgresChangeFeed } from "../../src/origin/feed/postgres-change-feed.ts";
import { openPool } from "../../src/origin/store/postgres/connection.ts";
import { testConfig } from "./harness.ts";
import { startOnPostgres, usePostgres } from "./pg-harness.ts";

const postgres = usePostgres();

async function request(url: string, init: RequestInit = {}): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: await res.text() };
}

const put = (url: string, body: string) => request(url, { method: "PUT", headers: { "content-type": "application/json" }, body });

describe("PostgreSQL faults", () => {
  it("a connection whose first query fails as it starts (terminated, cancelled) fails that call, never the process", async () => {
    // statement_timeout 1 ms cancels whatever a new connection runs first: in postgres 3.4.9 that was its own
    // array-types query, whose dropped promise became an unhandled rejection (porsager/postgres#1192), as a
    // pg_terminate_backend at that moment did.
    const rejections: unknown[] = [];
    const record = (reason: unknown) => rejections.push(reason);
    process.on("unhandledRejection", record);
    try {
      const url = await postgres.database();
      for (let i = 0; i < 5; i++) {
        const sql = openPool({ url, poolSize: 1, timeoutMs: 1, applicationName: "slim-edge-test" });
        await sql`SELECT pg_sleep(0.01)`.catch(() => undefined);
        await sql.end();
      }
      await new Promise((resolve) => setImmediate(resolve));
      expect(rejections).toEqual([]);
    } finally {
      process.off("unhandledRejection", record);
    }
  });

  it("a check of the change log's setup whose connection is terminated mid-check fails that check, never the process", async () => {
    const url = await postgres.database();
    const origin = await startOnPostgres(url, { FEED_STALE_BOUND_MS: "1000" });
    const feed = origin.feed as PostgresChangeFeed;
    const admin = postgresClient(url, { max: 1, fetch_types: false, onnotice: () => {} });
    try {
      // The check reads the feed row; held behind this lock, it waits inside whatever it runs in. postgres 3.4.9
      // answered a transaction killed there with a ROLLBACK written to the closed socket: an uncaught TypeError.
      await admin.begin(async (tx) => {
        await tx`LOCK TABLE slim_edge_feed IN ACCESS EXCLUSIVE MODE`;
        const deadline = Date.now() + 15_000;
        let killed = 0;
        while (killed === 0) {
          // pg_stat_activity is read once per transaction unless its snapshot is cleared.
          await tx`SELECT pg_stat_clear_snapshot()`;
          if (Date.now() > deadline) throw new Error(`the check never waited on the feed row: ${JSON.stringify(await tx`SELECT application_name, wait_event_type, state, query FROM pg_stat_activity WHERE pid <> pg_backend_pid()`)}`);
          const rows = await tx`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE pid <> pg_backend_pid() AND wait_event_type = 'Lock' AND application_name LIKE 'slim-edge%'
              AND query LIKE 'SELECT 1 FROM %slim_edge_feed%'`;
          killed = rows.length;
        }
      });
      const before = feed.pollStats.rechecks;
      const deadline = Date.now() + 15_000;
      while (feed.pollStats.rechecks === before) {
        if (Date.now() > deadline) throw new Error("no check completed after the terminated one");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect((await put(`${origin.url}/items/after`, '{"v":1}')).status).toBe(204);
      expect(await request(`${origin.url}/items/after`)).toEqual({ status: 200, body: '{"v":1}' });
    } finally {
      await admin.end();
    }
  });

  it("stopped: cached reads answer, misses and writes get 503 with the reason logged, and it recovers by itself", async () => {
    const { pg } = postgres;
    const lines: string[] = [];
    const origin = await startOnPostgres(await postgres.database(), { STORE_TIMEOUT_MS: "500", FEED_POLL_MS: "50", FEED_STALE_BOUND_MS: "200" }, { log: (l) => lines.push(l) });
    expect((await put(`${origin.url}/items/kept`, '{"v":1}')).status).toBe(204);
    expect(await request(`${origin.url}/items/kept`)).toEqual({ status: 200, body: '{"v":1}' });

    await pg.stop();
    // Cached: answered, also once the feed has noticed (an entry older than the bound is confirmed with a
    // store that cannot answer, then served as it is).
    const staleServed = async () => Number((await origin.metrics.registry.getSingleMetricAsString("origin_stale_served_total")).trim().split(" ").pop());
    const deadline = Date.now() + 10_000;
    while ((await staleServed()) < 3) {
      expect(await request(`${origin.url}/items/kept`)).toEqual({ status: 200, body: '{"v":1}' });
      if (Date.now() > deadline) throw new Error("the feed never reported itself down, or stale entries were not served");
    }
    expect(origin.feed.healthy).toBe(false);
    const missing = await request(`${origin.url}/items/never-cached`);
    expect(missing.status).toBe(503);
    expect(JSON.parse(missing.body)).toEqual({ error: "store unavailable (logged at the origin); try again" });
    expect((await put(`${origin.url}/items/kept`, '{"v":2}')).status).toBe(503);
    expect((await request(`${origin.url}/healthz`)).status).toBe(503);
    expect(lines.join("\n")).toMatch(/store unavailable, answering misses 503 and serving what is cached: PostgreSQL is unavailable/);
    expect(lines.join("\n")).toMatch(/change feed: cannot poll the change log/);

    await pg.start();
    const recovery = Date.now() + 20_000;
    while ((await put(`${origin.url}/items/kept`, '{"v":3}')).status !== 204) {
      if (Date.now() > recovery) throw new Error("writes did not recover");
    }
    expect(await request(`${origin.url}/items/kept`)).toEqual({ status: 200, body: '{"v":3}' });
    expect((await request(`${origin.url}/items/never-cached`)).status).toBe(404);
    expect((await request(`${origin.url}/healthz`)).status).toBe(204);
    // A read the store must answer: the reads above may all have been answered by the cache and the
    // membership filter, depending on when the feed came back.
    origin.cache.delete("kept");
    expect(await request(`${origin.url}/items/kept`)).toEqual({ status: 200, body: '{"v":3}' });
    expect(lines.join("\n")).toMatch(/store answering again/);
  });

  it("a store call slower than STORE_TIMEOUT_MS is answered 503, and the item is served once it answers again", async () => {
    const { pg } = postgres;
    const url = await postgres.database();
    const origin = await startOnPostgres(url, { STORE_TIMEOUT_MS: "200" });
    expect((await put(`${origin.url}/items/slow`, '{"v":1}')).status).toBe(204);
    origin.cache.clear();
    // Hold the row: the read waits on the lock until the statement timeout cancels it.
    const holder = pg.sql("BEGIN; LOCK TABLE slim_edge_items IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(2); COMMIT;", url.slice(url.lastIndexOf("/") + 1));
    await new Promise<void>((resolve, reject) => {
      const check = () =>
        pg.sql("SELECT count(*) FROM pg_locks WHERE mode = 'AccessExclusiveLock' AND relation = 'slim_edge_items'::regclass", url.slice(url.lastIndexOf("/") + 1)).then(
          (n) => (n === "1" ? resolve() : setImmediate(check)),
          reject,
        );
      check();
    });
    expect((await request(`${origin.url}/items/slow`)).status).toBe(503);
    await holder;
    expect(await request(`${origin.url}/items/slow`)).toEqual({ status: 200, body: '{"v":1}' });
  });

  // An unreachable server is not a refusal but a StoreUnavailableError (retried): postgres-setup-start.test.ts.
  it.each([
    ["a database that does not exist", () => postgres.pg.urlFor("no_such_db"), {}, "DATABASE_URL", /does not exist .* create it/],
    ["an unknown table", () => postgres.pg.urlFor("postgres"), { ITEMS_TABLE: "public.nope" }, "ITEMS_TABLE", /no table or view 'public.nope'/],
  ])("refuses %s at start, naming the variable", async (_, url, env, variable, message) => {
    const error = await startOrigin({ config: testConfig({ DATABASE_URL: url(), ...env }), log: () => {} }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    const [problem] = (error as ConfigError).problems;
    expect(problem!.variable).toBe(variable);
    expect(problem!.message).toMatch(message);
  });
});
