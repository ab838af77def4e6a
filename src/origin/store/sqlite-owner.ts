// One origin per SQLite file: one process, or one cluster primary and its workers. SQLite tells no other
// process of a commit. The processes of one origin hear of each other's through their primary
// (cluster/change-relay.ts), but a second origin on the same file would hear of nothing: each would serve
// the other's writes stale for up to CACHE_TTL_SECONDS, and both would purge the edge from the same outbox.
//
// So an origin claims the file before it opens it, by holding an exclusive SQLite lock on a file beside it,
// `<file>-owner`, for as long as it runs (the lock, not the file, is the claim: the file stays, as `-wal`
// and `-shm` do). The operating system drops the lock when the process ends, however it ends, so a crash
// leaves nothing to clean up before the next start.
//
// node:sqlite is loaded when a claim is made, not with this module: main.ts imports the errors below (through
// start-failure.ts) before it has quieted node:sqlite's ExperimentalWarning.

import { mkdirSync, readFileSync, statSync } from "node:fs";
import { dirname } from "node:path";
import type { DatabaseSync } from "node:sqlite";
import { isBusy, sqliteResultCode } from "./sqlite-busy.ts";

/** The file whose lock says which origin serves `path`. */
export function ownerFileOf(path: string): string {
  return `${path}-owner`;
}

/** Another origin holds the file: the condition passes once it stops, so a service manager should retry. */
export class SqliteFileTakenError extends Error {
  constructor(path: string, holder: number | undefined) {
    super(
      `another origin${holder === undefined ? "" : ` (process ${holder})`} is serving ${path}: it holds the lock on ${ownerFileOf(path)}. ` +
        "Two origins on one SQLite file would each serve the other's writes stale and both purge the edge. " +
        "Stop the other one; for more processes on this file set ORIGIN_PROCESSES; for several instances use PostgreSQL (DATABASE_URL=postgres://…).",
    );
    this.name = "SqliteFileTakenError";
  }
}

/** The lock file cannot be made: a refusal, like a SQLite file the origin cannot use. */
export class SqliteOwnerFileError extends Error {
  constructor(path: string, cause: unknown) {
    super(
      `cannot open ${ownerFileOf(path)} (${cause instanceof Error ? cause.message : String(cause)}): the origin locks that file beside ${path} while it runs ` +
        "(SQLite keeps its -wal and -shm files there too); it must be a file, or absent, in a directory this user may write.",
    );
    this.name = "SqliteOwnerFileError";
  }
}

/** Held for as long as the origin runs; `release` ends the claim (closing the process does too). */
export interface SqliteClaim {
  release(): void;
}

/**
 * Claim `path` for this process, or throw SqliteFileTakenError naming the process that holds it. A path
 * that exists and is not a file (a directory) is the store's to refuse, with its own message: nothing is
 * created beside it. The caller must keep the claim referenced: a collected connection closes its file.
 */
export async function claimSqliteFile(path: string): Promise<SqliteClaim> {
  if (exists(path) && !statSync(path).isFile()) return { release() {} };
  mkdirSync(dirname(path), { recursive: true });
  const owner = ownerFileOf(path);
  const { DatabaseSync } = await import("node:sqlite");
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(owner);
  } catch (error) {
    throw new SqliteOwnerFileError(path, error);
  }
  try {
    // In exclusive locking mode SQLite never gives back a lock it took: the exclusive one taken here is
    // held until the connection closes. No busy timeout: a held lock is an answer, not a wait.
    db.exec("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; COMMIT");
  } catch (error) {
    db.close();
    if (isBusy(error)) throw new SqliteFileTakenError(path, lockHolder(owner));
    if (sqliteResultCode(error) === 8 /* SQLITE_READONLY */) throw new SqliteOwnerFileError(path, error);
    throw error;
  }
  return { release: () => db.close() };
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The process holding a POSIX lock on `file`, from Linux's /proc/locks (`1: POSIX ADVISORY WRITE <pid>
 * <major>:<minor>:<inode> <start> <end>`); undefined elsewhere, or when the holder is not visible here
 * (another PID namespace shows as 0 or -1). Only for the message: the lock itself decides.
 */
function lockHolder(file: string): number | undefined {
  try {
    const inode = statSync(file).ino;
    for (const line of readFileSync("/proc/locks", "latin1").split("\n")) {
      const fields = line.trim().split(/\s+/);
      if (fields[1] !== "POSIX" || !fields[5]?.endsWith(`:${inode}`)) continue;
      const pid = Number(fields[4]);
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid) return pid;
    }
  } catch {
    // No /proc/locks (not Linux): the message goes without the process.
  }
  return undefined;
}
