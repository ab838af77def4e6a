// Which origin instance runs the purger (and prunes the change log): exactly one at a time, because each change
// must be purged once, not once per instance. With PostgreSQL the leader is whoever holds a session-level
// advisory lock; with the embedded SQLite store there is one instance and the process decides (FixedLeadership).
//
// Why a dedicated `postgres({ max: 1, onclose })` instance and not `sql.reserve()` (measured against PostgreSQL
// 15 with postgres 3.4.9): a query on a reserved connection whose backend died throws an uncaught TypeError (the
// process crashes), and release() of it poisons the pool. A dedicated instance reports the end of its session
// through `onclose`, and the lock ends with the session: leadership is dropped at once, and sought again on a
// new instance (the old one may carry a stale 57P01 into its next reconnecting query, also measured) after
// twice the followers' interval, so that another instance, which asks every `retryMs`, takes over first (a
// leader whose session was ended is the one least likely to be healthy), while a lone instance leads again.
//
// A frozen path reports nothing, so the leader also checks every `retryMs`, under the deadline, that its session
// still holds the lock, and steps down when it cannot tell. The server cannot tell either (TCP keepalive gives up
// after hours), so the session asks it to end the session once it has been idle for longer than a live instance
// ever leaves it (idle_session_timeout, 3 × retryMs + timeoutMs): a vanished leader's lock is freed within
// seconds, not hours. Two instances never lead at once as far as the lock
// can tell: PostgreSQL grants it to one session; the only overlap is between the server ending the leader's
// session and the leader hearing of it (an instant on a live connection, at most `retryMs + timeoutMs` on a
// frozen one). The lock needs a real session: behind pgbouncer, give this a direct (or session-pooled) URL.

import postgres, { type Sql } from "postgres";
import { withDeadline } from "../store/postgres/connection.ts";

export interface Leadership {
  /** Starts seeking leadership; `onChange(true)` when this instance becomes the leader, `onChange(false)` when it stops being one. */
  start(onChange: (leading: boolean) => void): void;
  /** Stops seeking and gives leadership up (`onChange(false)` first if leading); resolves once released. */
  stop(): Promise<void>;
  readonly leading: boolean;
}

/** The process decides (the embedded store has one instance): leads from start() to stop(), or never. */
export class FixedLeadership implements Leadership {
  readonly #fixed: boolean;
  #leading = false;
  #onChange: ((leading: boolean) => void) | undefined;

  constructor(leading: boolean) {
    this.#fixed = leading;
  }

  get leading(): boolean {
    return this.#leading;
  }

