// The SQLite writer, run in a worker thread by SqliteItemStore: every PUT/DELETE commits here, with its
// fsync (synchronous = FULL), so a slow disk never blocks the event loop that serves reads. Writes that
// arrive while one commit is running are committed together in the next transaction (group commit); each
// caller is answered only after the transaction holding its write has committed. With `recordChanges` each
// PUT and each DELETE that removed a live item also records the id in the `changes` outbox, in the same
// transaction, and the purger's writes to that outbox (marking changes purged, pruning) commit here too.
//
// A failed write never ends the thread: it is answered (with whether it may have committed) and the next
// batch is served. Another connection holding SQLite's write lock past busy_timeout (another origin process
// stalled in its fsync, a backup tool, another program) fails the batch waiting for it, nothing begun.
// Should the thread end anyway, SqliteItemStore starts a new one.
//
// A conditional write (If-Match / If-None-Match) reads the item's ETag inside the transaction that writes
// it, and one whose condition does not hold is answered REFUSED having written nothing (no row, no outbox
// entry); its neighbours in the batch are unaffected.

import { parentPort, workerData } from "node:worker_threads";
import { etagFor } from "./etag.ts";
import { conditionHolds, type WriteCondition } from "./item-store.ts";
import { quietSqliteWarning } from "./quiet-sqlite-warning.ts";
import { isBusy, isFull } from "./sqlite-busy.ts";

export type WriteRequest =
  | { seq: number; op: "put"; id: string; body: Uint8Array; condition?: WriteCondition }
  | { seq: number; op: "delete"; id: string; condition?: WriteCondition }
  /** Marks these outbox rows purged; value: how many were pending. */
  | { seq: number; op: "mark"; changes: readonly number[] }
  /** Marks at most `limit` pending outbox rows with seq ≤ `upTo` purged (oldest first); value: how many. */
  | { seq: number; op: "markUpTo"; upTo: number; limit: number }
  /** Deletes at most `limit` outbox rows: purged ones changed before `purgedBefore`, any changed before `anyBefore` (ms). */
  | { seq: number; op: "prune"; purgedBefore: number; anyBefore: number; limit: number }
  | { seq: number; op: "close" };

/** The value of a conditional put or delete whose condition did not hold: nothing was written. */
export const REFUSED = "refused";

export type WriteReply =
  | { seq: number; ok: true; value: number | boolean | typeof REFUSED }
  | {
      seq: number;
      ok: false;
      message: string;
      /** SQLITE_BUSY or SQLITE_LOCKED: another connection held the lock past busy_timeout. */
      busy: boolean;
      /** SQLITE_FULL: no room left on the disk. */
      full: boolean;
      /** False: certainly not committed (never begun, or rolled back). True: it may have committed. */
      mayHaveCommitted: boolean;
    };

/** What the thread posts: replies, and `ready` once its connection is open (before it reads a request). */
export type WriterMessage = WriteReply | { ready: true };

type Write = Exclude<WriteRequest, { op: "close" }>;

export interface WriterData {
  path: string;
  epoch: string;
  recordChanges: boolean;
  busyTimeoutMs: number;
}

