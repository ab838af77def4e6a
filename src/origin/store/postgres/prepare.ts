// What the origin checks and creates in PostgreSQL before it serves anything: the server answers and is
// recent enough, the origin's own tables exist (created idempotently, under a lock, so several instances
// may start at once), or the user's table, its columns and the trigger that feeds its changes are there.
// Every refusal names the variable to change and the fix.

import { ConfigError } from "../../../shared/config/config-error.ts";
import { openPool, type PostgresOptions } from "./connection.ts";
import { CHANGE_LOG_SQL, CHANGES_TABLE, ITEMS_TABLE, OWNED_TABLE_SQL, quoteLiteral, TRIGGER_NAME, triggerSql } from "./schema.ts";
import type { IdKind, UserTableShape } from "./user-table-store.ts";

/** The start-time refusal: the same ConfigError the environment's parser throws, for one variable. */
function refused(variable: string, message: string): ConfigError {
  return new ConfigError([{ variable, message }]);
}

/** PostgreSQL 14: CREATE OR REPLACE TRIGGER; 13 already has xid8 and pg_current_snapshot(). */
const MIN_SERVER_VERSION = 140000;

export interface UserTableSpec {
  table: string;
  idColumn: string;
  jsonColumn: string | undefined;
  versionColumn: string | undefined;
}

const INSTALL_HINT = (table: string, idColumn: string) =>
  `run \`npm run feed:install -- --table ${table} --id-column ${idColumn}\` with DATABASE_URL set (as the table's owner), or apply the SQL it prints with --print`;

/** Checks the server and prepares the schema; returns the user table's shape when one is configured. */
export async function preparePostgres(
  options: PostgresOptions & { display: string },
  userTable: UserTableSpec | undefined,
): Promise<UserTableShape | undefined> {
  const sql = openPool({ ...options, applicationName: `${options.applicationName}-setup` }, 1);
  try {
    let version: number;
    try {
      version = Number((await sql<{ v: string }[]>`SELECT current_setting('server_version_num') AS v`)[0]!.v);
    } catch (error) {
      throw refused("DATABASE_URL", connectProblem(error, options.display));
    }
    if (version < MIN_SERVER_VERSION) {
      throw refused("DATABASE_URL", `${options.display} runs PostgreSQL ${version}; the origin needs 14 or later.`);
    }
    if (userTable === undefined) {
      await ensureOwnedSchema(sql, options.display);
      return undefined;
    }
    return await inspectUserTable(sql, userTable);
  } finally {
    await sql.end({ timeout: 2 });
  }
}

async function ensureOwnedSchema(sql: ReturnType<typeof openPool>, display: string): Promise<void> {
  try {
    await sql.begin(async (tx) => {
      // Instances starting together would race on CREATE ... IF NOT EXISTS (it is not atomic): one at a time.
      await tx`SELECT pg_advisory_xact_lock(hashtext('slim_edge_schema'))`;
      await tx.unsafe(`${CHANGE_LOG_SQL}\n${OWNED_TABLE_SQL}\n${triggerSql(ITEMS_TABLE, "id")}`);
    });
  } catch (error) {
    const e = error as { code?: string; message?: string };
    const fix =
      e.code === "42501"
        ? "grant the user CREATE on the database's schema, or have an owner create the tables once (the origin creates them idempotently at start)"
        : "see the message";
    throw refused("DATABASE_URL", `cannot create the origin's tables in ${display}: ${e.message ?? String(error)}; ${fix}.`);
  }
}

