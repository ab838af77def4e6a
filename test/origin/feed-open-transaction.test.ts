// A transaction left open anywhere on the server (here: in another database; xids are cluster-wide) holds
// every snapshot's xmin back. The feed's polls must not pay for it: each committed change-log row is read by
// one poll, however many are logged while it stays open, and what the cursor remembers stays small. And no
// change is missed: one committed by a transaction that started before the open one, or while it was open,
// with its NOTIFY lost, still arrives (by a poll). Counts, not timings: waits are on what the feed reports.
import postgresClient from "postgres";
import { describe, expect, it } from "vitest";
import { PostgresChangeFeed } from "../../src/origin/feed/postgres-change-feed.ts";
import { preparePostgres } from "../../src/origin/store/postgres/prepare.ts";
import { deferred, registerCleanup } from "./harness.ts";
import { usePostgres } from "./pg-harness.ts";

const postgres = usePostgres();

/** Waits for `condition`, checking every few milliseconds; fails after 20 s (a liveness bound, not a timing claim). */
async function until(condition: () => boolean, what: () => string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A transaction on its own connection that has taken an xid (and ran `body`), held open until released. */
async function openTransaction(url: string, body: (tx: postgresClient.TransactionSql) => Promise<unknown>) {
  const sql = postgresClient(url, { max: 1, onnotice: () => {} });
  registerCleanup(() => sql.end({ timeout: 2 }));
  const begun = deferred<bigint>();
  const release = deferred();
  const done = sql.begin(async (tx) => {
    const [row] = await tx<{ xid: string }[]>`SELECT pg_current_xact_id()::text AS xid`;
    await body(tx);
    begun.resolve(BigInt(row!.xid));
    await release.promise;
  });
  const xid = await begun.promise;
  let committed = false;
  registerCleanup(async () => {
    if (!committed) {
      release.resolve();
      await done;
    }
  });
  return {
    xid,
    async commit() {
      committed = true;
      release.resolve();
      await done;
    },
  };
}

describe("change feed with a transaction held open", () => {
  it("reads each change once per feed however long the oldest transaction stays open, and misses none", { timeout: 60_000 }, async () => {
    const url = await postgres.database();
    const elsewhere = await postgres.database();
    const options = { url, display: url, poolSize: 2, timeoutMs: 10_000, applicationName: "open-tx-test" };
    await preparePostgres(options, undefined);
    const sql = postgresClient(url, { max: 1, onnotice: () => {} });
    registerCleanup(() => sql.end({ timeout: 2 }));

    // A change whose NOTIFY is lost: logged with the trigger off (session_replication_role), so only a poll can bring it.
    const silentChange = (id: string) => async (tx: postgresClient.TransactionSql) => {
      await tx`SET LOCAL session_replication_role = replica`;
      await tx`INSERT INTO slim_edge_changes (item_id) VALUES (${id})`;
    };
    // Started before the transaction held open below: its xid is lower, it commits last.
    const early = await openTransaction(url, silentChange("early"));
    // Another application's transaction in another database of the server: it wrote, and idles.
    const held = await openTransaction(elsewhere, (tx) => tx`CREATE TABLE t (x int)`);
    expect(held.xid).toBeGreaterThan(early.xid);

    const delivered = new Map<string, number>();
    const lines: string[] = [];
    const feed = new PostgresChangeFeed({
      ...options,
      pollMs: 10,
      staleBoundMs: 60_000,
      log: (line) => lines.push(line),
      oldTransactionLogMs: 0, // say so at the first poll that sees it: the test counts the lines
    });
    registerCleanup(() => feed.close());
    await feed.start({
      changed: (id) => delivered.set(id, (delivered.get(id) ?? 0) + 1),
      lostTrack: (reason) => {
        throw new Error(`the feed lost track: ${reason}`);
      },
    });
    const stats = feed.pollStats;
    const rowsAtStart = stats.rowsRead;
    let logged = 0;
    /** Resolves once the polls have read every row committed so far (each is read by exactly one poll). */
    const polled = (rows: number) => until(() => stats.rowsRead - rowsAtStart >= rows, () => `${rows} rows read by the polls (${stats.rowsRead - rowsAtStart} so far)`);

    // Started while the held transaction is open; commits after many others.
    const during = await openTransaction(url, silentChange("during"));

    const ROUNDS = 10;
    const PER_ROUND = 5_000;
    for (let round = 0; round < ROUNDS; round++) {
      await sql.unsafe(
        `INSERT INTO slim_edge_items SELECT 'r${round}-' || g, 1, 'Zz', '{}' FROM generate_series(1, ${PER_ROUND}) g`,
      );
      logged += PER_ROUND;
      await polled(logged);
      // A poll reads what was committed since the one before, not everything since the held transaction began.
      expect(stats.rowsRead - rowsAtStart).toBe(logged);
      expect(stats.maxRows).toBeLessThanOrEqual(PER_ROUND);
      // Every row the cursor remembered (notified before a poll read it) is forgotten once a poll has read it.
      expect(stats.held).toBe(0);
    }
    expect(stats.polls).toBeGreaterThan(ROUNDS);

    await during.commit();
    await polled(++logged);
    expect(delivered.get("during")).toBe(1);
    await early.commit();
    await polled(++logged);
    expect(delivered.get("early")).toBe(1);
    expect(stats.rowsRead - rowsAtStart).toBe(logged);

    // Every change delivered, each exactly once (by NOTIFY or by a poll, never both).
    expect(delivered.size).toBe(logged);
    expect([...delivered.values()].every((n) => n === 1)).toBe(true);
    expect(feed.stats).toMatchObject({ changes: logged, resets: 0, pollFailures: 0 });
    expect(feed.healthy).toBe(true);

    // The oldest open transaction is reported once while it holds xmin back, and once when it ends.
    const about = (xid: bigint, what: string) => lines.filter((l) => l.includes(`transaction ${xid} ${what}`)).length;
    expect(about(early.xid, "has been open")).toBe(1);
    expect(about(early.xid, "has ended")).toBe(1);
    expect(about(held.xid, "has been open")).toBe(1);
    expect(about(held.xid, "has ended")).toBe(0);
    await held.commit();
    const polls = stats.polls;
    await until(() => stats.polls > polls + 1, () => "two more polls");
    expect(about(held.xid, "has ended")).toBe(1);
  });
});