  /** Calls `onChange(true)` at once when this process leads. */
  start(onChange: (leading: boolean) => void): void {
    if (this.#onChange !== undefined) return;
    this.#onChange = onChange;
    if (!this.#fixed) return;
    this.#leading = true;
    onChange(true);
  }

  stop(): Promise<void> {
    const onChange = this.#onChange;
    this.#onChange = undefined;
    if (this.#leading) {
      this.#leading = false;
      onChange?.(false);
    }
    return Promise.resolve();
  }
}

/** "slimedge" in ASCII: the advisory lock key of the purge leader, one per database. */
export const LEADER_LOCK_KEY = 0x736c_696d_6564_6765n;

export interface PostgresLeadershipOptions {
  url: string;
  /** Deadline of each query on the lock's connection, ms (STORE_TIMEOUT_MS). */
  timeoutMs: number;
  /** Shown in pg_stat_activity for the lock's connection. */
  applicationName: string;
  /** How often a follower tries to take the lock, and a leader checks it still holds it; default 2000 ms. */
  retryMs?: number;
  lockKey?: bigint;
  /** What the leader does, for the log: "the purge" by default; pruning alone when purging is off. */
  duties?: string;
  log?: (line: string) => void;
}

type Status = "starting" | "leading" | "following" | "failing";

export class PostgresLeadership implements Leadership {
  readonly #o: Required<PostgresLeadershipOptions>;
  #onChange: ((leading: boolean) => void) | undefined;
  #sql: Sql | undefined;
  #leading = false;
  #status: Status = "starting";
  #timer: NodeJS.Timeout | undefined;
  #tick: Promise<void> | undefined;
  #next: number | undefined;
  #stopped = true;

  constructor(options: PostgresLeadershipOptions) {
    this.#o = { ...options, retryMs: options.retryMs ?? 2_000, lockKey: options.lockKey ?? LEADER_LOCK_KEY, duties: options.duties ?? "the purge", log: options.log ?? (() => {}) };
    // pg_locks shows a bigint key as two unsigned halves: the check below reads back non-negative keys only.
    if (this.#o.lockKey < 0n || this.#o.lockKey >= 1n << 63n) throw new RangeError(`lock key ${this.#o.lockKey} is outside 0 … 2^63-1`);
  }

  get leading(): boolean {
    return this.#leading;
  }

  start(onChange: (leading: boolean) => void): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#onChange = onChange;
    this.#schedule(0);
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#tick;
    if (this.#leading) this.#lose("stopping");
    const sql = this.#sql;
    this.#sql = undefined;
    // Ending the session releases the lock (the server drops a session's advisory locks when it ends).
    await sql?.end({ timeout: 1 });
    this.#onChange = undefined;
  }

  /** The next step in `ms` (replacing the one planned); steps never overlap: during one, this sets the pause after it. */
  #schedule(ms: number): void {
    if (this.#stopped) return;
    if (this.#tick !== undefined) {
      this.#next = ms;
      return;
    }
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#tick = this.#step().finally(() => {
        this.#tick = undefined;
        const next = this.#next ?? this.#o.retryMs;
        this.#next = undefined;
        this.#schedule(next);
      });
    }, ms);
    this.#timer.unref();
  }

  /** One attempt to take the lock (following) or one check that this session still holds it (leading). */
  async #step(): Promise<void> {
    let sql: Sql;
    try {
      sql = this.#sql ??= this.#open();
    } catch (error) {
      // A URL postgres() cannot parse: the configuration's parser should have refused it already.
      return this.#note("failing", `cannot open the lock's connection: ${(error as Error).message}`);
    }
    const key = String(this.#o.lockKey);
    try {
      if (!this.#leading) {
        const [row] = await withDeadline(sql<{ ok: boolean }[]>`SELECT pg_try_advisory_lock(${key}::bigint) AS ok`, this.#o.timeoutMs, "taking the purge leader lock");
        if (this.#stopped || this.#sql !== sql) return; // stopped, or the session ended meanwhile (and the lock with it)
        if (row!.ok) this.#win();
        else this.#note("following", `another instance leads ${this.#o.duties}; trying again every ${this.#o.retryMs} ms`);
        return;
      }
      // A bigint key shows in pg_locks as classid (high 32 bits), objid (low 32 bits), objsubid 1.
      const [row] = await withDeadline(
        sql<{ held: boolean }[]>`
          SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
            AND objsubid = 1 AND (classid::bigint << 32) + objid::bigint = ${key}::bigint) AS held`,
        this.#o.timeoutMs,
        "checking the purge leader lock",
      );
      if (!row!.held && this.#sql === sql) this.#drop(sql, "this session no longer holds the lock");
    } catch (error) {
      if (this.#sql !== sql || this.#stopped) return;
      // Whatever the session did (a timed-out attempt may still have taken the lock), it is ended, lock and all.
      this.#drop(sql, `the lock's connection failed: ${(error as Error).message}`);
    }
  }

  #open(): Sql {
    const sql: Sql = postgres(this.#o.url, {
      max: 1,
      // The session is the lock: never closed for being idle or old.
      max_lifetime: null,
      connect_timeout: Math.max(1, Math.ceil(this.#o.timeoutMs / 1000)),
      fetch_types: false,
      connection: {
        application_name: this.#o.applicationName,
        statement_timeout: this.#o.timeoutMs,
        idle_session_timeout: 3 * this.#o.retryMs + this.#o.timeoutMs,
      },
      onnotice: () => {},
      onclose: () => {
        // The session (and any lock it held) is gone. Ignore instances already dropped (their end() closes too).
        if (this.#sql === sql && !this.#stopped) this.#drop(sql, "the lock's connection closed");
      },
    });
    return sql;
  }

  /** Ends this session (releasing anything it held) and steps down; the next step opens a new one. */
  #drop(sql: Sql, reason: string): void {
    this.#sql = undefined;
    void sql.end({ timeout: 0 }).catch(() => {});
    if (this.#leading) this.#lose(reason);
    else this.#note("failing", `cannot take the purge leader lock (${reason}); trying again every ${this.#o.retryMs} ms`);
  }

  #win(): void {
    this.#leading = true;
    this.#note("leading", `this instance leads ${this.#o.duties} (advisory lock ${this.#o.lockKey})`);
    this.#notify(true);
  }

  /** Steps down, and asks again only after twice the followers' interval, so one of them takes over first. */
  #lose(reason: string): void {
    this.#leading = false;
    this.#note("following", `this instance no longer leads ${this.#o.duties}: ${reason}`, true);
    this.#notify(false);
    this.#schedule(2 * this.#o.retryMs);
  }

  #notify(leading: boolean): void {
    try {
      this.#onChange?.(leading);
    } catch (error) {
      this.#o.log(`leadership: the ${leading ? "leading" : "stepping down"} handler failed: ${(error as Error).message}`);
    }
  }

  /** Logs a line when the status changes (or always, for `force`). */
  #note(status: Status, line: string, force = false): void {
    if (this.#status === status && !force) return;
    this.#status = status;
    this.#o.log(`leadership: ${line}`);
  }
}
