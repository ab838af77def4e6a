// The feed table's one row is what every poll of the change log is joined to. Deleted (by hand, a restore
// gone wrong), the feed says so instead of polling nothing in silence, and put back it follows changes
// again, dropping what it may have missed meanwhile: the row's new feed id tells it the log is not the one
// it was following.
import postgresClient from "postgres";
import { describe, expect, it } from "vitest";
import { PostgresChangeFeed } from "../../src/origin/feed/postgres-change-feed.ts";
import { preparePostgres } from "../../src/origin/store/postgres/prepare.ts";
import { registerCleanup } from "./harness.ts";
import { usePostgres } from "./pg-harness.ts";

const postgres = usePostgres();

/** Waits for `condition`, checking every few milliseconds; fails after 20 s (a liveness bound, not a timing claim). */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("change feed whose feed row was deleted", () => {
  it("logs what is wrong and how to fix it, and once the row is back drops what it may have missed and follows changes again", async () => {
    const url = await postgres.database();
    const options = { url, display: url, poolSize: 2, timeoutMs: 10_000, applicationName: "lost-row-test" };
    await preparePostgres(options, undefined);
    const sql = postgresClient(url, { max: 1, onnotice: () => {} });
    registerCleanup(() => sql.end({ timeout: 2 }));

    const lines: string[] = [];
    const changed: string[] = [];
    const lost: string[] = [];
    const feed = new PostgresChangeFeed({ ...options, pollMs: 10, staleBoundMs: 60_000, log: (line) => lines.push(line) });
    registerCleanup(() => feed.close());
    await feed.start({ changed: (id) => changed.push(id), lostTrack: (reason) => lost.push(reason) });
    await until(() => feed.pollStats.polls > 0, "a first poll");

    await sql`DELETE FROM slim_edge_feed`;
    await until(() => feed.stats.pollFailures > 0, "a failed poll");
    expect(lines.filter((l) => l.includes("cannot poll the change log"))).toEqual([
      expect.stringMatching(/slim_edge_feed has lost its row; an origin serving its own table puts it back within seconds, else run INSERT INTO slim_edge_feed DEFAULT VALUES \(or npm run feed:install\) as the change log's owner/),
    ]);
    expect(lost).toEqual([]);

    await sql`INSERT INTO slim_edge_feed DEFAULT VALUES`;
    await until(() => lost.length > 0, "the feed to drop what it may have missed");
    expect(lines).toContain("origin: change feed: polling the change log again");

    await sql`INSERT INTO slim_edge_items (id, version, epoch, body) VALUES ('after', 1, 'Zz', '{}')`;
    await until(() => changed.includes("after"), "the change made after the row came back");
    expect(feed.healthy).toBe(true);
  });
});
