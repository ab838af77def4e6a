// One origin per SQLite file: one process, or one cluster primary and its workers. SQLite tells no other
// process of a commit. The processes of one origin hear of each other's through their primary
// (cluster/change-relay.ts), but a second origin on the same file would hear of nothing: each would serve
// the other's writes stale for up to CACHE_TTL_SECONDS, and both would purge the edge from the same outbox.
//
// So an origin claims the file before it opens it, by holding an exclusive SQLite lock on `<file>-owner`
// beside it (beside the file itself, through any symbolic link) for as long as it runs. The lock, not the
// file, is the claim: the file stays, as `-wal` and `-shm` do. The operating system drops the lock when the
// process ends, however it ends, so a crash leaves nothing to clean up before the next start.
//
// node:sqlite is loaded when a claim is made, not with this module: main.ts imports the errors below (through
// start-failure.ts) before it has quieted node:sqlite's ExperimentalWarning.

import { existsSync, readFileSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { DatabaseSync } from "node:sqlite";
import { isBusy, sqliteResultCode } from "./sqlite-busy.ts";
import { makeDirectories } from "./make-directories.ts";

/** The file whose lock says which origin serves `path`. */
function ownerFileOf(path: string): string {
  return `${path}-owner`;
}

/** Another origin holds the file: the condition passes once it stops, so a service manager should retry. */
export class SqliteFileTakenError extends Error {
  constructor(path: string, owner: string, holder: number | undefined) {
    super(
      `another origin${holder === undefined ? "" : ` (process ${holder})`} is serving ${path}: it holds the lock on ${owner}. ` +
        "Two origins on one SQLite file would each serve the other's writes stale and both purge the edge. " +
        "Stop the other one; for more processes on this file set ORIGIN_PROCESSES; for several instances use PostgreSQL (DATABASE_URL=postgres://…).",
    );
    this.name = "SqliteFileTakenError";
  }
}

/**
 * The lock file cannot be used (not a SQLite file, a directory, not writable): a refusal, like a SQLite file
 * the origin cannot use, but never one that blames the database beside it.
 */
export class SqliteOwnerFileError extends Error {
  constructor(path: string, owner: string, cause: unknown) {
    super(
      `cannot use ${owner} (${cause instanceof Error ? cause.message : String(cause)}), the file the origin locks beside ${path} while it runs; ` +
        "it holds no data: move away or delete whatever is there (it is created again), and let this user write its directory (SQLite keeps its -wal and -shm files there too).",
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
  if (existsSync(path) && !statSync(path).isFile()) return { release() {} };
  makeDirectories(dirname(path));
  // The file as SQLite opens it: through a symbolic link (to it or to its directory), the same database.
  const owner = ownerFileOf(existsSync(path) ? realpathSync(path) : join(realpathSync(dirname(path)), basename(path)));
  const { DatabaseSync } = await import("node:sqlite");
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(owner);
  } catch (error) {
    throw new SqliteOwnerFileError(path, owner, error);
  }
  try {
    // In exclusive locking mode SQLite never gives back a lock it took: the exclusive one taken here is
    // held until the connection closes. No busy timeout: a held lock is an answer, not a wait.
    db.exec("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; COMMIT");
  } catch (error) {
    db.close();
    if (isBusy(error)) throw new SqliteFileTakenError(path, owner, lockHolder(owner));
    // A lock file that is no usable SQLite file is named as such, never the data beside it; anything else
    // (a full disk, an I/O error) is a failure to start like any other, which a restart may mend.
    if (LOCK_FILE_PROBLEMS.has(sqliteResultCode(error) ?? -1)) throw new SqliteOwnerFileError(path, owner, error);
    throw error;
  }
  return { release: () => db.close() };
}

/** SQLITE_READONLY, SQLITE_CORRUPT, SQLITE_CANTOPEN, SQLITE_NOTADB: the lock file itself cannot be used. */
const LOCK_FILE_PROBLEMS = new Set([8, 11, 14, 26]);

/**
 * The process holding a POSIX lock on `file`, from Linux's /proc/locks (`1: POSIX ADVISORY WRITE <pid>
 * <major>:<minor>:<inode> <start> <end>`); undefined elsewhere, or when the holder is not visible here
 * (another PID namespace shows as 0 or -1). Only for the message: the lock itself decides.
 */
function lockHolder(file: string): number | undefined {
  try {
    // The kernel's `MAJOR:MINOR:INODE` of the file (linux/kdev_t.h's split of dev_t, in hex).
    const { dev, ino } = statSync(file, { bigint: true });
    const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn);
    const minor = (dev & 0xffn) | ((dev >> 12n) & ~0xffn);
    const id = `${major.toString(16).padStart(2, "0")}:${minor.toString(16).padStart(2, "0")}:${ino}`;
    const holders = readFileSync("/proc/locks", "latin1")
      .split("\n")
      .map((line) => line.trim().split(/\s+/))
      .filter((fields) => fields[1] === "POSIX" && fields[5]?.endsWith(`:${ino}`))
      .map((fields) => ({ file: fields[5], pid: Number(fields[4]) }))
      .filter(({ pid }) => Number.isInteger(pid) && pid > 0 && pid !== process.pid);
    // The device as stat tells it and as the kernel prints it differ on some filesystems (btrfs subvolumes):
    // then the inode alone, if only one process holds a lock on it.
    const exact = holders.find((h) => h.file === id);
    if (exact !== undefined) return exact.pid;
    const pids = new Set(holders.map((h) => h.pid));
    if (pids.size === 1) return [...pids][0];
  } catch {
    // No /proc/locks (not Linux): the message goes without the process.
  }
  return undefined;
}
