// DATABASE_URL: which store the origin uses. A SQLite file (a plain path, `sqlite:`, `file:`) is the
// embedded default; `postgres://` / `postgresql://` selects PostgreSQL. Every other form is refused with
// a message naming the variable, and no message ever echoes a password.

import { isAbsolute, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { ConfigProblem } from "../../shared/config/config-error.ts";

export const DEFAULT_DATABASE_URL = "./data/items.sqlite";

export type DatabaseSpec =
  | { kind: "sqlite"; /** Absolute path of the file. */ path: string }
  | {
      kind: "postgres";
      /** The URL as given (it may hold a password: never print it). */
      url: string;
      /** `postgres://user@host:port/db`: the URL without its password, for logs and errors. */
      display: string;
    };

const variable = "DATABASE_URL";

export function parseDatabaseUrl(raw: string, cwd: string, problems: ConfigProblem[]): DatabaseSpec {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(raw)?.[1]?.toLowerCase();
  // A one-letter "scheme" is a Windows drive (C:\data\items.sqlite): a plain path.
  if (scheme === undefined || scheme.length === 1) return sqlite(raw, cwd, problems);
  if (scheme === "postgres" || scheme === "postgresql") return postgres(raw, problems);
  if (scheme === "file") {
    if (raw.startsWith("file://")) {
      try {
        // fileURLToPath drops a query or fragment: refuse one rather than ignore it (mode=ro would be read-write).
        const url = new URL(raw);
        if (url.search !== "" || url.hash !== "") return refuseParameters(raw, problems);
        return sqlite(fileURLToPath(url), cwd, problems);
      } catch (error) {
        problems.push({ variable, message: `"${redact(raw)}" is not a usable file: URL (${(error as Error).message}); use file:///absolute/path.sqlite or a plain path.` });
        return { kind: "sqlite", path: "" };
      }
    }
    return sqlite(decodePath(raw.slice("file:".length), raw, problems), cwd, problems);
  }
  if (scheme === "sqlite" || scheme === "sqlite3") {
    let rest = raw.slice(scheme.length + 1);
    if (rest.startsWith("//")) {
      const slash = rest.indexOf("/", 2);
      const host = slash === -1 ? rest.slice(2) : rest.slice(2, slash);
      if (host !== "" && host !== "localhost") {
        const shown = redact(`x://${host}`).slice("x://".length);
        problems.push({
          variable,
          message: `"${redact(raw)}" names a host (${shown}): SQLite is a local file; use sqlite:./relative/path.sqlite or sqlite:///absolute/path.sqlite, or postgres://${shown}/… for PostgreSQL.`,
        });
        return { kind: "sqlite", path: "" };
      }
      rest = slash === -1 ? "" : rest.slice(slash);
    }
    return sqlite(decodePath(rest, raw, problems), cwd, problems);
  }
  problems.push({
    variable,
    message: `"${redact(raw)}" has an unsupported scheme "${scheme}:"; use a SQLite path such as ${DEFAULT_DATABASE_URL}, or postgres://user@host:5432/database.`,
  });
  return { kind: "sqlite", path: "" };
}

/** The fix for a URL that does not parse, most often a password with a reserved character left as is. */
const URL_SYNTAX_HINT = "write postgres://user:password@host:5432/database, with any @ / : ? # % in the user or password percent-encoded (@ as %40, / as %2F)";

function postgres(raw: string, problems: ConfigProblem[]): DatabaseSpec {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    problems.push({ variable, message: `"${redact(raw)}" is not a valid URL; ${URL_SYNTAX_HINT}.` });
    return { kind: "postgres", url: raw, display: redact(raw) };
  }
  if (url.searchParams.get("host")?.startsWith("/")) {
    // The driver would send `host` to the server as a setting ("unrecognized configuration parameter").
    problems.push({ variable, message: `"${redact(raw)}" names a Unix socket (?host=/…), which the origin's PostgreSQL driver does not take from a URL; connect over TCP: postgres://user:password@127.0.0.1:5432/database.` });
  } else if (url.hostname === "" && !url.searchParams.has("host")) {
    problems.push({ variable, message: `"${redact(raw)}" names no host; write postgres://user:password@host:5432/database.` });
  }
  if (url.pathname === "" || url.pathname === "/") {
    problems.push({ variable, message: `"${redact(raw)}" names no database; add it after the host: postgres://user@host:5432/items.` });
  }
  return { kind: "postgres", url: raw, display: redact(raw) };
}

/**
 * The URL with any password replaced, so errors and logs never carry it. A user or password written without
 * percent-encoding may hold `@` (Azure's `user@server`) or `/` itself: everything from the first `:` after
 * the user to the last `@` is masked, which may hide more than the password (an `@` later in the URL) but
 * never less.
 */
export function redact(raw: string): string {
  return raw.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/:]*):.*@/is, "$1:***@").replace(/([?&](?:ssl)?password=)[^&#]*/gi, "$1***");
}


/** A SQLite URL with a query or fragment: the origin takes none (`?mode=ro` would otherwise be ignored). */
function refuseParameters(raw: string, problems: ConfigProblem[]): DatabaseSpec {
  problems.push({ variable, message: `"${redact(raw)}" has URL parameters, which the origin does not support: remove "?…" and "#…".` });
  return { kind: "sqlite", path: "" };
}

function decodePath(path: string, raw: string, problems: ConfigProblem[]): string | undefined {
  if (path.includes("?") || path.includes("#")) {
    refuseParameters(raw, problems);
    return undefined;
  }
  try {
    return decodeURIComponent(path);
  } catch {
    problems.push({ variable, message: `"${raw}" has a broken %-escape: write the path plainly.` });
    return undefined;
  }
}

function sqlite(path: string | undefined, cwd: string, problems: ConfigProblem[]): DatabaseSpec {
  if (path === undefined) return { kind: "sqlite", path: "" };
  if (path === "") {
    problems.push({ variable, message: `has no path: set it to a SQLite file such as ${DEFAULT_DATABASE_URL}.` });
    return { kind: "sqlite", path: "" };
  }
  if (path === ":memory:" || path.includes("\0")) {
    problems.push({
      variable,
      message: `"${path}" is not a file: the origin needs a file so writes survive a restart (e.g. ${DEFAULT_DATABASE_URL}).`,
    });
    return { kind: "sqlite", path: "" };
  }
  return { kind: "sqlite", path: isAbsolute(path) ? path : resolve(cwd, path) };
}