async function inspectUserTable(sql: ReturnType<typeof openPool>, spec: UserTableSpec): Promise<UserTableShape> {
  const relation = (await sql<{ oid: string; kind: string }[]>`SELECT c.oid::text AS oid, c.relkind AS kind FROM pg_class c WHERE c.oid = to_regclass(${spec.table})`)[0];
  if (relation === undefined) {
    throw refused("ITEMS_TABLE", `no table or view ${quoteLiteral(spec.table)} in this database (as seen with the search_path of DATABASE_URL's user); fix the name or schema-qualify it (e.g. public.products).`);
  }
  if (!["r", "p", "v"].includes(relation.kind)) {
    throw refused("ITEMS_TABLE", `${spec.table} is neither a table nor a plain view (materialized views change only on REFRESH, which no trigger sees); serve the table it is built from.`);
  }
  const columns = new Map(
    (await sql<{ name: string; type: string }[]>`
      SELECT attname AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute
      WHERE attrelid = ${relation.oid}::oid AND attnum > 0 AND NOT attisdropped`).map((c) => [c.name, c.type]),
  );
  const column = (variable: string, name: string) => {
    const type = columns.get(name);
    if (type === undefined) {
      throw refused(variable, `${spec.table} has no column ${quoteLiteral(name)}; its columns are ${[...columns.keys()].join(", ")}.`);
    }
    return type;
  };
  const idType = column("ITEMS_ID_COLUMN", spec.idColumn);
  const idKind = idKindOf(idType);
  if (idKind === undefined) {
    throw refused("ITEMS_ID_COLUMN", `${spec.idColumn} is ${idType}; item ids must be text, an integer or a uuid column.`);
  }
  if (spec.jsonColumn !== undefined) {
    const type = column("ITEMS_JSON_COLUMN", spec.jsonColumn);
    if (!/^(json|jsonb|text|character varying.*)$/.test(type)) {
      throw refused("ITEMS_JSON_COLUMN", `${spec.jsonColumn} is ${type}; use a json, jsonb or text column, or leave ITEMS_JSON_COLUMN unset to serve the whole row as JSON.`);
    }
  }
  const versionType = spec.versionColumn === undefined ? undefined : column("ITEMS_VERSION_COLUMN", spec.versionColumn);
  if ((await sql`SELECT 1 FROM pg_class WHERE oid = to_regclass(${CHANGES_TABLE})`).length === 0) {
    throw refused("ITEMS_TABLE", `the change log (${CHANGES_TABLE}) is not installed, so changes to ${spec.table} would reach no cache: ${INSTALL_HINT(spec.table, spec.idColumn)}.`);
  }
  const fed = relation.kind === "v" ? await baseTables(sql, relation.oid) : [{ oid: relation.oid, name: spec.table }];
  for (const table of fed) {
    const trigger = await sql`SELECT 1 FROM pg_trigger WHERE tgrelid = ${table.oid}::oid AND tgname = ${TRIGGER_NAME} AND tgenabled <> 'D'`;
    if (trigger.length === 0) {
      throw refused("ITEMS_TABLE", `no trigger feeds changes of ${table.name}${relation.kind === "v" ? ` (a table the view ${spec.table} reads)` : ""} to the change log, so caches would never hear of them: ${INSTALL_HINT(table.name, spec.idColumn)}.`,
      );
    }
  }
  return {
    table: spec.table,
    idColumn: spec.idColumn,
    idKind,
    idType,
    jsonColumn: spec.jsonColumn,
    versionColumn: spec.versionColumn,
    integerVersion: versionType !== undefined && /^(smallint|integer|bigint|numeric\(\d+,0\))$/.test(versionType),
  };
}

/** The tables a view reads (its rewrite rule's dependencies). */
async function baseTables(sql: ReturnType<typeof openPool>, view: string): Promise<{ oid: string; name: string }[]> {
  return await sql<{ oid: string; name: string }[]>`
    SELECT DISTINCT d.refobjid::text AS oid, d.refobjid::regclass::text AS name
    FROM pg_rewrite r JOIN pg_depend d ON d.objid = r.oid AND d.classid = 'pg_rewrite'::regclass
    JOIN pg_class c ON c.oid = d.refobjid AND c.relkind IN ('r', 'p')
    WHERE r.ev_class = ${view}::oid AND d.refobjid <> ${view}::oid`;
}

function idKindOf(type: string): IdKind | undefined {
  if (type === "smallint") return "int2";
  if (type === "integer") return "int4";
  if (type === "bigint") return "int8";
  if (type === "uuid") return "uuid";
  if (type === "text" || type.startsWith("character varying")) return "text";
  return undefined;
}

/** Why the first connection failed, with the fix. */
function connectProblem(error: unknown, display: string): string {
  const e = error as { code?: string; message?: string };
  const message = e.message ?? String(error);
  switch (e.code) {
    case "28P01":
    case "28000":
      return `PostgreSQL at ${display} refused the login (${message}); fix the user and password in DATABASE_URL, or pg_hba.conf.`;
    case "3D000":
      return `${message} at ${display}; create it (createdb) or fix the database name in DATABASE_URL.`;
    case "ECONNREFUSED":
    case "ENOTFOUND":
    case "EHOSTUNREACH":
    case "CONNECT_TIMEOUT":
      return `cannot reach PostgreSQL at ${display} (${message}); is it running, and are the host and port right?`;
    default:
      return `cannot use PostgreSQL at ${display}: ${message}.`;
  }
}
