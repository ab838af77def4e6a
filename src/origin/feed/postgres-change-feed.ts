// Follows the PostgreSQL change log for one origin instance: NOTIFY brings each committed change within
// milliseconds, and a poll of the log every FEED_POLL_MS makes the feed complete whatever NOTIFY lost (a
// listener that was disconnected, a reconnect in backoff). change-log-cursor.ts decides what each poll and
// notification means; this file does the I/O and keeps time.

import type { Sql } from "postgres";
import { StoreUnavailableError } from "../store/item-store.ts";
import { openPool, withDeadline, type PostgresOptions } from "../store/postgres/connection.ts";
import { CHANGE_CHANNEL, CHANGES_TABLE, FEED_TABLE } from "../store/postgres/schema.ts";
import type { ChangeFeed, ChangeFeedStats, ChangeHandlers } from "./change-feed.ts";
import { ChangeLogCursor, parseNotification, type ChangePoll, type CursorStep } from "./change-log-cursor.ts";

export interface PostgresFeedOptions extends PostgresOptions {
  /** How often the change log is polled, ms. */
  pollMs: number;
  /** The feed counts as healthy while its last successful poll is at most this old, ms. */
  staleBoundMs: number;
  log: (line: string) => void;
  now?: () => number;
}

type PollRow = { xmin: string; feed_id: string; pruned_below: string; seq: string | null; xid: string | null; item_id: string | null };

export class PostgresChangeFeed implements ChangeFeed {
  readonly stats: ChangeFeedStats = { changes: 0, resets: 0, pollFailures: 0, listens: 0 };
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

  constructor(options: PostgresFeedOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
  }

  get healthy(): boolean {
    return this.#now() - this.#lastGoodPollStarted <= this.#options.staleBoundMs;
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
    await this.#pollOnce();
    if (!this.healthy) throw new Error("the first poll of the change log failed (see the log line above)");
    this.#timer = setInterval(() => this.#poll(), this.#options.pollMs);
    this.#timer.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#polling;
    // unlisten() does not stop delivery after a reconnect (postgres 3.4.9, measured): end the connections.
    await Promise.all([this.#listener?.end({ timeout: 2 }), this.#poller?.end({ timeout: 2 })]);
  }

  #open(): Sql {
    return openPool({ ...this.#options, applicationName: `${this.#options.applicationName}-feed` }, 1);
  }

  #onNotification(payload: string): void {
    const change = parseNotification(payload);
    if (change === undefined || this.#closed) return;
    const id = this.#cursor.notified(change.seq, change.xid, change.id);
    if (id === undefined) return;
    if (id === "") this.#apply({ reset: true, reason: "the items table was truncated" });
    else this.#apply({ reset: false, ids: [id] });
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
    const watermark = this.#cursor.watermark;
    try {
      // One statement, one snapshot: its xmin and the rows it sees belong together.
      const rows = await withDeadline(
        sql<PollRow[]>`
          WITH s AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
          SELECT s.xmin::text AS xmin, f.feed_id::text AS feed_id, f.pruned_below::text AS pruned_below,
                 c.seq::text AS seq, c.xid::text AS xid, c.item_id
          FROM s CROSS JOIN ${sql(FEED_TABLE)} f
          LEFT JOIN ${sql(CHANGES_TABLE)} c ON c.xid >= COALESCE(${watermark === undefined ? null : String(watermark)}::xid8, s.xmin)
          ORDER BY c.seq`,
        this.#options.timeoutMs,
        "polling the change log",
      );
      if (this.#closed || rows.length === 0) return;
      const first = rows[0]!;
      const poll: ChangePoll = {
        xmin: BigInt(first.xmin),
        feedId: first.feed_id,
        prunedBelow: BigInt(first.pruned_below),
        rows: rows.filter((r) => r.seq !== null).map((r) => ({ seq: r.seq!, xid: BigInt(r.xid!), id: r.item_id! })),
      };
      this.#lastGoodPollStarted = started;
      if (this.#failing) {
        this.#failing = false;
        this.#options.log("origin: change feed: polling the change log again");
      }
      this.#apply(this.#cursor.absorb(poll));
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

  #apply(step: CursorStep): void {
    const handlers = this.#handlers!;
    if (step.reset) {
      this.stats.resets++;
      this.#options.log(`origin: change feed: ${step.reason}; dropping every cached item`);
      handlers.lostTrack(step.reason);
      return;
    }
    for (const id of step.ids) {
      this.stats.changes++;
      handlers.changed(id);
    }
  }
}
