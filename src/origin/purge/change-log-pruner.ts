// Keeps the change log small: the purge leader deletes what no one needs any more, in bounded batches, once a
// minute. Without it every change ever made would stay in the table the purger and the feed read.
//
// What goes: purged rows older than 10 minutes (kept a while so that an instance whose feed was briefly away
// can still catch up from the log), and any row older than a day, purged or not (an edge keeps an item a day
// at most, so a purge that late has nothing left to drop). On PostgreSQL the feed of every instance reads the
// same log: whenever rows are deleted, `slim_edge_feed.pruned_below` is raised, in the same statement, to the
// highest deleted xid + 1, so an instance whose feed is behind that point resets its cache instead of missing
// a change (change-log-cursor.ts). Only rows whose transaction is older than the statement's snapshot xmin are
// deleted: an instance that polled a moment ago holds a snapshot whose xmin is near that one, so a transaction held open
// for long (anywhere in the cluster) delays pruning instead of making every instance reset its cache.
//
// Batches: PostgreSQL walks the log in seq order, `batch` rows per statement, and stops at the first window
// holding a row younger than 10 minutes (what follows is younger still, give or take long transactions, which
// the next run catches). SQLite finds old rows by its changed_at index, `batch` deletes per writer transaction.
// Either stops after `maxBatches` statements a run; the next run goes on.

import type { Sql } from "postgres";
import type { SqliteItemStore } from "../store/sqlite-store.ts";
import { StoreUnavailableError } from "../store/item-store.ts";
import { openPool, withDeadline, type PostgresOptions } from "../store/postgres/connection.ts";
import { CHANGES_TABLE, FEED_TABLE } from "../store/postgres/schema.ts";
import { systemTimers, type TimerHandle, type Timers } from "./timers.ts";

export interface PruneRules {
  /** Purged rows older than this go, ms. */
  purgedAgeMs: number;
  /** Every row older than this goes, ms: the longest an edge keeps an item. */
  maxAgeMs: number;
  /** Rows per statement. */
  batch: number;
  /** Statements per run. */
  maxBatches: number;
}

export const PRUNE_DEFAULTS: Readonly<PruneRules> = Object.freeze({
  purgedAgeMs: 10 * 60_000,
  maxAgeMs: 24 * 60 * 60_000,
  batch: 5_000,
  maxBatches: 100,
});

/** How often the leader prunes. */
export const PRUNE_EVERY_MS = 60_000;

export interface ChangeLogPruner {
  /** One run: deletes what the rules allow (bounded); resolves with how many rows went. */
  pruneOnce(): Promise<number>;
}

/** The PostgreSQL change log (`slim_edge_changes`), on a connection of its own opened at the first run. */
export class PostgresChangeLogPruner implements ChangeLogPruner {
  readonly #options: PostgresOptions;
  readonly #rules: PruneRules;
  #sql: Sql;

  constructor(options: PostgresOptions & Partial<PruneRules>) {
    this.#options = { ...options, applicationName: `${options.applicationName}-prune` };
    this.#rules = rulesFrom(options);
    this.#sql = openPool(this.#options, 1);
  }

  async pruneOnce(): Promise<number> {
    const { purgedAgeMs, maxAgeMs, batch, maxBatches } = this.#rules;
    let after = "0";
    let deleted = 0;
    for (let i = 0; i < maxBatches; i++) {
      const sql = this.#sql;
      let rows;
      try {
        rows = await withDeadline(
          sql<{ scanned: number; last_seq: string | null; deleted: number; reached_young: boolean }[]>`
            WITH s AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
            win AS (SELECT seq, xid, purged, changed_at FROM ${sql(CHANGES_TABLE)} WHERE seq > ${after}::bigint ORDER BY seq LIMIT ${batch}),
            doomed AS (
              SELECT w.seq FROM win w, s WHERE w.xid < s.xmin AND (
                w.changed_at < now() - ${maxAgeMs}::float8 * interval '1 millisecond'
                OR (w.purged AND w.changed_at < now() - ${purgedAgeMs}::float8 * interval '1 millisecond'))),
            deleted AS (DELETE FROM ${sql(CHANGES_TABLE)} c USING doomed d WHERE c.seq = d.seq RETURNING c.xid),
            top AS (SELECT max(xid) AS xid FROM deleted),
            raised AS (
              UPDATE ${sql(FEED_TABLE)} f SET pruned_below = (top.xid::text::numeric + 1)::text::xid8
              FROM top WHERE top.xid IS NOT NULL AND f.pruned_below <= top.xid RETURNING 1)
            SELECT (SELECT count(*) FROM win)::int AS scanned, (SELECT max(seq) FROM win)::text AS last_seq,
                   (SELECT count(*) FROM deleted)::int AS deleted,
                   coalesce((SELECT bool_or(changed_at >= now() - ${purgedAgeMs}::float8 * interval '1 millisecond') FROM win), false) AS reached_young,
                   (SELECT count(*) FROM raised)::int AS raised`,
          this.#options.timeoutMs,
          "pruning the change log",
        );
      } catch (error) {
        if (error instanceof StoreUnavailableError && error.timedOut && this.#sql === sql) {
          this.#sql = openPool(this.#options, 1); // a query that got no answer may leave its connection stuck
          void sql.end({ timeout: 0 });
        }
        throw error;
      }
      const row = rows[0]!;
      deleted += row.deleted;
      if (row.scanned < batch || row.reached_young || row.last_seq === null) break;
      after = row.last_seq;
    }
    return deleted;
  }

