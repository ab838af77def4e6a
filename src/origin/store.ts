import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { Worker } from "node:worker_threads";
import type { WriteReply, WriteRequest } from "./store-writer.ts";

/** One live item as stored: its minified JSON bytes and its version (the ETag source). */
export interface StoredItem {
  version: number;
  body: Uint8Array;
}

/**
 * The store behind the cache. Async on purpose: a networked store (PostgreSQL, planned) is, and the
 * coalescing loader in front of it must not depend on a read finishing synchronously.
 *
 * Versions are per item and never reused: a delete keeps a tombstone holding the version, so a later PUT
 * of the same id continues the count and an old ETag can never match new content.
 */
export interface ItemStore {
  get(id: string): Promise<StoredItem | undefined>;
  /** Durable (committed and synced) when the promise resolves; returns the new version. */
  put(id: string, body: Uint8Array): Promise<number>;
  /** Durable when the promise resolves; true if a live item was deleted. */
  delete(id: string): Promise<boolean>;
  count(): number;
  /** Inserts items only if the store holds none; returns how many were inserted. */
  seedIfEmpty(items: Iterable<readonly [string, Uint8Array]>): number;
  /** Cheap liveness probe for /healthz. */
  ping(): boolean;
  /** Waits for writes in flight, then closes. */
  close(): Promise<void>;
}

const SCHEMA_VERSION = 1;

/**
 * Embedded SQLite (node:sqlite), WAL journal with `synchronous = FULL`: every commit is fsynced before
 * `put`/`delete` resolve, so the 204 that follows is a durable promise.
 *
 * Reads are primary-key lookups on a WITHOUT ROWID table (a few microseconds) on the calling thread.
 * Writes go to a worker thread with its own connection (store-writer.ts), so an fsync never blocks the
 * event loop that serves reads, and writes that queue up while one commits share the next commit.
 */
export class SqliteItemStore implements ItemStore {
  readonly #db: DatabaseSync;
  readonly #get: StatementSync;
  readonly #count: StatementSync;
  readonly #ping: StatementSync;
  readonly #insertSeed: StatementSync;
  readonly #writer: Worker;
  readonly #waiting = new Map<number, { resolve: (v: number | boolean) => void; reject: (e: Error) => void }>();
  #seq = 0;
  #open = true;
  #closing = false;
  #closed: Promise<void> | undefined;
  #writerError: Error | undefined;

  constructor(path: string) {
    mkdirSync(dirname(path), { recursive: true });
    this.#db = new DatabaseSync(path);
    try {
      this.#db.exec("PRAGMA journal_mode = WAL");
      this.#db.exec("PRAGMA synchronous = FULL");
      this.#db.exec("PRAGMA busy_timeout = 5000");
      const { user_version: found } = this.#db.prepare("PRAGMA user_version").get() as { user_version: number };
      if (found > SCHEMA_VERSION) {
        throw new Error(
          `${path} has schema version ${found}, newer than this origin understands (${SCHEMA_VERSION}): upgrade the origin or point DATABASE_URL elsewhere`,
        );
      }
      this.#db.exec(
        "CREATE TABLE IF NOT EXISTS items (" +
          " id TEXT PRIMARY KEY NOT NULL," +
          " version INTEGER NOT NULL," +
          " body BLOB" + // NULL = deleted (tombstone keeps the version)
          ") WITHOUT ROWID",
      );
      this.#db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
    } catch (error) {
      this.#db.close();
      throw error;
    }
    this.#get = this.#db.prepare("SELECT version, body FROM items WHERE id = ? AND body IS NOT NULL");
    this.#count = this.#db.prepare("SELECT count(*) AS n FROM items WHERE body IS NOT NULL");
    this.#ping = this.#db.prepare("SELECT 1 AS ok");
    this.#insertSeed = this.#db.prepare("INSERT OR IGNORE INTO items (id, version, body) VALUES (?, 1, ?)");

    this.#writer = new Worker(new URL("./store-writer.ts", import.meta.url), { workerData: { path } });
    this.#writer.on("message", (reply: WriteReply) => {
      const waiter = this.#waiting.get(reply.seq);
      if (waiter === undefined) return;
      this.#waiting.delete(reply.seq);
      if (reply.ok) waiter.resolve(reply.value);
      else waiter.reject(new Error(`store write failed: ${reply.message}`));
    });
    const fail = (error: Error) => {
      this.#writerError = error;
      for (const waiter of this.#waiting.values()) waiter.reject(error);
      this.#waiting.clear();
    };
    this.#writer.on("error", fail);
    this.#writer.on("exit", (code) => {
      if (!this.#closing) fail(new Error(`store writer thread exited (${code})`));
    });
  }

  get(id: string): Promise<StoredItem | undefined> {
    const row = this.#get.get(id) as { version: number; body: Uint8Array } | undefined;
    return Promise.resolve(row);
  }

  put(id: string, body: Uint8Array): Promise<number> {
    return this.#send({ seq: ++this.#seq, op: "put", id, body }) as Promise<number>;
  }

  delete(id: string): Promise<boolean> {
    return this.#send({ seq: ++this.#seq, op: "delete", id }) as Promise<boolean>;
  }

  #send(request: WriteRequest): Promise<number | boolean> {
    if (!this.#open || (this.#closing && request.op !== "close")) return Promise.reject(new Error("store is closed"));
    if (this.#writerError !== undefined) return Promise.reject(this.#writerError);
    return new Promise((resolve, reject) => {
      this.#waiting.set(request.seq, { resolve, reject });
      this.#writer.postMessage(request);
    });
  }

  count(): number {
    return (this.#count.get() as { n: number }).n;
  }

  seedIfEmpty(items: Iterable<readonly [string, Uint8Array]>): number {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const any = this.#db.prepare("SELECT 1 FROM items LIMIT 1").get();
      let inserted = 0;
      if (any === undefined) {
        for (const [id, body] of items) inserted += Number(this.#insertSeed.run(id, body).changes);
      }
      this.#db.exec("COMMIT");
      return inserted;
    } catch (error) {
      this.#db.exec("ROLLBACK");
      throw error;
    }
  }

  ping(): boolean {
    if (!this.#open || this.#writerError !== undefined) return false;
    try {
      return this.#ping.get() !== undefined;
    } catch {
      return false;
    }
  }

  close(): Promise<void> {
    return (this.#closed ??= (async () => {
      this.#closing = true;
      if (this.#writerError === undefined) {
        // Queued after every write already sent: the writer commits them, then closes its connection.
        await this.#send({ seq: ++this.#seq, op: "close" }).catch(() => undefined);
      }
      this.#open = false;
      await this.#writer.terminate();
      this.#db.close();
    })());
  }
}
