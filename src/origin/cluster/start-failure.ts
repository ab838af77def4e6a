// Why an origin process could not start, said the way an operator can act on it, and the exit code that
// goes with it: 2 for a configuration refused at start (PostgreSQL checks: unknown table, missing trigger,
// login refused), which a service manager should not retry; 75 (EX_TEMPFAIL, sysexits.h) when the store
// cannot be reached for now (not running yet, starting up, out of connections), which it should retry, and
// the cluster primary retries for as long as it lasts; 1 for anything else. Shared by the single process (main.ts) and each cluster worker,
// so both explain a failure alike.

import { ConfigError } from "../../shared/config/config-error.ts";
import type { OriginConfig } from "../config/parse-origin-config.ts";
import { StoreUnavailableError } from "../store/item-store.ts";

/** The exit code of a start that failed because the store could not be reached for now. */
export const EXIT_TEMPORARY = 75;

export interface StartFailure {
  message: string;
  exitCode: 1 | 2 | typeof EXIT_TEMPORARY;
}

export function explainStartFailure(error: unknown, config: OriginConfig): StartFailure {
  if (error instanceof ConfigError) return { message: `origin: ${error.message}`, exitCode: 2 };
  if (error instanceof StoreUnavailableError) return { message: `origin: ${error.message}`, exitCode: EXIT_TEMPORARY };
  const e = error as NodeJS.ErrnoException;
  if (e.code === "EADDRINUSE") {
    return { message: `origin: cannot listen: ${e.message}. Another process holds the port: stop it or set PORT / METRICS_PORT`, exitCode: 1 };
  }
  if (e.code === "EACCES" || e.code === "EADDRNOTAVAIL") {
    return { message: `origin: cannot listen: ${e.message}. Check HOST / PORT / METRICS_HOST / METRICS_PORT`, exitCode: 1 };
  }
  const where = config.database.kind === "sqlite" ? config.database.path : config.database.display;
  return { message: `origin: cannot start (DATABASE_URL → ${where}): ${e.stack ?? e.message}`, exitCode: 1 };
}
