import { dirname } from "node:path";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { Worker } from "node:worker_threads";
import { EPOCH, etagFor, randomEpoch } from "./etag.ts";
import { PreconditionFailedError, StoreUnavailableError, type DeleteResult, type ItemStore, type PutResult, type StoredItem, type WriteCondition } from "./item-store.ts";
import { isBusy } from "./sqlite-busy.ts";
// Types only: importing the writer's module here would run its thread loop in any worker thread that opens a store.
import type { REFUSED, WriteReply, WriteRequest, WriterData, WriterMessage } from "./sqlite-writer.ts";
import { makeDirectories } from "./make-directories.ts";

const refused: typeof REFUSED = "refused";

/**
 * 1: items (id, version, body). 2: + epoch. 3: + the `changes` outbox the purger drains. An older file is
 * upgraded in place when opened (every step is additive and idempotent, in one transaction).
 */
const SCHEMA_VERSION = 3;
/** Ids handed out per batch by `ids()`. */
const ID_BATCH = 10_000;
/** How long a statement waits for another connection's lock before it fails with SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 5000;
/**
 * Restarting a writer thread that stopped: at once when it is the first to stop since one ran for
 * WRITER_STABLE_MS, else after a delay doubling from the base to the cap (as cluster/restart-policy.ts
 * replaces processes), never given up: a file that stays unwritable costs one thread start per cap, and
 * writes work again once it is fixed.
 */
const WRITER_BASE_DELAY_MS = 100;
const WRITER_MAX_DELAY_MS = 5000;
const WRITER_STABLE_MS = 10_000;

/**
 * Versions are per item and never reused: a delete keeps a tombstone holding the version, so a later PUT
 * of the same id continues the count and an old ETag can never match new content.
 *
 * Embedded SQLite (node:sqlite), WAL journal with `synchronous = FULL`: every commit is fsynced before
 * `put`/`delete` resolve, so the 204 that follows is a durable promise.
 *
 * Epochs (why an ETag survives a lost, recreated or restored database): versions count per item and start
 * at 1 in a new database, and a database restored from a backup counts again from the backup's versions,
 * so a version alone can be issued twice for different content. Every store session (each time the file
 * is opened) draws a random write epoch and stamps it on every row it writes; the ETag is epoch + version.
 * Rows nobody rewrites keep their epoch and ETag across restarts (the edge keeps getting 304s for them),
 * while content written after a reset or restore carries a fresh epoch that an older copy of the database
 * never used (equal by chance with p = 1/4096 per id). An epoch per database, stored once at creation,
 * would not cover a restore: the backup carries it back. Rows of a version 1 file read a random epoch
 * drawn when it is upgraded (the column default), as do rows inserted by other tools.
 *
 * Reads are primary-key lookups on a WITHOUT ROWID table (a few microseconds) on the calling thread.
 * Writes go to a worker thread with its own connection (sqlite-writer.ts), so an fsync never blocks the
 * event loop that serves reads, and writes that queue up while one commits share the next commit.
 *
 * Failed writes: another connection holding the write lock past busy_timeout (another origin process, a
 * backup tool) fails the writes waiting for it with StoreUnavailableError (503), nothing written; other
 * failures reject with an Error saying whether the write may have committed. A writer thread that stops
 * anyway is started again (see WRITER_BASE_DELAY_MS): the writes it held are rejected as possibly committed,
 * writes sent while none runs fail at once with StoreUnavailableError, and ping() is false until one runs.
 *
 * The change outbox (`recordChanges`, when the edge is purged on change): every committed PUT, every DELETE
 * of a live item and every seeded item adds a row to `changes` in the same transaction as the item, so a
 * change that committed is never lost to a crash before its purge (the purger resumes from the table after a
 * restart). Commits are serialised, so `seq` order is commit order. The purger reads pending rows here and
 * marks or prunes them through the writer thread (sqlite-purge-source.ts, change-log-pruner.ts). The table
 * exists in every version 3 file; only sessions that record changes fill it.
 */
