// The purger's durable queue on PostgreSQL: the change log (`slim_edge_changes`, schema.ts), which a trigger
// fills in the same transaction as every change to the items, whoever wrote it; its `purged` flag is the
// purger's progress. Only the leading instance (leadership.ts) reads and marks it, on a connection of its own,
// every query under the store deadline (connection.ts).
//
// A TRUNCATE of the items table is logged as item_id '' ("everything changed"); it is handed to the purger as
// a change with id "" (never a valid item id). The only right answer to it is a purge of every item
// (ALL_ITEMS_TAG), which the purge loop must send for it rather than a purge of the tag `item:`.
//
// Why a cut is a snapshot and not just a sequence number: transactions draw their seq when they write but
// commit in any order, so a transaction holding a lower seq can commit after the cut (change-log-cursor.ts has
// the same problem for the feed). A wide purge sent after the cut covers exactly the changes committed before
// it, so the cut keeps the snapshot of the statement that counted them, and markCut marks only rows whose
// transaction that snapshot saw as finished: `pg_visible_in_snapshot(xid, cut)`, which is true for every xid
// below the snapshot's xmin and also for the later ones that had committed by then. (xid < xmin alone would be
// safe too, but would cover nothing committed after the oldest transaction still open anywhere in the cluster:
// one long transaction would leave each wide purge marking nothing, and the purger sending them again and again.) `xid` is the top-level transaction id
// (pg_current_xact_id() in the column default), which is what the function expects.

import type { PendingQuery, Row, Sql } from "postgres";
import { StoreUnavailableError } from "../store/item-store.ts";
import { anyOf, openPool, withDeadline, type PostgresOptions } from "../store/postgres/connection.ts";
import { CHANGES_TABLE } from "../store/postgres/schema.ts";
import { CUT_COUNT_CAP, type PendingChange, type PurgeCut, type PurgeSource, type RecentChange } from "./purge-source.ts";

/** Rows marked per statement (markPurged keys, markCut rows): each statement stays short under the deadline. */
const MARK_BATCH = 5_000;

interface PostgresCut extends PurgeCut {
  readonly source: PostgresPurgeSource;
  /** The snapshot of the statement that counted the pending rows (`xmin:xmax:xip,…`). */
  readonly snapshot: string;
  /** The highest seq among them: bounds markCut's scan of the pending index. */
  readonly lastSeq: string;
}

export class PostgresPurgeSource implements PurgeSource {
  readonly #options: PostgresOptions;
  #sql: Sql;
  #closed = false;

  /** One connection of its own (`<applicationName>-purge`), opened at the first query. */
  constructor(options: PostgresOptions) {
    this.#options = { ...options, applicationName: `${options.applicationName}-purge` };
    this.#sql = openPool(this.#options, 1);
  }

  async take(limit: number): Promise<PendingChange[]> {
    const rows = await this.#query(
      (sql) => sql<{ seq: string; item_id: string }[]>`
        SELECT seq::text AS seq, item_id FROM ${sql(CHANGES_TABLE)} WHERE NOT purged ORDER BY seq LIMIT ${limit}`,
      "reading pending changes",
    );
    return rows.map((row) => ({ key: row.seq, id: row.item_id }));
  }

  async markPurged(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += MARK_BATCH) {
      const batch = keys.slice(i, i + MARK_BATCH);
      await this.#query(
        (sql) => sql`UPDATE ${sql(CHANGES_TABLE)} SET purged = true WHERE seq = ${anyOf(sql, batch, "bigint")} AND NOT purged`,
        "marking changes purged",
      );
    }
  }

  async cut(): Promise<PurgeCut> {
    // One statement, one snapshot: pg_current_snapshot() is the snapshot the rows were counted in.
    const rows = await this.#query(
      (sql) => sql<{ snapshot: string; count: number; last_seq: string }[]>`
        SELECT pg_current_snapshot()::text AS snapshot,
          (SELECT count(*) FROM (SELECT 1 FROM ${sql(CHANGES_TABLE)} WHERE NOT purged LIMIT ${CUT_COUNT_CAP}) p)::int AS count,
          coalesce((SELECT seq FROM ${sql(CHANGES_TABLE)} WHERE NOT purged ORDER BY seq DESC LIMIT 1), 0)::text AS last_seq`,
      "counting pending changes",
    );
    const row = rows[0]!;
    const cut: PostgresCut = { count: row.count, snapshot: row.snapshot, lastSeq: row.last_seq, source: this };
    return cut;
  }

  async markCut(cut: PurgeCut): Promise<void> {
    const { source, snapshot, lastSeq } = cut as Partial<PostgresCut>;
    if (source !== this || snapshot === undefined || lastSeq === undefined) throw new TypeError("markCut: this cut was not taken by this source");
    for (;;) {
      const [marked] = await this.#query(
        (sql) => sql<{ n: number }[]>`
          WITH marked AS (
            UPDATE ${sql(CHANGES_TABLE)} SET purged = true WHERE seq IN (
              SELECT seq FROM ${sql(CHANGES_TABLE)}
              WHERE NOT purged AND seq <= ${lastSeq}::bigint AND pg_visible_in_snapshot(xid, ${snapshot}::pg_snapshot)
              ORDER BY seq LIMIT ${MARK_BATCH})
            RETURNING 1)
          SELECT count(*)::int AS n FROM marked`,
        "marking a wide purge's changes purged",
      );
      if (marked!.n < MARK_BATCH) return;
    }
  }

  async backlog(upTo: number): Promise<number> {
    const rows = await this.#query(
      (sql) => sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM (SELECT 1 FROM ${sql(CHANGES_TABLE)} WHERE NOT purged LIMIT ${upTo}) p`,
      "counting pending changes",
    );
    return rows[0]!.n;
  }

  async latest(limit: number): Promise<RecentChange[]> {
    // The primary key read backwards: `limit` rows, however long the log.
    const rows = await this.#query(
      (sql) => sql<{ item_id: string; purged: boolean; changed_at: number }[]>`
        SELECT item_id, purged, (extract(epoch FROM changed_at) * 1000)::float8 AS changed_at
        FROM ${sql(CHANGES_TABLE)} ORDER BY seq DESC LIMIT ${limit}`,
      "reading the newest changes",
    );
    return rows.map((row) => ({ id: row.item_id, purged: row.purged, changedAt: row.changed_at }));
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#sql.end({ timeout: 2 });
  }

  /**
   * `build`'s query on this source's connection under the store deadline. A query that got no answer may
   * leave its connection stuck (a frozen path, measured), so the connection is replaced after a timeout.
   */
  async #query<T extends readonly Row[]>(build: (sql: Sql) => PendingQuery<T>, what: string): Promise<T> {
    if (this.#closed) throw new StoreUnavailableError(`the purge source is closed (${what})`);
    const sql = this.#sql;
    try {
      return await withDeadline(build(sql), this.#options.timeoutMs, what);
    } catch (error) {
      if (error instanceof StoreUnavailableError && error.timedOut && !this.#closed && this.#sql === sql) {
        this.#sql = openPool(this.#options, 1);
        void sql.end({ timeout: 0 });
      }
      throw error;
    }
  }
}
