// Follows the PostgreSQL change log for one origin instance: NOTIFY brings each committed change within
// milliseconds, and a poll of the log every FEED_POLL_MS makes the feed complete whatever NOTIFY lost (a
// listener that was disconnected, a reconnect in backoff). change-log-cursor.ts decides what each poll and
// notification means; this file does the I/O and keeps time, and hands each change to the handlers on its
// own: an id that is not an item id (a user's table may hold any text) is counted and not handed to the
// cache, and a handler that throws is logged with the id and does not keep the rest of the batch from them.

import type { Sql } from "postgres";
import { StoreUnavailableError } from "../store/item-store.ts";
import { anyOf, openPool, withDeadline, type PostgresOptions } from "../store/postgres/connection.ts";
import type { SetupRecheck } from "../store/postgres/prepare.ts";
import { CHANGE_CHANNEL, CHANGES_TABLE, FEED_TABLE } from "../store/postgres/schema.ts";
import { isItemId } from "../../shared/item-id.ts";
import type { ChangeFeed, ChangeFeedStats, ChangeHandlers } from "./change-feed.ts";
import { ChangeLogCursor, EVERYTHING_CHANGED, parseNotification, parseSnapshot, type ChangePoll, type CursorStep, type Snapshot } from "./change-log-cursor.ts";

/**
 * How long the oldest transaction on the server may stay open before the feed says so (once): it no longer
 * slows the polls, but the change log cannot be pruned past it (change-log-pruner.ts), so the log grows.
 */
export const OLD_TRANSACTION_LOG_MS = 10 * 60_000;
/**
 * How often what feeds the change log is checked again, ms: about as soon as a silent feed would be
 * distrusted (the staleness bound), but not more than once a second (a dozen catalog queries each time, per
 * process) nor less than every 5 s.
 */
function recheckInterval(staleBoundMs: number): number {
  return Math.min(5000, Math.max(1000, staleBoundMs));
}

export interface PostgresFeedOptions extends PostgresOptions {
  /** How often the change log is polled, ms. */
  pollMs: number;
  /** The feed counts as healthy while its last successful poll is at most this old, ms. */
  staleBoundMs: number;
  log: (line: string) => void;
  now?: () => number;
  /** The oldest open transaction is reported once it has held the snapshot's xmin this long, ms. */
  oldTransactionLogMs?: number;
  /**
   * Checks again what feeds the change log (store/postgres/prepare.ts recheckPostgres), every
   * recheckInterval(staleBoundMs), on a connection of its own.
   */
  recheck?: (sql: Sql) => Promise<SetupRecheck>;
}

/** What the polls did, for tests and diagnosis: the work of a poll is the rows it read. */
export interface FeedPollStats {
  /** Successful polls. */
  polls: number;
  /** Change-log rows read by all of them (each committed row is read by one poll). */
  rowsRead: number;
  /** Rows read by the last successful poll, and by the largest. */
  lastRows: number;
  maxRows: number;
  /** Notified changes remembered until a poll covers them (change-log-cursor.ts). */
  held: number;
  /** Changes whose handler threw (logged with the id; everything cached was dropped). */
  handlerFailures: number;
  /** Checks of what feeds the change log completed while running (recheckPostgres). */
  rechecks: number;
}

type PollRow = { snapshot: string; feed_id: string; pruned_below: string; seq: string | null; xid: string | null; item_id: string | null };

export class PostgresChangeFeed implements ChangeFeed {
  readonly stats: ChangeFeedStats = { changes: 0, resets: 0, pollFailures: 0, listens: 0, ignored: 0 };
  readonly pollStats: FeedPollStats = { polls: 0, rowsRead: 0, lastRows: 0, maxRows: 0, held: 0, handlerFailures: 0, rechecks: 0 };
  readonly #options: PostgresFeedOptions;
  readonly #now: () => number;
  readonly #cursor = new ChangeLogCursor();
  /** LISTENs only (the driver keeps a dedicated connection for it and re-LISTENs after every reconnect). */
  #listener: Sql | undefined;
  /** Polls; replaced after a poll that got no answer (a connection can hang after a reset: measured). */
  #poller: Sql | undefined;
  #handlers: ChangeHandlers | undefined;
  #timer: NodeJS.Timeout | undefined;
  #polling: Promise<void> | undefined;
  #pollAgain = false;
  #lastGoodPollStarted = Number.NEGATIVE_INFINITY;
  #failing = false;
  #closed = false;
  #recheckTimer: NodeJS.Timeout | undefined;
  /** The rechecks' own connection: never holding up a poll, nor waiting behind one. */
  #checker: Sql | undefined;
  #recheckFailing = false;
  /** What the last recheck found missing: until it is fixed the feed is not trusted (see `healthy`). */
  #setupProblem: string | undefined;
  /** SetupRecheck.triggerVersions at the last check that found nothing wrong. */
  #triggerVersions: string | undefined;
  /** The oldest transaction open on the server (the last snapshot's xmin), since when, and whether it was logged. */
  #oldest: { xid: bigint; since: number; logged: boolean } | undefined;