export class SqliteItemStore implements ItemStore {
  readonly writable = true;
  readonly description: string;
  readonly #db: DatabaseSync;
  readonly #get: StatementSync;
  readonly #count: StatementSync;
  readonly #ids: StatementSync;
  readonly #ping: StatementSync;
  readonly #insertSeed: StatementSync;
  readonly #recordSeed: StatementSync;
  readonly #pending: StatementSync;
  readonly #lastPending: StatementSync;
  readonly #pendingCount: StatementSync;
  readonly #latest: StatementSync;
  readonly #epoch: string;
  readonly #busyTimeoutMs: number;
  readonly #log: (line: string) => void;
  readonly #writerData: WriterData;
  /** Replies awaited from the running writer thread (rejected when it stops). */
  readonly #waiting = new Map<number, { resolve: (v: number | boolean | typeof REFUSED) => void; reject: (e: Error) => void }>();
  #writer: Worker | undefined;
  /** Why the last writer thread stopped, until its replacement is ready. */
  #writerDown: string | undefined;
  #writerRestart: NodeJS.Timeout | undefined;
  /** Writer threads that stopped in a row without one that ran for WRITER_STABLE_MS. */
  #writerStops = 0;
  #seq = 0;
  #open = true;
  #closing = false;
  #closed: Promise<void> | undefined;

  /** Whether this session adds every committed change to the `changes` outbox. */
  readonly recordsChanges: boolean;

