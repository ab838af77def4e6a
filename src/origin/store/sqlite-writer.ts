// The SQLite writer, run in a worker thread by SqliteItemStore: every PUT/DELETE commits here, with its
// fsync (synchronous = FULL), so a slow disk never blocks the event loop that serves reads. Writes that
// arrive while one commit is running are committed together in the next transaction (group commit); each
// caller is answered only after the transaction holding its write has committed.

import { parentPort, workerData } from "node:worker_threads";
import { quietSqliteWarning } from "./quiet-sqlite-warning.ts";

export type WriteRequest =
  | { seq: number; op: "put"; id: string; body: Uint8Array }
  | { seq: number; op: "delete"; id: string }
  | { seq: number; op: "close" };

export type WriteReply = { seq: number; ok: true; value: number | boolean } | { seq: number; ok: false; message: string };

if (parentPort !== null) {
  const port = parentPort;
  quietSqliteWarning();
  const { DatabaseSync } = await import("node:sqlite");
  const { path, epoch } = workerData as { path: string; epoch: string };
  const db = new DatabaseSync(path);
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = FULL");
  db.exec("PRAGMA busy_timeout = 5000");
  const put = db.prepare(
    "INSERT INTO items (id, version, epoch, body) VALUES (?, 1, ?, ?)" +
      " ON CONFLICT (id) DO UPDATE SET version = version + 1, epoch = excluded.epoch, body = excluded.body" +
      " RETURNING version",
  );
  const del = db.prepare(
    "UPDATE items SET version = version + 1, body = NULL WHERE id = ? AND body IS NOT NULL RETURNING version",
  );

  const apply = (m: Exclude<WriteRequest, { op: "close" }>): number | boolean =>
    m.op === "put" ? (put.get(m.id, epoch, m.body) as { version: number }).version : del.get(m.id) !== undefined;

  const commit = (batch: Exclude<WriteRequest, { op: "close" }>[]): WriteReply[] => {
    db.exec("BEGIN IMMEDIATE");
    try {
      const values = batch.map(apply);
      db.exec("COMMIT");
      return batch.map((m, i) => ({ seq: m.seq, ok: true, value: values[i]! }));
    } catch (error) {
      db.exec("ROLLBACK");
      if (batch.length === 1) return [{ seq: batch[0]!.seq, ok: false, message: (error as Error).message }];
      // One bad write must not fail its neighbours: retry each on its own.
      return batch.flatMap((m) => commit([m]));
    }
  };

  let queue: WriteRequest[] = [];
  const flush = () => {
    const batch = queue;
    queue = [];
    const closeAt = batch.findIndex((m) => m.op === "close");
    const writes = (closeAt === -1 ? batch : batch.slice(0, closeAt)) as Exclude<WriteRequest, { op: "close" }>[];
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
}