  constructor(options: PostgresFeedOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
  }

  get healthy(): boolean {
    return this.#setupProblem === undefined && this.#now() - this.#lastGoodPollStarted <= this.#options.staleBoundMs;
  }

  async start(handlers: ChangeHandlers): Promise<void> {
    this.#handlers = handlers;
    // Connections of its own, so a busy or failing item pool never delays the feed or its reconnects.
    this.#listener = this.#open();
    this.#poller = this.#open();
    await this.#listener.listen(
      CHANGE_CHANNEL,
      (payload) => this.#onNotification(payload),
      () => {
        this.stats.listens++;
        // After a reconnect, what was sent while the listener was away is lost: catch up now.
        if (this.stats.listens > 1) this.#poll();
      },
    );
    const { recheck } = this.#options;
    // Before the first poll: the triggers' versions it records are the ones every later check compares with,
    // and what they let through before then is no loss (nothing is cached before the first poll).
    if (recheck !== undefined) await this.#recheck(recheck);
    // Through #poll, so that a reconnect during it queues the next poll instead of running one beside it
    // (two polls from one snapshot, absorbed out of order, would look like xids going backwards).
    this.#poll();
    await this.#polling;
    // The poll alone: a setup problem the first check found is reported as such, and the feed distrusted.
    if (this.#lastGoodPollStarted === Number.NEGATIVE_INFINITY) throw new Error("the first poll of the change log failed (see the log line above)");
    this.#timer = setInterval(() => this.#poll(), this.#options.pollMs);
    this.#timer.unref();
    if (recheck !== undefined) {
      let checking = false;
      this.#recheckTimer = setInterval(() => {
        if (checking || this.#closed) return;
        checking = true;
        this.#recheck(recheck)
          .catch((error: unknown) => this.#options.log(`origin: change feed: checking the change log's setup failed (${describe(error)})`))
          .finally(() => (checking = false));
      }, recheckInterval(this.#options.staleBoundMs));
      this.#recheckTimer.unref();
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    clearInterval(this.#recheckTimer);
    await this.#polling;
    // unlisten() does not stop delivery after a reconnect (postgres 3.4.9, measured): end the connections.
    await Promise.all([this.#listener?.end({ timeout: 2 }), this.#poller?.end({ timeout: 2 }), this.#checker?.end({ timeout: 2 })]);
  }

  #open(): Sql {
    return openPool({ ...this.#options, applicationName: `${this.#options.applicationName}-feed` }, 1);
  }

  #onNotification(payload: string): void {
    const change = parseNotification(payload);
    if (change === undefined || this.#closed) return;
    const id = this.#cursor.notified(change.seq, change.xid, change.id);
    this.pollStats.held = this.#cursor.held;
    if (id === undefined) return;
    if (id === "") this.#apply({ reset: true, reason: EVERYTHING_CHANGED });
    else this.#apply({ reset: false, changes: [change] });
  }

  /** Polls now, or right after the poll in flight (a reconnect must not wait for the next tick). */
  #poll(): void {
    if (this.#closed) return;
    if (this.#polling !== undefined) {
      this.#pollAgain = true;
      return;
    }
    this.#polling = this.#pollOnce().finally(() => {
      this.#polling = undefined;
      if (this.#pollAgain) {
        this.#pollAgain = false;
        this.#poll();
      }
    });
  }

  async #pollOnce(): Promise<void> {
    const sql = this.#poller!;
    const started = this.#now();
    const since = this.#cursor.since;
    try {
      // One statement, one snapshot: the snapshot and the rows it sees belong together. Only the rows of
      // transactions the previous poll's snapshot did not see as finished (change-log-cursor.ts); both arms
      // are ranges of the xid index, so the work is what was committed since, not what the oldest open
      // transaction holds back. No previous snapshot (the first poll): no rows, the cache is empty.
      const rows = await withDeadline(
        sql<PollRow[]>`
          WITH s AS MATERIALIZED (SELECT pg_current_snapshot()::text AS snapshot)
          SELECT s.snapshot, f.feed_id::text AS feed_id, f.pruned_below::text AS pruned_below,
                 c.seq::text AS seq, c.xid::text AS xid, c.item_id
          FROM s CROSS JOIN ${sql(FEED_TABLE)} f
          LEFT JOIN ${sql(CHANGES_TABLE)} c
            ON c.xid >= ${since === undefined ? null : String(since.xmax)}::xid8
            OR c.xid = ${anyOf(sql, since === undefined ? null : since.xip.map(String), "xid8")}
          ORDER BY c.seq`,
        this.#options.timeoutMs,
        "polling the change log",
      );
      if (this.#closed) return;
      // Every poll is joined to the feed table's one row: without it no poll could see a change.
      if (rows.length === 0) {
        throw new Error(`${FEED_TABLE} has lost its row; an origin serving its own table puts it back within seconds, else run INSERT INTO ${FEED_TABLE} DEFAULT VALUES (or npm run feed:install) as the change log's owner`);
      }
      const first = rows[0]!;
      const snapshot = parseSnapshot(first.snapshot);
      if (snapshot === undefined) throw new Error(`unexpected snapshot ${JSON.stringify(first.snapshot)}`);
      const poll: ChangePoll = {
        snapshot,
        feedId: first.feed_id,
        prunedBelow: BigInt(first.pruned_below),
        rows: rows.filter((r) => r.seq !== null).map((r) => ({ seq: r.seq!, xid: BigInt(r.xid!), id: r.item_id! })),
      };
      this.pollStats.polls++;
      this.pollStats.rowsRead += poll.rows.length;
      this.pollStats.lastRows = poll.rows.length;
      this.pollStats.maxRows = Math.max(this.pollStats.maxRows, poll.rows.length);
      this.#lastGoodPollStarted = started;
      if (this.#failing) {
        this.#failing = false;
        this.#options.log("origin: change feed: polling the change log again");
      }
      this.#watchOldest(snapshot, started);
      const step = this.#cursor.absorb(poll);
      this.pollStats.held = this.#cursor.held;
      this.#apply(step);
    } catch (error) {
      this.stats.pollFailures++;
      if (!this.#closed && error instanceof StoreUnavailableError && error.timedOut) {
        this.#poller = this.#open();
        void sql.end({ timeout: 0 });
      }
      if (!this.#failing) {
        this.#failing = true;
        this.#options.log(
          `origin: change feed: cannot poll the change log (${(error as Error).message}); cached items older than ${this.#options.staleBoundMs} ms are re-read until it recovers`,
        );
      }
    }
  }

  /** Hands each change to the handlers on its own: one that fails or cannot be cached never holds back the others. */
  #apply(step: CursorStep): void {
    const handlers = this.#handlers!;
    if (step.reset) {
      this.#lostTrack(step.reason);
      return;
    }
    let failed: string | undefined;
    for (const { id, xid } of step.changes) {
      // No request can name it (src/shared/item-id.ts), so nothing cached or filtered can be keyed by it; the
      // purger reads the change log itself (purge/postgres-purge-source.ts), so it loses nothing either.
      if (!isItemId(id)) {
        if (this.stats.ignored++ === 0) {
          this.#options.log(
            `origin: change feed: ignoring changes to ids that are not item ids (first: ${JSON.stringify(id.slice(0, 140))}); no request can ask for them, so nothing cached is keyed by them`,
          );
        }
        continue;
      }
      this.stats.changes++;
      try {
        handlers.changed(id, xid);
      } catch (error) {
        this.pollStats.handlerFailures++;
        failed = id;
        this.#options.log(`origin: change feed: applying the change to ${JSON.stringify(id)} failed (${describe(error)})`);
      }
    }
    // Whatever the failed handler left undone (a stale entry kept?), dropping everything undoes it.
    if (failed !== undefined) this.#lostTrack(`applying the change to ${JSON.stringify(failed)} failed`);
  }

  /**
   * A change made while a trigger was missing was never logged. What recheckPostgres repairs (the origin's
   * own triggers or feed row) comes with "everything changed" logged for every instance. What it only
   * reports (a user's table, whose fix is feed:install; anything it may not or will not create) leaves this
   * instance distrusting its feed (cached items older than the staleness bound are read again) until a check
   * finds it fixed; then it drops every cached item.
   */
  async #recheck(recheck: (sql: Sql) => Promise<SetupRecheck>): Promise<void> {
    const log = this.#options.log;
    let found: SetupRecheck;
    try {
      this.#checker ??= this.#open();
      found = await recheck(this.#checker);
      this.#recheckFailing = false;
    } catch (error) {
      // A server that cannot be reached: the polls say so. Anything else, once.
      if (!(error instanceof StoreUnavailableError) && !this.#recheckFailing) log(`origin: change feed: cannot check the change log's setup (${describe(error)})`);
      this.#recheckFailing = true;
      return;
    }
    if (this.#closed) return;
    this.pollStats.rechecks++;
    // The repair logged "everything changed": every instance's feed drops its cache when it reads that.
    if (found.repaired !== undefined) log(`origin: change feed: ${found.repaired} had gone or stopped logging (dropped, disabled?) and were created again`);
    const versions = this.#triggerVersions;
    this.#triggerVersions = found.triggerVersions;
    const altered = versions !== undefined && found.triggerVersions !== undefined && versions !== found.triggerVersions;
    if (altered && found.repaired === undefined && this.#setupProblem === undefined) {
      this.#lostTrack("the triggers that log changes were altered since the last check (disabled and enabled again, or replaced?), and what was written meanwhile may not have been logged");
    }
    if (found.problem !== undefined) {
      if (this.#setupProblem === undefined) {
        log(`origin: change feed: changes no longer reach the change log (${found.problem}); cached items older than ${this.#options.staleBoundMs} ms are re-read until it is fixed`);
      }
      this.#setupProblem = found.problem;
    } else if (this.#setupProblem !== undefined) {
      this.#setupProblem = undefined;
      log("origin: change feed: changes reach the change log again");
      this.#lostTrack("changes made while they did not were never logged");
    }
  }

  #lostTrack(reason: string): void {
    this.stats.resets++;
    this.#options.log(`origin: change feed: ${reason}; dropping every cached item`);
    try {
      this.#handlers!.lostTrack(reason);
    } catch (error) {
      this.pollStats.handlerFailures++;
      this.#options.log(`origin: change feed: dropping every cached item failed (${describe(error)})`);
    }
  }

  /**
   * Says once when the oldest transaction on the server (in any database: xids are cluster-wide) has stayed
   * open for OLD_TRANSACTION_LOG_MS, and once when it ends. The polls do not slow down for it (they read
   * only what was committed since the last one), but the change log cannot be pruned past it.
   */
  #watchOldest(snapshot: Snapshot, now: number): void {
    const open = snapshot.xmin < snapshot.xmax ? snapshot.xmin : undefined;
    let oldest = this.#oldest;
    if (oldest?.xid !== open) {
      if (oldest?.logged) this.#options.log(`origin: change feed: transaction ${oldest.xid} has ended after at least ${Math.floor((now - oldest.since) / 1000)} s`);
      oldest = this.#oldest = open === undefined ? undefined : { xid: open, since: now, logged: false };
    }
    if (oldest !== undefined && !oldest.logged && now - oldest.since >= (this.#options.oldTransactionLogMs ?? OLD_TRANSACTION_LOG_MS)) {
      oldest.logged = true;
      this.#options.log(
        `origin: change feed: transaction ${oldest.xid} has been open for over ${Math.floor((now - oldest.since) / 1000)} s, the oldest on the PostgreSQL server (in any database); the change log cannot be pruned past it until it ends (see pg_stat_activity.backend_xid and pg_prepared_xacts)`,
      );
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
