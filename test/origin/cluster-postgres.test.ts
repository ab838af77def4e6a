// ORIGIN_PROCESSES=3 on a throwaway PostgreSQL, as real processes: no relay (each worker follows the
// database's change feed itself, so a change made outside the origin reaches every worker too), and a
// configuration PostgreSQL refuses at start ends the start once with exit 2.
import { describe, expect, it } from "vitest";
import { connectionsByWorker, eventually, listening, scrape, spawnOrigin } from "./cluster-harness.ts";
import { get, registerCleanup, withBody } from "./harness.ts";
import { usePostgres } from "./pg-harness.ts";

const postgres = usePostgres();
const TIMEOUT = { timeout: 30_000 };

describe("ORIGIN_PROCESSES=3 on PostgreSQL", () => {
  it("every worker follows the change feed: a write through one, and a change outside the origin, reach all", TIMEOUT, async () => {
    const url = await postgres.database();
    const p = spawnOrigin({ ORIGIN_PROCESSES: "3", DATABASE_URL: url, FEED_POLL_MS: "100" }, ["--seed=3"]);
    registerCleanup(() => p.kill());
    const { line, port, metricsPort } = await listening(p);
    expect(line).toMatch(/\(3 processes; 3 items in .*; no token check; metrics http:\/\/127\.0\.0\.1:\d+\/metrics\)$/); // no relay
    const byWorker = await connectionsByWorker(port, metricsPort!, 3);
    expect([...byWorker.keys()].sort()).toEqual(["1", "2", "3"]);
    const on = (worker: string) => byWorker.get(worker)![0]!;

    const put = await on("1").send(withBody("PUT", "/items/1", '{"v":2}'));
    expect(put.status).toBe(204);
    expect((await on("1").send(get("/items/1"))).header("etag")).toBe(put.header("etag")); // the writer, at once
    for (const worker of ["2", "3"]) {
      await eventually(`worker ${worker} serving the write`, async () => {
        const r = await on(worker).send(get("/items/1"));
        return r.header("etag") === put.header("etag") ? r : undefined;
      });
    }

    // A writer the primary knows nothing about: only the database's feed can tell the workers.
    const database = url.slice(url.lastIndexOf("/") + 1);
    await postgres.pg.sql(`UPDATE slim_edge_items SET body = convert_to('{"outside":true}', 'UTF8'), version = version + 1 WHERE id = '2'`, database);
    for (const worker of ["1", "2", "3"]) {
      await eventually(`worker ${worker} serving the outside change`, async () => {
        const r = await on(worker).send(get("/items/2"));
        return r.body.toString() === '{"outside":true}' ? r : undefined;
      });
    }
    const page = await scrape(metricsPort!);
    expect(page.value("origin_feed_healthy")).toBe(1);
    expect(page.value("origin_feed_listens_total")).toBeGreaterThanOrEqual(3); // a listener per worker
    expect((await fetch(`http://127.0.0.1:${metricsPort}/healthz`)).status).toBe(204);
  });

  it("a configuration PostgreSQL refuses at start ends the start once: exit 2", TIMEOUT, async () => {
    const p = spawnOrigin({ ORIGIN_PROCESSES: "3", DATABASE_URL: postgres.pg.urlFor("postgres"), ITEMS_TABLE: "public.nope" });
    registerCleanup(() => p.kill());
    expect(await p.exited).toEqual({ code: 2, signal: null });
    expect(p.stderr().match(/ITEMS_TABLE: .*no table or view 'public\.nope'/g)).toHaveLength(1);
    expect(p.stderr()).toMatch(/worker 1 of 3 stopped \(exit code 2\) before it was ready; not retrying/);
    expect(p.stdout()).not.toContain("listening on");
  });
});