  /**
   * `writeEpoch`: instead of a random one (tests run two instances that must answer byte for byte alike).
   * `recordChanges`: fill the change outbox (set when the edge is purged on change).
   * `busyTimeoutMs`: SQLite's busy_timeout (5000; tests shorten it). `log`: where a writer thread's stop and
   * recovery are reported (standard error).
   */
  constructor(
    path: string,
    options: { writeEpoch?: string; recordChanges?: boolean; busyTimeoutMs?: number; log?: (line: string) => void } = {},
  ) {
    this.description = path;
    this.recordsChanges = options.recordChanges ?? false;
    this.#epoch = options.writeEpoch ?? randomEpoch();
    if (!EPOCH.test(this.#epoch)) throw new RangeError(`bad write epoch ${JSON.stringify(this.#epoch)}`);
    this.#busyTimeoutMs = options.busyTimeoutMs ?? BUSY_TIMEOUT_MS;
    if (!Number.isSafeInteger(this.#busyTimeoutMs) || this.#busyTimeoutMs < 0) throw new RangeError(`bad busy timeout ${this.#busyTimeoutMs}`);
    this.#log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
    makeDirectories(dirname(path));
    this.#db = new DatabaseSync(path);
    try {
      this.#db.exec(`PRAGMA busy_timeout = ${this.#busyTimeoutMs}`);
      this.#db.exec("PRAGMA journal_mode = WAL");
      this.#db.exec("PRAGMA synchronous = FULL");
      const { user_version: found } = this.#db.prepare("PRAGMA user_version").get() as { user_version: number };
      if (found > SCHEMA_VERSION) {
        throw new Error(
          `${path} has schema version ${found}, newer than this origin understands (${SCHEMA_VERSION}): upgrade the origin or point DATABASE_URL elsewhere`,
        );
      }
      // One transaction, so two processes opening a version 1 file at once do not both add the column.
      this.#db.exec("BEGIN IMMEDIATE");
      try {
        // Rows written without an epoch (before version 2, or by other tools) read this default: a constant
        // drawn once, when the table or the column is created.
        const epochColumn = `epoch TEXT NOT NULL DEFAULT '${randomEpoch()}'`;
        this.#db.exec(
          "CREATE TABLE IF NOT EXISTS items (" +
            " id TEXT PRIMARY KEY NOT NULL," +
            " version INTEGER NOT NULL," +
            ` ${epochColumn},` +
            " body BLOB" + // NULL = deleted (tombstone keeps the version)
            ") WITHOUT ROWID",
        );
        const columns = this.#db.prepare("PRAGMA table_info(items)").all() as { name: string }[];
        if (!columns.some((c) => c.name === "epoch")) this.#db.exec(`ALTER TABLE items ADD COLUMN ${epochColumn}`);
        // AUTOINCREMENT: a seq is never reused, even after pruning deleted the highest one (a key the purger
        // holds must never name a newer change). changed_at: ms since the Unix epoch, for pruning.
        this.#db.exec(
          "CREATE TABLE IF NOT EXISTS changes (" +
            " seq INTEGER PRIMARY KEY AUTOINCREMENT," +
            " id TEXT NOT NULL," +
            " purged INTEGER NOT NULL DEFAULT 0," +
            " changed_at INTEGER NOT NULL)",
        );
        this.#db.exec("CREATE INDEX IF NOT EXISTS changes_unpurged ON changes (seq) WHERE purged = 0");
        // Pruning finds old rows by this index, without walking the 10 minutes of young rows.
        this.#db.exec("CREATE INDEX IF NOT EXISTS changes_changed_at ON changes (changed_at)");
        this.#db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
        this.#db.exec("COMMIT");
      } catch (error) {
        this.#rollback();
        throw error;
      }
    } catch (error) {
      this.#db.close();
      throw error;
    }
    this.#get = this.#db.prepare("SELECT version, epoch, body FROM items WHERE id = ? AND body IS NOT NULL");
    this.#count = this.#db.prepare("SELECT count(*) AS n FROM items WHERE body IS NOT NULL");
    this.#ids = this.#db.prepare("SELECT id FROM items WHERE body IS NOT NULL");
    this.#ping = this.#db.prepare("SELECT 1 AS ok");
    this.#insertSeed = this.#db.prepare("INSERT OR IGNORE INTO items (id, version, epoch, body) VALUES (?, 1, ?, ?)");
    this.#recordSeed = this.#db.prepare("INSERT INTO changes (id, changed_at) VALUES (?, ?)");
    this.#pending = this.#db.prepare("SELECT seq, id FROM changes WHERE purged = 0 ORDER BY seq LIMIT ?");
    this.#lastPending = this.#db.prepare("SELECT seq FROM changes WHERE purged = 0 ORDER BY seq DESC LIMIT 1");
    this.#pendingCount = this.#db.prepare("SELECT count(*) AS n FROM (SELECT 1 FROM changes WHERE purged = 0 AND seq <= ? LIMIT ?)");
    this.#latest = this.#db.prepare("SELECT id, purged, changed_at AS changedAt FROM changes ORDER BY seq DESC LIMIT ?");

    this.#writerData = { path, epoch: this.#epoch, recordChanges: this.recordsChanges, busyTimeoutMs: this.#busyTimeoutMs };
    this.#startWriter();
  }

  #startWriter(): void {
    const writer = new Worker(new URL("./sqlite-writer.ts", import.meta.url), { workerData: this.#writerData });
    let readyAt: number | undefined;
    let crash: Error | undefined;
    writer.on("message", (message: WriterMessage) => {
      if ("ready" in message) {
        readyAt = performance.now();
        if (this.#writerDown !== undefined) this.#log(`origin: store writer thread for ${this.description} running again`);
        this.#writerDown = undefined;
        return;
      }
      const waiter = this.#waiting.get(message.seq);
      if (waiter === undefined) return;
      this.#waiting.delete(message.seq);
      if (message.ok) waiter.resolve(message.value);
      else waiter.reject(this.#writeError(message));
    });
    writer.on("error", (error) => {
      crash = error;
    });
    // Node delivers every reply the thread posted before "exit": the waiters left were not answered.
    writer.on("exit", (code) => this.#writerExited(code, crash, readyAt));
    this.#writer = writer;
  }

  #writeError(reply: Extract<WriteReply, { ok: false }>): Error {
    const outcome = reply.mayHaveCommitted ? "it may have committed" : "nothing was written";
    if (reply.busy) return this.#lockedError(`${reply.message}; ${outcome}`);
    // Not the origin's fault nor the client's: 503 (try again), one log line, not a 500 with a stack per write.
    if (reply.full) return new StoreUnavailableError(`SQLite ${this.description} has no room left (${reply.message}); ${outcome}: free space on its filesystem`);
    return new Error(`store write failed (${outcome}): ${reply.message}`);
  }

  #lockedError(detail: string, cause?: unknown): StoreUnavailableError {
    return new StoreUnavailableError(
      `SQLite ${this.description} stayed locked by another connection longer than busy_timeout (${this.#busyTimeoutMs} ms): ${detail}`,
      { cause },
    );
  }

  #writerExited(code: number, crash: Error | undefined, readyAt: number | undefined): void {
    this.#writer = undefined;
    const reason = crash === undefined ? `exit code ${code}` : crash.message;
    // A thread that never reported ready never read a request; one that did may have committed any it held.
    const error =
      readyAt === undefined
        ? new StoreUnavailableError(`the store's writer thread could not start (${reason}); nothing was written`, { cause: crash })
        : new StoreUnavailableError(`the store's writer thread stopped (${reason}) holding this write: it may have committed`, { cause: crash });
    for (const waiter of this.#waiting.values()) waiter.reject(error);
    this.#waiting.clear();
    if (this.#closing) return;
    if (readyAt !== undefined && performance.now() - readyAt >= WRITER_STABLE_MS) this.#writerStops = 0;
    const delayMs = this.#writerStops === 0 ? 0 : Math.min(WRITER_MAX_DELAY_MS, WRITER_BASE_DELAY_MS * 2 ** Math.min(this.#writerStops - 1, 30));
    this.#writerStops++;
    if (this.#writerDown === undefined) {
      this.#log(`origin: store writer thread for ${this.description} stopped (${reason}); writes fail (503) until it runs again; restarting it`);
    }
    this.#writerDown = reason;
    if (delayMs === 0) this.#startWriter(); // at once: writes sent from now on reach the new thread
    else {
      this.#writerRestart = setTimeout(() => {
        this.#writerRestart = undefined;
        if (!this.#closing) this.#startWriter();
      }, delayMs);
      this.#writerRestart.unref();
    }
  }

  /** The epoch this session stamps on what it writes. */
  get writeEpoch(): string {
    return this.#epoch;
  }

  get(id: string): Promise<StoredItem | undefined> {
    return this.#read(() => {
      const row = this.#get.get(id) as { version: number; epoch: string; body: Uint8Array } | undefined;
      return row === undefined ? undefined : { etag: etagFor(row.epoch, row.version), body: row.body };
    });
  }

  /** A read on this thread as a promise; a lock held past busy_timeout is StoreUnavailableError (503). */
  #read<T>(read: () => T): Promise<T> {
    try {
      return Promise.resolve(read());
    } catch (error) {
      return Promise.reject(isBusy(error) ? this.#lockedError((error as Error).message, error) : error);
    }
  }

  /**
   * A `condition` is evaluated by the writer thread in the transaction that writes (sqlite-writer.ts). No
   * transaction in the result: no feed reports a process's own writes back to it (other processes' writes
   * reach it through the cluster relay, `RelayedChangeFeed`).
   */
  async put(id: string, body: Uint8Array, condition?: WriteCondition): Promise<PutResult> {
    const request: WriteRequest = condition === undefined ? { seq: ++this.#seq, op: "put", id, body } : { seq: ++this.#seq, op: "put", id, body, condition };
    const version = await this.#send(request);
    if (version === refused) throw new PreconditionFailedError(id);
    return { etag: etagFor(this.#epoch, version as number), transaction: undefined };
  }

  async delete(id: string, condition?: WriteCondition): Promise<DeleteResult> {
    const request: WriteRequest = condition === undefined ? { seq: ++this.#seq, op: "delete", id } : { seq: ++this.#seq, op: "delete", id, condition };
    const deleted = await this.#send(request);
    if (deleted === refused) throw new PreconditionFailedError(id);
    return { deleted: deleted as boolean, transaction: undefined };
  }

  /** The oldest pending (not yet purged) outbox rows, committed ones only. */
  pendingChanges(limit: number): { seq: number; id: string }[] {
    return this.#pending.all(limit) as { seq: number; id: string }[];
  }

  /** The newest outbox rows, purged or pending, newest first (`changedAt`: ms since the Unix epoch). */
  latestChanges(limit: number): { id: string; purged: boolean; changedAt: number }[] {
    return (this.#latest.all(limit) as { id: string; purged: number; changedAt: number }[]).map((row) => ({ id: row.id, purged: row.purged === 1, changedAt: row.changedAt }));
  }

  /**
   * The highest pending seq (0 when none) and how many rows up to it are pending, counted up to `countCap`
   * only: counting runs on this thread (measured on a loaded 2-core machine: 1M pending rows took 60-120 ms
   * to count, the first 100,000 of them 4-30 ms).
   */
  pendingChangeSummary(countCap: number): { count: number; lastSeq: number } {
    const lastSeq = (this.#lastPending.get() as { seq: number } | undefined)?.seq ?? 0;
    const { n } = this.#pendingCount.get(lastSeq, countCap) as { n: number };
    return { count: n, lastSeq };
  }

  /** Marks these outbox rows purged (through the writer thread); resolves with how many were pending. */
  markChangesPurged(seqs: readonly number[]): Promise<number> {
    return this.#send({ seq: ++this.#seq, op: "mark", changes: seqs }) as Promise<number>;
  }

  /** Marks at most `limit` pending rows with seq ≤ `upTo` purged, oldest first; resolves with how many. */
  markChangesPurgedUpTo(upTo: number, limit: number): Promise<number> {
    return this.#send({ seq: ++this.#seq, op: "markUpTo", upTo, limit }) as Promise<number>;
  }

  /** Deletes at most `limit` rows: purged ones changed before `purgedBefore`, any before `anyBefore` (ms). */
  pruneChanges(purgedBefore: number, anyBefore: number, limit: number): Promise<number> {
    return this.#send({ seq: ++this.#seq, op: "prune", purgedBefore, anyBefore, limit }) as Promise<number>;
  }

  #send(request: WriteRequest): Promise<number | boolean | typeof REFUSED> {
    if (!this.#open || (this.#closing && request.op !== "close")) return Promise.reject(new Error("store is closed"));
    const writer = this.#writer;
    if (writer === undefined) {
      return Promise.reject(new StoreUnavailableError(`the store's writer thread is restarting (it stopped: ${this.#writerDown}); nothing was written`));
    }
    return new Promise((resolve, reject) => {
      this.#waiting.set(request.seq, { resolve, reject });
      writer.postMessage(request);
    });
  }

  count(): Promise<number> {
    return this.#read(() => (this.#count.get() as { n: number }).n);
  }

  async *ids(): AsyncIterable<readonly string[]> {
    let batch: string[] = [];
    for (const row of this.#ids.iterate() as Iterable<{ id: string }>) {
      batch.push(row.id);
      if (batch.length === ID_BATCH) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length > 0) yield batch;
  }

  seedIfEmpty(items: Iterable<readonly [string, Uint8Array]>): Promise<number> {
    return this.#read(() => this.#seedIfEmpty(items));
  }

  #seedIfEmpty(items: Iterable<readonly [string, Uint8Array]>): number {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const any = this.#db.prepare("SELECT 1 FROM items LIMIT 1").get();
      let inserted = 0;
      if (any === undefined) {
        const now = Date.now();
        for (const [id, body] of items) {
          if (Number(this.#insertSeed.run(id, this.#epoch, body).changes) === 0) continue;
          inserted++;
          // An edge may hold a 404, or an older database's copy, for a seeded id.
          if (this.recordsChanges) this.#recordSeed.run(id, now);
        }
      }
      this.#db.exec("COMMIT");
      return inserted;
    } catch (error) {
      this.#rollback();
      throw error;
    }
  }

  /** SQLite ends some failed transactions itself, and ROLLBACK without one would hide the error. */
  #rollback(): void {
    if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
  }

  /** False while the writer thread is down (writes would fail), as well as when this thread cannot read. */
  ping(): Promise<boolean> {
    if (!this.#open || this.#writerDown !== undefined) return Promise.resolve(false);
    try {
      return Promise.resolve(this.#ping.get() !== undefined);
    } catch {
      return Promise.resolve(false);
    }
  }

  close(): Promise<void> {
    return (this.#closed ??= (async () => {
      this.#closing = true;
      clearTimeout(this.#writerRestart);
      if (this.#writer !== undefined) {
        // Queued after every write already sent: the writer commits them, then closes its connection.
        await this.#send({ seq: ++this.#seq, op: "close" }).catch(() => undefined);
      }
      this.#open = false;
      await this.#writer?.terminate();
      this.#db.close();
    })());
  }
}