  close(): Promise<void> {
    return this.#sql.end({ timeout: 2 });
  }
}

/** The embedded store's outbox (`changes`): deletes go through its writer thread like every write. */
export class SqliteChangeLogPruner implements ChangeLogPruner {
  readonly #store: SqliteItemStore;
  readonly #rules: PruneRules;
  readonly #clock: () => number;

  /** `clock`: wall-clock ms (changed_at is ms since the Unix epoch); tests move it forward. */
  constructor(store: SqliteItemStore, options: Partial<PruneRules> & { clock?: () => number } = {}) {
    this.#store = store;
    this.#rules = rulesFrom(options);
    this.#clock = options.clock ?? Date.now;
  }

  async pruneOnce(): Promise<number> {
    const { purgedAgeMs, maxAgeMs, batch, maxBatches } = this.#rules;
    const now = this.#clock();
    let deleted = 0;
    for (let i = 0; i < maxBatches; i++) {
      const n = await this.#store.pruneChanges(now - purgedAgeMs, now - maxAgeMs, batch);
      deleted += n;
      if (n < batch) break;
    }
    return deleted;
  }
}

/**
 * Runs a pruner at start() and every `everyMs` until stop(): the lead starts it when this instance becomes the
 * purge leader and stops it when it steps down. A failing run is logged (once until one succeeds) and retried
 * at the next tick; runs never overlap.
 */
export class ChangeLogPruning {
  readonly #pruner: ChangeLogPruner;
  readonly #everyMs: number;
  readonly #timers: Timers;
  readonly #log: (line: string) => void;
  #timer: TimerHandle | undefined;
  #run: Promise<void> | undefined;
  #running = false;
  #failing = false;
  /** Rows deleted since this object was made, for /metrics or tests. */
  deleted = 0;

  constructor(pruner: ChangeLogPruner, options: { everyMs?: number; timers?: Timers; log?: (line: string) => void } = {}) {
    this.#pruner = pruner;
    this.#everyMs = options.everyMs ?? PRUNE_EVERY_MS;
    this.#timers = options.timers ?? systemTimers;
    this.#log = options.log ?? (() => {});
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#tick();
  }

  /** Stops the schedule and waits for a run in flight. */
  async stop(): Promise<void> {
    this.#running = false;
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#run;
  }

  /** Resolves when the run in flight (if any) is over: for tests and tools. */
  settled(): Promise<void> {
    return this.#run ?? Promise.resolve();
  }

  #tick(): void {
    this.#timer = undefined;
    if (!this.#running || this.#run !== undefined) return;
    this.#run = this.#pruner.pruneOnce().then(
      (n) => {
        this.deleted += n;
        if (this.#failing) this.#log("purge: pruning the change log works again");
        this.#failing = false;
      },
      (error: unknown) => {
        if (!this.#failing) this.#log(`purge: cannot prune the change log (${(error as Error).message}); trying again in ${this.#everyMs / 1000} s`);
        this.#failing = true;
      },
    ).finally(() => {
      this.#run = undefined;
      if (this.#running) this.#timer = this.#timers.setTimeout(() => this.#tick(), this.#everyMs);
    });
  }
}

/** The rules `options` set, the defaults for the rest. */
function rulesFrom(options: Partial<PruneRules>): PruneRules {
  const rules = { ...PRUNE_DEFAULTS };
  for (const key of Object.keys(rules) as (keyof PruneRules)[]) rules[key] = options[key] ?? rules[key];
  return rules;
}