if (parentPort !== null) {
  const port = parentPort;
  quietSqliteWarning();
  const { DatabaseSync } = await import("node:sqlite");
  const { path, epoch, recordChanges, busyTimeoutMs } = workerData as WriterData;
  const db = new DatabaseSync(path);
  db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`); // first: the pragmas below may wait for a lock too
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = FULL");
  const put = db.prepare(
    "INSERT INTO items (id, version, epoch, body) VALUES (?, 1, ?, ?)" +
      " ON CONFLICT (id) DO UPDATE SET version = version + 1, epoch = excluded.epoch, body = excluded.body" +
      " RETURNING version",
  );
  const del = db.prepare(
    "UPDATE items SET version = version + 1, body = NULL WHERE id = ? AND body IS NOT NULL RETURNING version",
  );
  const current = db.prepare("SELECT version, epoch FROM items WHERE id = ? AND body IS NOT NULL");
  const record = db.prepare("INSERT INTO changes (id, changed_at) VALUES (?, ?)");
  const mark = db.prepare("UPDATE changes SET purged = 1 WHERE seq = ? AND purged = 0");
  const markUpTo = db.prepare(
    "UPDATE changes SET purged = 1 WHERE seq IN (SELECT seq FROM changes WHERE purged = 0 AND seq <= ? ORDER BY seq LIMIT ?)",
  );
  const prune = db.prepare(
    "DELETE FROM changes WHERE seq IN (SELECT seq FROM changes WHERE changed_at < ? AND (purged = 1 OR changed_at < ?) LIMIT ?)",
  );

  const changed = (id: string) => {
    if (recordChanges) record.run(id, Date.now());
  };

  /** Evaluated inside the transaction that writes (BEGIN IMMEDIATE: nobody else writes until it ends). */
  const holds = (id: string, condition: WriteCondition): boolean => {
    const row = current.get(id) as { version: number; epoch: string } | undefined;
    return conditionHolds(condition, row === undefined ? undefined : etagFor(row.epoch, row.version));
  };

  const apply = (m: Write): number | boolean | typeof REFUSED => {
    switch (m.op) {
      case "put": {
        if (m.condition !== undefined && !holds(m.id, m.condition)) return REFUSED;
        const { version } = put.get(m.id, epoch, m.body) as { version: number };
        changed(m.id);
        return version;
      }
      case "delete": {
        if (m.condition !== undefined && !holds(m.id, m.condition)) return REFUSED;
        const deleted = del.get(m.id) !== undefined;
        if (deleted) changed(m.id); // deleting nothing changes nothing the edge may hold
        return deleted;
      }
      case "mark":
        return m.changes.reduce((n, seq) => n + Number(mark.run(seq).changes), 0);
      case "markUpTo":
        return Number(markUpTo.run(m.upTo, m.limit).changes);
      case "prune":
        return Number(prune.run(m.purgedBefore, m.anyBefore, m.limit).changes);
    }
  };

  const failed = (batch: Write[], error: unknown, mayHaveCommitted: boolean): WriteReply[] => {
    const message = (error as Error)?.message ?? String(error);
    const busy = isBusy(error);
    const full = isFull(error);
    return batch.map((m) => ({ seq: m.seq, ok: false, message, busy, full, mayHaveCommitted }));
  };
  // SQLite ends some failed transactions itself (SQLITE_FULL, SQLITE_IOERR, SQLITE_BUSY, SQLITE_NOMEM), and
  // ROLLBACK without one throws. A ROLLBACK that fails all the same ends the thread: closing the connection
  // rolls back, and the store reports this batch and the queued writes as possibly committed.
  const rollback = () => {
    if (db.isTransaction) db.exec("ROLLBACK");
  };

  const commit = (batch: Write[]): WriteReply[] => {
    try {
      db.exec("BEGIN IMMEDIATE");
    } catch (error) {
      // Typically the write lock, held by another connection past busy_timeout. Retrying each write on its
      // own would keep each caller waiting another busy_timeout.
      return failed(batch, error, false);
    }
    let values: (number | boolean | typeof REFUSED)[];
    try {
      values = batch.map(apply);
    } catch (error) {
      rollback();
      if (batch.length === 1 || isBusy(error) || isFull(error)) return failed(batch, error, false);
      // One bad write must not fail its neighbours: retry each on its own.
      return batch.flatMap((m) => commit([m]));
    }
    try {
      db.exec("COMMIT");
    } catch (error) {
      // Still open: nothing was committed (SQLITE_BUSY). Ended by SQLite: it may have failed after the WAL
      // frames were written (an I/O error in the fsync), and a later recovery may find them committed.
      // A full disk is the exception: SQLite rolls the transaction back, so nothing was committed.
      if (!db.isTransaction) return failed(batch, error, !isFull(error));
      rollback();
      return failed(batch, error, false);
    }
    return batch.map((m, i) => ({ seq: m.seq, ok: true, value: values[i]! }));
  };

  let queue: WriteRequest[] = [];
  const flush = () => {
    const batch = queue;
    queue = [];
    const closeAt = batch.findIndex((m) => m.op === "close");
    const writes = (closeAt === -1 ? batch : batch.slice(0, closeAt)) as Write[];
    if (writes.length > 0) for (const reply of commit(writes)) port.postMessage(reply);
    if (closeAt !== -1) {
      db.close();
      port.postMessage({ seq: batch[closeAt]!.seq, ok: true, value: true } satisfies WriteReply);
      port.close();
    }
  };
  port.on("message", (m: WriteRequest) => {
    queue.push(m);
    if (queue.length === 1) setImmediate(flush);
  });
  port.postMessage({ ready: true } satisfies WriterMessage);
}
