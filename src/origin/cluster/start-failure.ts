// Why an origin process could not start, said the way an operator can act on it, and the exit code that
// goes with it: 2 for a configuration refused at start (PostgreSQL checks: unknown table, missing trigger,
// login refused), which a service manager should not retry; 75 (EX_TEMPFAIL, sysexits.h) when the store
// cannot be reached for now (not running yet, starting up, out of connections), which it should retry, and
// the cluster primary retries for as long as it lasts, or when its SQLite file is served by another origin
// (found by main.ts before any worker starts: a service manager retries that); 1 for anything else. Shared
// by the single process (main.ts) and each cluster worker, so both explain a failure alike.

import { ConfigError } from "../../shared/config/config-error.ts";
import type { OriginConfig } from "../config/parse-origin-config.ts";
import { StoreUnavailableError } from "../store/item-store.ts";
import { sqliteResultCode } from "../store/sqlite-busy.ts";
import { SqliteFileTakenError, SqliteOwnerFileError } from "../store/sqlite-owner.ts";

/** The exit code of a start that failed because the store could not be reached for now. */
export const EXIT_TEMPORARY = 75;

export interface StartFailure {
  message: string;
  exitCode: 1 | 2 | typeof EXIT_TEMPORARY;
}

export function explainStartFailure(error: unknown, config: OriginConfig): StartFailure {
  if (error instanceof ConfigError) return { message: `origin: ${error.message}`, exitCode: 2 };
  if (error instanceof StoreUnavailableError) return { message: `origin: ${error.message}`, exitCode: EXIT_TEMPORARY };
  // Retried: the other origin may be the one this start replaces, still closing.
  if (error instanceof SqliteFileTakenError) return { message: `origin: DATABASE_URL: ${error.message}`, exitCode: EXIT_TEMPORARY };
  if (error instanceof SqliteOwnerFileError) return { message: `origin: DATABASE_URL: ${error.message}`, exitCode: 2 };
  const e = error as NodeJS.ErrnoException;
  if (e.code === "EADDRINUSE") {
    return { message: `origin: cannot listen: ${e.message}. Another process holds the port: stop it or set PORT / METRICS_PORT`, exitCode: 1 };
  }
  if ((e.code === "EACCES" && (e.syscall === "listen" || e.syscall === "bind")) || e.code === "EADDRNOTAVAIL") {
    return { message: `origin: cannot listen: ${e.message}. Check HOST / PORT / METRICS_HOST / METRICS_PORT`, exitCode: 1 };
  }
  if (e.code === "EAI_AGAIN" || e.code === "EAI_FAIL") {
    return { message: `origin: cannot listen: ${e.message}: the resolver could not answer for HOST / METRICS_HOST now (exit 1: retried)`, exitCode: 1 };
  }
  if (config.database.kind === "sqlite") {
    const fix = sqliteFileProblem(error, config.database.path);
    if (fix !== undefined) return { message: `origin: DATABASE_URL: ${fix}`, exitCode: 2 };
  }
  const where = config.database.kind === "sqlite" ? config.database.path : config.database.display;
  return { message: `origin: cannot start (DATABASE_URL → ${where}): ${e.stack ?? e.message}`, exitCode: 1 };
}

/**
 * A SQLite file (or its directory) the origin cannot use, with the fix: a restart cannot mend any of these,
 * so it is a refusal (exit 2), not a failure a service manager retries every few seconds.
 */
function sqliteFileProblem(error: unknown, path: string): string | undefined {
  const e = error as { code?: string; message?: string };
  const message = e.message ?? String(error);
  if (e.code === "ENOENT") {
    return `cannot create ${path} (${message}): its directory cannot be made there; point DATABASE_URL at a file in a directory this user may create or write.`;
  }
  if (e.code === "EACCES" || e.code === "EPERM" || e.code === "EROFS" || e.code === "ENOTDIR") {
    return `cannot create ${path} (${message}): make its directory writable by this user, or point DATABASE_URL at a file in one that is.`;
  }
  switch (sqliteResultCode(error)) {
    case 14: // SQLITE_CANTOPEN
      return `cannot open ${path} (${message}): DATABASE_URL must name a file (not a directory) in a directory this user may write.`;
    case 8: // SQLITE_READONLY
      return `${path} is read-only to this user (${message}): the origin writes to it and to its -wal and -shm files beside it; make the file and its directory writable.`;
    case 11: // SQLITE_CORRUPT
    case 26: // SQLITE_NOTADB
      return `${path} is not a usable SQLite database (${message}): restore it from a backup, or move it away to start with an empty store.`;
    default:
      return undefined;
  }
}
