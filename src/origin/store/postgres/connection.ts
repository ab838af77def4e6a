// Connections to PostgreSQL (porsager's `postgres`), every query under a deadline, and every failure turned
// into a StoreUnavailableError that says why. What the driver does on its own, measured against a real
// server (PostgreSQL 15, postgres 3.4.9): a query to a stopped server rejects within milliseconds
// (ECONNREFUSED), but queries issued while the pool is in its reconnect backoff wait for the reconnection
// (up to ~15 s), a blackholed server holds a connect for `connect_timeout`, and a frozen server holds a
// query forever (cancel() cannot reach it). So each query gets our own deadline: cancel() where the
// server can hear it, and an answer to the caller in any case.

import postgres, { type Fragment, type PendingQuery, type Row, type Sql, type TransactionSql } from "postgres";
import { StoreUnavailableError } from "../item-store.ts";

export interface PostgresOptions {
  url: string;
  /** Connections in the pool. */
  poolSize: number;
  /** Deadline of one store call, ms. */
  timeoutMs: number;
  /** Shown in pg_stat_activity, so an operator can tell the origin's connections apart. */
  applicationName: string;
}

export function openPool(options: PostgresOptions, max = options.poolSize, onclose?: (connection: number) => void): Sql {
  return postgres(options.url, {
    max,
    // The driver's default backoff grows to 10-20 s between reconnects (measured: a listener re-LISTENed
    // 7.9 s after a 30 s outage ended); a store that is back should be used within a second.
    backoff: (attempt) => Math.min(0.05 * 2 ** attempt, 1),
    ...(onclose === undefined ? {} : { onclose }),
    // Seconds. A connect that takes longer than a query may is a store that is not there.
    connect_timeout: Math.max(1, Math.ceil(options.timeoutMs / 1000)),
    idle_timeout: 60,
    max_lifetime: 30 * 60,
    // jit off: every query here is a point lookup or a poll of a one-row table, and autovacuum never
    // analyzes a table that small, so the planner guesses ~1,500 rows, crosses jit_above_cost and spent
    // 140 ms compiling each 0.02 ms feed poll (measured with bench:cluster: one idle core per 3 instances).
    connection: { application_name: options.applicationName, statement_timeout: options.timeoutMs, jit: "off" },
    onnotice: () => {},
    // No query of the driver's own on each new connection (the array types): postgres 3.4.9 drops that query's
    // promise, so a connection terminated while it runs (pg_terminate_backend, a failover, a proxy's reset)
    // was an unhandled rejection that ended the process (porsager/postgres#1192, #1223). Without the types the
    // driver cannot send a JS array: lists go as one text parameter (anyOf).
    fetch_types: false,
    // Numbers come back as strings (int8, xid8): the callers decide what to make of them.
  });
}

/**
 * `ANY(…)` of `values` sent as one text parameter, each element read as `type` (values hold no comma): the
 * pools have no array types to send a JS array with (openPool). `null` is no list, and matches nothing.
 */
export function anyOf(sql: Sql | TransactionSql, values: readonly string[] | null, type: "text" | "bigint" | "oid" | "xid8"): Fragment {
  const list = values === null ? null : values.join(",");
  switch (type) {
    case "text":
      return sql`ANY(string_to_array(${list}::text, ','))`;
    case "bigint":
      return sql`ANY(string_to_array(${list}::text, ',')::bigint[])`;
    case "oid":
      return sql`ANY(string_to_array(${list}::text, ',')::oid[])`;
    case "xid8":
      return sql`ANY(string_to_array(${list}::text, ',')::xid8[])`;
  }
}

/** `query`, or a StoreUnavailableError once `ms` have passed (the query is cancelled). */
export function withDeadline<T extends readonly Row[]>(query: PendingQuery<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      query.cancel();
      reject(new StoreUnavailableError(`PostgreSQL did not answer ${what} within ${ms} ms (STORE_TIMEOUT_MS)`, { timedOut: true }));
    }, ms);
  });
  return Promise.race([query as Promise<T>, expired]).then(
    (rows) => {
      clearTimeout(timer);
      return rows;
    },
    (error: unknown) => {
      clearTimeout(timer);
      throw unavailable(error, what);
    },
  );
}

/**
 * Whether `probe` (/healthz of both PostgreSQL stores) runs within `timeoutMs`. A probe that reads no row
 * but names what reads name (the table, its columns) fails as they would: a table renamed or a privilege
 * revoked while the origin runs turns /healthz 503, not only every miss.
 */
export async function answers<T extends readonly Row[]>(probe: PendingQuery<T>, timeoutMs: number): Promise<boolean> {
  try {
    await withDeadline(probe, timeoutMs, "ping");
    return true;
  } catch {
    return false;
  }
}

/** Ends the pool, giving queries in flight 5 s to finish. */
export function closePool(sql: Sql): Promise<void> {
  return sql.end({ timeout: 5 });
}

/** Connection-class SQLSTATEs: the server is not there, going away, or refusing connections for now. */
const UNAVAILABLE_STATES = new Set(["57P01", "57P02", "57P03", "53300", "57014"]);

/** A driver or server failure as the origin reports it: what was being done and why it failed. */
export function unavailable(error: unknown, what: string): StoreUnavailableError {
  if (error instanceof StoreUnavailableError) return error;
  const e = error as { code?: string; message?: string };
  const code = e?.code ?? "";
  const kind =
    code.startsWith("08") || UNAVAILABLE_STATES.has(code) || /^(E[A-Z]+|CONNECT_TIMEOUT|CONNECTION_\w+)$/.test(code)
      ? "PostgreSQL is unavailable"
      : "PostgreSQL refused";
  return new StoreUnavailableError(`${kind} (${what}): ${e?.message ?? String(error)}`, { cause: error });
}
