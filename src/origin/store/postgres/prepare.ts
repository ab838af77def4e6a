// What the origin checks and creates in PostgreSQL before it serves anything: the server answers and is
// recent enough; the origin's own tables, the change log and its triggers exist as this version writes them
// (only what is missing or outdated is created, under a lock, so several instances may start at once and a
// role with only DML rights starts once an owner has created them); or the user's table, its columns, the
// change log and the triggers that feed it are there, and the role may use them; and no table it does not
// serve feeds the log (another deployment in the database). Every refusal names the variable to change and
// the fix; a server that is not there (yet) is a StoreUnavailableError instead, so that the start is retried
// rather than refused. feed:install (scripts/feed-install.ts) uses the same inspection to install only what
// is missing.

import type { Sql, TransactionSql } from "postgres";
import { ConfigError } from "../../../shared/config/config-error.ts";
import { StoreUnavailableError } from "../item-store.ts";
import { anyOf, openPool, unavailable, type PostgresOptions } from "./connection.ts";
import {
  CHANGES_TABLE,
  changeLogSql,
  DEFAULT_LOG_SCHEMA,
  FEED_TABLE,
  feedRowSql,
  feedTableSql,
  functionBody,
  FUNCTION_SETTING,
  functionSql,
  ITEMS_TABLE,
  LOG_PRIVILEGES,
  ownedTableSql,
  parseQualifiedName,
  qualify,
  quoteIdent,
  quoteLiteral,
  ROW_TRIGGER_TYPE,
  shellWord,
  TRIGGER_FUNCTION,
  TRIGGER_NAME,
  triggerSql,
  TRUNCATE_TRIGGER_NAME,
  TRUNCATE_TRIGGER_TYPE,
} from "./schema.ts";
import type { IdKind, UserTableShape } from "./user-table-store.ts";

/** A transaction, or (for the recheck's reads) the connection itself. */
type Tx = Sql | TransactionSql;

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

/** Checks the server and prepares the schema; returns the user table's shape when one is configured. */
export async function preparePostgres(options: PostgresOptions & { display: string }, userTable: UserTableSpec | undefined): Promise<UserTableShape | undefined> {
  const sql = openPool({ ...options, applicationName: `${options.applicationName}-setup` }, 1);
  try {
    let version: number;
    let role: string;
    try {
      const [row] = await sql<{ v: string; role: string }[]>`SELECT current_setting('server_version_num') AS v, current_user AS role`;
      version = Number(row!.v);
      role = row!.role;
    } catch (error) {
      throw connectProblem(error, options.display);
    }
    if (version < MIN_SERVER_VERSION) {
      throw refused("DATABASE_URL", `${options.display} runs PostgreSQL ${version}; the origin needs 14 or later.`);
    }
    try {
      if (userTable === undefined) {
        await sql.begin((tx) => ensureOwnedSchema(tx, role));
        return undefined;
      }
      return await sql.begin((tx) => inspectUserTable(tx, userTable, role));
    } catch (error) {
      throw setupProblem(error, role);
    }
  } finally {
    await sql.end({ timeout: 2 });
  }
}

/** What a check of the setup found while the origin runs (recheckPostgres). */
export interface SetupRecheck {
  /** What the change feed now misses, with its fix, as the refusal at start would say it. */
  problem?: string;
  /** What had gone missing of the origin's own table and was created again. */
  repaired?: string;
  /**
   * When nothing is wrong: the row versions of the triggers that call the log's function, and of the
   * function. Any change between two checks is an ALTER, a DROP and CREATE or a CREATE OR REPLACE, and a
   * trigger disabled and enabled again as it was (`ENABLE ALWAYS`), between two checks or inside one
   * transaction, leaves nothing else behind: the writes it let through were never logged. (Re-enabled the
   * default way, as `pg_restore --disable-triggers` does, it no longer fires in every session: reported.)
   */
  triggerVersions?: string;
}

/**
 * What the change feed depends on, checked again while the origin runs: a trigger dropped or disabled, or the
 * table swapped for one without it, would otherwise go unnoticed until the next start while no change
 * reaches any cache. Only what decides whether changes are logged is looked at (a revoked privilege shows in
 * the answers and /healthz). On the origin's own table the triggers and the feed's row are created again
 * when this role may (changesMissed logs "everything changed" with them); anything else gone (the table, the
 * log, the function) is reported, never created empty while running, and an older function is left to the
 * next start (two versions deploying side by side would replace each other's). Each statement is bounded by
 * `timeoutMs` (the connection's statement_timeout); a store that cannot be reached rejects.
 *
 * The reads are statements of their own, not a transaction: postgres 3.4.9 answers a transaction whose
 * connection is terminated (pg_terminate_backend, a failover) with a ROLLBACK written to the closed socket,
 * an uncaught TypeError that ends the process, and this check runs every second. Only a repair, which is
 * rare, opens one.
 */
export async function recheckPostgres(sql: Sql, userTable: UserTableSpec | undefined, timeoutMs: number): Promise<SetupRecheck> {
  const [row] = await sql<{ role: string }[]>`SELECT current_user AS role`;
  const role = row!.role;
  try {
    let found: SetupRecheck;
    if (userTable !== undefined) {
      const relation = await resolveItemsTable(sql, userTable, role);
      const logSchema = await checkChangeLog(sql, relation, userTable, role, undefined);
      await checkTriggers(sql, relation, userTable, logSchema, undefined);
      found = {};
    } else {
      found = await recheckOwned(sql, role, timeoutMs);
    }
    return found.problem === undefined ? { ...found, triggerVersions: await triggerVersions(sql) } : found;
  } catch (error) {
    const problem = setupProblem(error, role);
    if (problem instanceof ConfigError) return { problem: problem.problems.map((p) => `${p.variable}: ${p.message}`).join("; ") };
    throw problem;
  }
}

/**
 * The triggers calling the log's function, and the function they call: each row's xmin. Not partitions'
 * copies (tgparentid): a partition created, attached or detached is no change to what logs (an ALTER of the
 * parent's trigger reaches the parent's row too).
 */
async function triggerVersions(sql: Sql): Promise<string> {
  const [row] = await sql<{ versions: string | null }[]>`
    SELECT string_agg(format('%s:%s:%s:%s', t.tgrelid, t.tgname, t.xmin, p.xmin), ',' ORDER BY t.tgrelid, t.tgname) AS versions
    FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid WHERE p.proname = ${TRIGGER_FUNCTION} AND t.tgparentid = 0`;
  return row?.versions ?? "";
}

async function recheckOwned(sql: Sql, role: string, timeoutMs: number): Promise<SetupRecheck> {
  const plan = await ownedPlan(sql, role);
  const gone = (p: typeof plan) => p.missing.filter((m) => m.kind !== "outdated");
  if (gone(plan).length === 0) return {};
  const unrepairable = gone(plan).filter((m) => m.kind !== "triggers" && m.kind !== "row");
  if (unrepairable.length > 0) {
    return { problem: `missing ${unrepairable.map((m) => m.what).join(", ")}, so changes are not logged: put back what was moved or renamed, or start an origin, which creates what is missing (empty)` };
  }
  const [may] = await sql<{ owner: string; triggers: boolean; row: boolean; log: boolean }[]>`
    SELECT pg_get_userbyid(c.relowner) AS owner, pg_has_role(c.relowner, 'USAGE') AS triggers,
      has_table_privilege(${qualify(plan.schema, FEED_TABLE)}, 'INSERT') AS row, has_table_privilege(${qualify(plan.schema, CHANGES_TABLE)}, 'INSERT') AS log
    FROM pg_class c WHERE c.oid = ${plan.itemsOid}::oid`;
  const kinds = new Set(gone(plan).map((m) => m.kind));
  if (!may!.log || (kinds.has("triggers") && !may!.triggers) || (kinds.has("row") && !may!.row)) {
    return { problem: `missing ${gone(plan).map((m) => m.what).join(", ")}, so changes are not logged, and role ${role} may not create them: start an origin once as ${may!.owner}, which creates what is missing` };
  }
  // As at start: one instance at a time, looking again once it holds the lock (another may have repaired it).
  return await sql.begin(async (tx) => {
    await tx.unsafe(`SET LOCAL lock_timeout = ${Math.ceil(timeoutMs)}`);
    await tx.unsafe(SCHEMA_LOCK);
    const locked = await ownedPlan(tx, role);
    const repair = gone(locked);
    if (repair.length === 0 || repair.some((m) => m.kind !== "triggers" && m.kind !== "row")) return {};
    await tx.unsafe(repair.map((m) => m.sql).join("") + everythingChangedSql(locked.schema));
    return { repaired: repair.map((m) => m.what).join(", ") };
  });
}

// ---------------------------------------------------------------------------------------------------
// What is installed: the change log, its function, the triggers.

/** The change log as the role's search_path finds it (as the feed, the purger and the pruner do). */
export interface LogState {
  /** The schema `slim_edge_changes` resolves to; undefined when it does not. */
  schema: string | undefined;
  /** Schemas holding a `slim_edge_changes` the search_path does not reach (or without USAGE). */
  elsewhere: string[];
}

export async function findChangeLog(tx: Tx): Promise<LogState> {
  const rows = await tx<{ schema: string; visible: boolean }[]>`
    SELECT n.nspname AS schema, c.oid = to_regclass(${CHANGES_TABLE}) AS visible
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relname = ${CHANGES_TABLE} AND c.relkind IN ('r', 'p') ORDER BY 2 DESC, 1`;
  return { schema: rows.find((r) => r.visible)?.schema, elsewhere: rows.filter((r) => !r.visible).map((r) => r.schema) };
}

/**
 * The trigger function in `schema`: missing, an older version (to replace, `outdated` saying what is wrong
 * with it), or the current one.
 */
export async function functionState(
  tx: Tx,
  schema: string,
): Promise<{ state: "missing" | "outdated" | "current"; outdated?: string; owner?: string; mayReplace?: boolean; mayExecute?: boolean }> {
  const [fn] = await tx<{ definer: boolean; config: string | null; body: string; owner: string; owned: boolean; executable: boolean }[]>`
    SELECT p.prosecdef AS definer, array_to_string(p.proconfig, E'\n') AS config, p.prosrc AS body,
      pg_get_userbyid(p.proowner) AS owner, pg_has_role(p.proowner, 'USAGE') AS owned, has_function_privilege(p.oid, 'EXECUTE') AS executable
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = ${schema} AND p.proname = ${TRIGGER_FUNCTION} AND p.pronargs = 0`;
  if (fn === undefined) return { state: "missing" };
  const same = (a: string) => a.replace(/\s+/g, " ").trim();
  const safe = fn.definer && fn.config === FUNCTION_SETTING;
  const current = safe && same(fn.body) === same(functionBody(schema));
  const outdated = !safe
    ? "its search_path lets any writer of the table run code as its owner"
    : "its body is not this version's, which records item ids only, so that an id of 8,000 bytes or more cannot fail its writer's statement";
  return { state: current ? "current" : "outdated", ...(current ? {} : { outdated }), owner: fn.owner, mayReplace: fn.owned, mayExecute: fn.executable };
}

interface TriggerRow {
  name: string;
  type: number;
  enabled: string;
  args: Buffer;
  fnSchema: string;
  fnName: string;
}

/** What is wrong with the two triggers on `table` (oid), or undefined. `argument` judges the id column they record. */
export async function triggerProblem(tx: Tx, table: string, logSchema: string, argument: (column: string) => string | undefined): Promise<string | undefined> {
  const rows = await tx<TriggerRow[]>`
    SELECT t.tgname AS name, t.tgtype AS type, t.tgenabled::text AS enabled, t.tgargs AS args, n.nspname AS "fnSchema", p.proname AS "fnName"
    FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE t.tgrelid = ${table}::oid AND t.tgname IN (${TRIGGER_NAME}, ${TRUNCATE_TRIGGER_NAME})`;
  for (const [name, type] of [[TRIGGER_NAME, ROW_TRIGGER_TYPE], [TRUNCATE_TRIGGER_NAME, TRUNCATE_TRIGGER_TYPE]] as const) {
    const t = rows.find((r) => r.name === name);
    if (t === undefined) return "missing";
    if (t.fnSchema !== logSchema || t.fnName !== TRIGGER_FUNCTION) {
      return `calls ${qualify(t.fnSchema, t.fnName)}, not ${qualify(logSchema, TRIGGER_FUNCTION)} (which writes the change log this role reads, in schema ${logSchema})`;
    }
    if (t.type !== type) return `${name} does not fire ${type === ROW_TRIGGER_TYPE ? "after each row's INSERT, UPDATE and DELETE" : "after TRUNCATE"}`;
    const args = t.args.toString("utf8").split("\0").slice(0, -1);
    const wrong = args.length === 1 ? argument(args[0]!) : `records ${args.length} arguments, not an id column`;
    if (wrong !== undefined) return wrong;
    if (t.enabled === "D") return `${name} is disabled`;
    if (t.enabled !== "A") return `${name} fires only in ordinary sessions (ENABLE ${t.enabled === "R" ? "REPLICA" : "ORIGIN"}), not in logical-replication apply workers, whose changes would reach no cache`;
  }
  return undefined;
}

/**
 * The relations a view reads, through views it reads in turn (their `_RETURN` rules' dependencies):
 * tables to feed, and anything else (materialized views, foreign tables) no trigger can feed.
 */
export async function viewReads(tx: Tx, view: string): Promise<{ oid: string; kind: string; name: string; hasOwner: boolean }[]> {
  return await tx<{ oid: string; kind: string; name: string; hasOwner: boolean }[]>`
    WITH RECURSIVE reads(oid) AS (
      SELECT ${view}::oid
      UNION
      SELECT d.refobjid FROM reads
      JOIN pg_class v ON v.oid = reads.oid AND v.relkind = 'v'
      JOIN pg_rewrite r ON r.ev_class = v.oid AND r.rulename = '_RETURN'
      JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> v.oid
    )
    SELECT c.oid::text AS oid, c.relkind::text AS kind, format('%I.%I', n.nspname, c.relname) AS name, pg_has_role(c.relowner, 'USAGE') AS "hasOwner"
    FROM reads JOIN pg_class c ON c.oid = reads.oid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.oid <> ${view}::oid AND c.relkind IN ('r', 'p', 'm', 'f') ORDER BY 3`;
}

/**
 * Tables outside `ours` (oids) on which a trigger calls the change log's function, in any schema: another
 * deployment's in this database, or one no longer served. Partitions' copies of a parent's trigger are not
 * counted (the parent is).
 */
export async function otherFedTables(tx: Tx, ours: readonly string[]): Promise<FedTable[]> {
  const rows = await tx<{ table: string; trigger: string }[]>`
    SELECT format('%I.%I', n.nspname, c.relname) AS table, quote_ident(t.tgname) AS trigger
    FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE p.proname = ${TRIGGER_FUNCTION} AND t.tgparentid = 0 AND NOT (t.tgrelid = ${anyOf(tx, ours, "oid")})
    ORDER BY 1, 2`;
  const tables = new Map<string, string[]>();
  for (const { table, trigger } of rows) tables.set(table, [...(tables.get(table) ?? []), trigger]);
  return [...tables].map(([table, triggers]) => ({ table, triggers }));
}

/** A table a slim-edge trigger feeds, and the names of those triggers on it. */
export interface FedTable {
  table: string;
  triggers: string[];
}

/**
 * Why another deployment in the database (otherFedTables) is refused, and the ways out. The change log's
 * consumers are one per database: the purge leader's lock above all, so one deployment's changes would be
 * purged into the other's zone, or by no one.
 */
export function anotherDeployment(others: readonly FedTable[], served: string): string {
  const drops = others.flatMap(({ table, triggers }) => triggers.map((trigger) => `DROP TRIGGER ${trigger} ON ${table};`)).join(" ");
  return (
    `the change log also records changes of ${others.map((o) => o.table).join(", ")} (a trigger calls ${TRIGGER_FUNCTION} there), which this origin does not serve (it serves ${served}): ` +
    "another deployment in this database? Deployments in one database share the purge leader's lock, so one's changes would be purged into the other's zone, or by no one. " +
    `Give each deployment a database of its own, or serve the tables through one view as ITEMS_TABLE; if ${others.length > 1 ? "they are" : "it is"} served no more, drop the triggers: \`${drops}\`.`
  );
}

/**
 * Privileges `role` (default: this session's) lacks: `[privileges, relation]` pairs, e.g. `["UPDATE, DELETE",
 * "public.slim_edge_changes"]`. A relation that is not there is granted nothing.
 */
export async function missingPrivileges(
  tx: Tx,
  wanted: readonly (readonly [relation: string, privileges: readonly string[]])[],
  role?: string,
): Promise<[string, string][]> {
  const missing: [string, string][] = [];
  for (const [relation, privileges] of wanted) {
    const lacking: string[] = [];
    for (const privilege of privileges) {
      const [row] = await tx<{ ok: boolean }[]>`
        SELECT to_regclass(${relation}) IS NOT NULL AND has_table_privilege(coalesce(${role ?? null}::name, current_user), to_regclass(${relation}), ${privilege}) AS ok`;
      if (!row!.ok) lacking.push(privilege);
    }
    if (lacking.length > 0) missing.push([lacking.join(", "), relation]);
  }
  return missing;
}

/** The GRANT statements that give `role` what missingPrivileges found lacking. */
export function grants(missing: [string, string][], role: string): string {
  return missing.map(([privileges, relation]) => `GRANT ${privileges} ON ${relation} TO ${quoteIdent(role)};`).join(" ");
}

// ---------------------------------------------------------------------------------------------------
// The origin's own table.

/** One setup at a time: the origin's instances starting together, feed:install. */
export const SCHEMA_LOCK = "SELECT pg_advisory_xact_lock(hashtext('slim_edge_schema'))";
/** What the origin does with its own tables: read and write items, read the log, mark it purged, prune it. */
const OWNED_PRIVILEGES: readonly (readonly [string, readonly string[]])[] = [[ITEMS_TABLE, ["SELECT", "INSERT", "UPDATE"]], ...LOG_PRIVILEGES];

/** One part of the origin's own schema that is not there (or, for the function, outdated). */
interface Missing {
  kind: "log" | "feed" | "row" | "function" | "outdated" | "items" | "triggers";
  what: string;
  sql: string;
  owner?: string;
}

/** What is missing of the origin's own tables, as the SQL that creates it and a phrase that names it. */
async function ownedPlan(tx: Tx, role: string): Promise<{ schema: string; items: string; itemsOid: string | null; missing: Missing[] }> {
  const [found] = await tx<{ current: string | null; itemsSchema: string | null; items: string | null }[]>`
    SELECT current_schema() AS current, to_regclass(${ITEMS_TABLE})::oid::text AS items,
      (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass(${ITEMS_TABLE})) AS "itemsSchema"`;
  const log = await findChangeLog(tx);
  // The change log stays where the role finds it; a new one goes beside the items, or where an unqualified
  // CREATE TABLE would put it.
  const schema = log.schema ?? found!.itemsSchema ?? found!.current;
  if (schema === null) {
    throw refused("DATABASE_URL", `no schema on the search_path of role ${role} exists, so the origin's tables have nowhere to go: create one, or set the role's search_path (ALTER ROLE ${quoteIdent(role)} SET search_path = public).`);
  }
  const missing: Missing[] = [];
  if (log.schema === undefined) missing.push({ kind: "log", what: `the change log ${qualify(schema, CHANGES_TABLE)}`, sql: changeLogSql(schema) });
  const feed = qualify(schema, FEED_TABLE);
  const [feedState] = await tx<{ table: boolean; readable: boolean }[]>`
    SELECT to_regclass(${feed}) IS NOT NULL AS table, to_regclass(${feed}) IS NOT NULL AND has_table_privilege(to_regclass(${feed}), 'SELECT') AS readable`;
  if (!feedState!.table) missing.push({ kind: "feed", what: `the feed table ${feed}`, sql: feedTableSql(schema) });
  // (One this role may not read is reported with the privileges below.)
  else if (feedState!.readable && (await tx.unsafe(`SELECT 1 FROM ${feed}`)).length === 0) missing.push({ kind: "row", what: `the row of ${feed}`, sql: feedRowSql(schema) });
  const fn = await functionState(tx, schema);
  if (fn.state !== "current") {
    missing.push({
      kind: fn.state === "missing" ? "function" : "outdated",
      what: fn.state === "missing" ? `the function ${qualify(schema, TRIGGER_FUNCTION)}` : `a new version of ${qualify(schema, TRIGGER_FUNCTION)} (in the installed one, ${fn.outdated})`,
      sql: functionSql(schema),
      ...(fn.owner === undefined ? {} : { owner: fn.owner }),
    });
  }
  const items = found!.items === null ? qualify(schema, ITEMS_TABLE) : qualify(found!.itemsSchema!, ITEMS_TABLE);
  if (found!.items === null) missing.push({ kind: "items", what: `the items table ${items}`, sql: ownedTableSql(schema) });
  const problem = found!.items === null ? "missing" : await triggerProblem(tx, found!.items, schema, (column) => (column === "id" ? undefined : `records ${column}`));
  if (problem !== undefined) missing.push({ kind: "triggers", what: `the triggers on ${items}`, sql: triggerSql(items, "id", schema) });
  return { schema, items, itemsOid: found!.items, missing };
}

async function ensureOwnedSchema(tx: Tx, role: string): Promise<void> {
  let plan = await ownedPlan(tx, role);
  if (plan.missing.length > 0) {
    // Instances starting together would race on CREATE ... IF NOT EXISTS (it is not atomic): one at a
    // time, each looking again once it holds the lock.
    await tx.unsafe(SCHEMA_LOCK);
    plan = await ownedPlan(tx, role);
    if (plan.missing.length > 0) {
      try {
        await tx.unsafe(plan.missing.map((m) => m.sql).join(""));
        if (await changesMissed(tx, plan)) await tx.unsafe(everythingChangedSql(plan.schema));
      } catch (error) {
        throw createProblem(error, plan, role);
      }
    }
  }
  const lacking = await missingPrivileges(tx, OWNED_PRIVILEGES.map(([table, privileges]) => [table === ITEMS_TABLE ? plan.items : qualify(plan.schema, table), privileges]));
  if (lacking.length > 0) {
    throw refused("DATABASE_URL", `role ${role} may not ${lacking.map(([p, r]) => `${p} ${r}`).join("; ")}, which the origin needs: as their owner, run \`${grants(lacking, role)}\`.`);
  }
  // Last, once the items table is there (this start or another instance's, starting beside it, may just have
  // created it); a refusal rolls back whatever this start created.
  const [items] = await tx<{ oid: string | null }[]>`SELECT to_regclass(${plan.items})::oid::text AS oid`;
  const others = await otherFedTables(tx, items!.oid === null ? [] : [items!.oid]);
  if (others.length > 0) throw refused("DATABASE_URL", anotherDeployment(others, plan.items));
}

/**
 * Whether changes may have gone unlogged: the triggers (or the feed's row) of an items table and a log that
 * were already there are missing. Then "everything changed" is logged with the repair, so every instance
 * drops its cache and the purge leader purges the edge wide (if this role may write the log).
 */
async function changesMissed(tx: Tx, plan: { schema: string; missing: Missing[] }): Promise<boolean> {
  const kinds = new Set(plan.missing.map((m) => m.kind));
  if (kinds.has("items") || kinds.has("log") || !(kinds.has("triggers") || kinds.has("row"))) return false;
  const [row] = await tx<{ ok: boolean }[]>`SELECT has_table_privilege(${qualify(plan.schema, CHANGES_TABLE)}, 'INSERT') AS ok`;
  return row!.ok;
}

function everythingChangedSql(schema: string): string {
  return `INSERT INTO ${qualify(schema, CHANGES_TABLE)} (item_id) VALUES ('');\n`;
}

function createProblem(error: unknown, plan: { schema: string; missing: { what: string; owner?: string }[] }, role: string): Error {
  const e = error as { code?: string; message?: string };
  const what = plan.missing.map((m) => m.what).join(", ");
  if (isTransient(e.code)) return unavailable(error, `creating ${what}`);
  if (e.code !== "42501") return refused("DATABASE_URL", `cannot create ${what}: ${e.message ?? String(error)}.`);
  const owners = [...new Set(plan.missing.flatMap((m) => (m.owner === undefined ? [] : [m.owner])))];
  const asOwner = owners.length > 0 ? `start the origin once as ${owners.join(" or ")} (it creates only what is missing)` : `GRANT CREATE ON SCHEMA ${quoteIdent(plan.schema)} TO ${quoteIdent(role)}, or start the origin once as a role that may (it creates only what is missing)`;
  return refused(
    "DATABASE_URL",
    `role ${role} cannot create ${what} (${e.message}): ${asOwner}, then grant this role ${OWNED_PRIVILEGES.map(([t, p]) => `${p.join(", ")} ON ${qualify(plan.schema, t)}`).join("; ")}.`,
  );
}

// ---------------------------------------------------------------------------------------------------
// The user's table (ITEMS_TABLE).

interface Relation {
  oid: string;
  kind: string;
  schema: string;
  name: string;
  /** Quoted, schema-qualified: how this relation is written in SQL and in every message. */
  sql: string;
  /** The role has its owner's privileges (feed:install would need no --grant-to). */
  owned: boolean;
}

/** The relation ITEMS_TABLE names (read as in SQL, by to_regclass, with the role's search_path), or undefined. */
export async function resolveRelation(tx: Tx, name: string): Promise<Relation | undefined> {
  const [relation] = await tx<Relation[]>`
    SELECT c.oid::text AS oid, c.relkind::text AS kind, n.nspname AS schema, c.relname AS name,
      format('%I.%I', n.nspname, c.relname) AS sql, pg_has_role(c.relowner, 'USAGE') AS owned
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass(${name})`;
  return relation;
}

/** Tables whose name matches `name` but for case: what the user probably meant, written as to write it. */
export async function sameButCase(tx: Tx, name: string): Promise<string[]> {
  const parsed = parseQualifiedName(name);
  if (parsed === undefined) return [];
  const rows = await tx<{ sql: string }[]>`
    SELECT format('%I.%I', n.nspname, c.relname) AS sql FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE lower(c.relname) = lower(${parsed.name}) AND (${parsed.schema ?? null}::text IS NULL OR lower(n.nspname) = lower(${parsed.schema ?? null}::text))
      AND c.relkind IN ('r', 'p', 'v') ORDER BY 1 LIMIT 3`;
  return rows.map((r) => r.sql);
}

export async function columnsOf(tx: Tx, relation: string): Promise<Map<string, { type: string; castType: string }>> {
  // castType without the type modifier: `$1::character varying(8)` would cut a longer id down to one that
  // exists (`abcdefgh-anything` read as row `abcdefgh`); `$1::character varying` compares it whole.
  const rows = await tx<{ name: string; type: string; castType: string }[]>`
    SELECT attname AS name, format_type(atttypid, atttypmod) AS type, format_type(atttypid, NULL) AS "castType" FROM pg_attribute
    WHERE attrelid = ${relation}::oid AND attnum > 0 AND NOT attisdropped ORDER BY attnum`;
  return new Map(rows.map((c) => [c.name, { type: c.type, castType: c.castType }]));
}

/** The command that installs the log and the triggers on `table`, with what this role's setup needs. */
function installHint(table: string, idColumn: string, logSchema: string, grantTo: string | undefined): string {
  const schema = logSchema === DEFAULT_LOG_SCHEMA ? "" : ` --schema ${shellWord(logSchema)}`;
  const grant = grantTo === undefined ? "" : ` --grant-to ${shellWord(grantTo)}`;
  return `run \`npm run feed:install -- --table ${shellWord(table)} --id-column ${shellWord(idColumn)}${schema}${grant}\` with DATABASE_URL set (as the table's owner), or apply the SQL it prints with --print`;
}

async function resolveItemsTable(tx: Tx, spec: UserTableSpec, role: string): Promise<Relation> {
  let relation: Relation | undefined;
  try {
    relation = await resolveRelation(tx, spec.table);
  } catch (error) {
    const e = error as { code?: string; message?: string };
    const schema = parseQualifiedName(spec.table)?.schema;
    if (e.code === "42501" && schema !== undefined) {
      throw refused("ITEMS_TABLE", `role ${role} may not use schema ${quoteIdent(schema)} (${e.message}): as its owner, run \`GRANT USAGE ON SCHEMA ${quoteIdent(schema)} TO ${quoteIdent(role)};\`.`);
    }
    if (e.code?.startsWith("42") === true) {
      throw refused("ITEMS_TABLE", `${quoteLiteral(spec.table)} is not a table name (${e.message}); write it as in SQL: products, shop.products, or "Shop"."Products" for mixed case.`);
    }
    throw error;
  }
  if (relation === undefined) {
    const like = await sameButCase(tx, spec.table);
    const hint = like.length > 0 ? `; did you mean ${like.map((l) => `ITEMS_TABLE=${shellWord(l)}`).join(" or ")} (unquoted names are read in lower case, as in SQL)?` : "; fix the name or schema-qualify it (e.g. public.products).";
    throw refused("ITEMS_TABLE", `no table or view ${quoteLiteral(spec.table)} in this database (as seen with the search_path of DATABASE_URL's user)${hint}`);
  }
  if (!["r", "p", "v"].includes(relation.kind)) {
    throw refused("ITEMS_TABLE", `${relation.sql} is neither a table nor a plain view (materialized views change only on REFRESH, which no trigger sees); serve the table it is built from.`);
  }
  if (relation.schema.includes(".") || relation.name.includes(".")) {
    throw refused("ITEMS_TABLE", `${relation.sql}: names containing a dot are not supported; serve it through a view named without one.`);
  }
  return relation;
}

async function inspectUserTable(tx: Tx, spec: UserTableSpec, role: string): Promise<UserTableShape> {
  const relation = await resolveItemsTable(tx, spec, role);
  const columns = await columnsOf(tx, relation.oid);
  const column = (variable: string, name: string) => {
    const found = columns.get(name);
    if (found === undefined) {
      throw refused(variable, `${relation.sql} has no column ${quoteLiteral(name)}; its columns are ${[...columns.keys()].join(", ")}.`);
    }
    if (name.includes(".")) throw refused(variable, `${quoteLiteral(name)}: column names containing a dot are not supported; serve the table through a view that renames it.`);
    return found;
  };
  const id = column("ITEMS_ID_COLUMN", spec.idColumn);
  const idKind = idKindOf(id.castType);
  if (idKind === undefined) {
    throw refused("ITEMS_ID_COLUMN", `${spec.idColumn} is ${id.type}; item ids must be text, an integer or a uuid column.`);
  }
  if (spec.jsonColumn !== undefined) {
    const { type } = column("ITEMS_JSON_COLUMN", spec.jsonColumn);
    if (!/^(json|jsonb|text|character varying.*)$/.test(type)) {
      throw refused("ITEMS_JSON_COLUMN", `${spec.jsonColumn} is ${type}; use a json, jsonb or text column, or leave ITEMS_JSON_COLUMN unset to serve the whole row as JSON.`);
    }
  }
  const versionType = spec.versionColumn === undefined ? undefined : column("ITEMS_VERSION_COLUMN", spec.versionColumn).type;
  const grantTo = relation.owned ? undefined : role;
  const logSchema = await checkChangeLog(tx, relation, spec, role, grantTo);
  await checkTriggers(tx, relation, spec, logSchema, grantTo);
  const ours = relation.kind === "v" ? (await viewReads(tx, relation.oid)).map((read) => read.oid) : [relation.oid];
  const others = await otherFedTables(tx, ours);
  if (others.length > 0) throw refused("ITEMS_TABLE", anotherDeployment(others, relation.sql));
  const lacking = await missingPrivileges(tx, [[relation.sql, ["SELECT"]], ...LOG_PRIVILEGES.map(([name, privileges]) => [qualify(logSchema, name), privileges] as const)]);
  if (lacking.length > 0) {
    throw refused(
      "DATABASE_URL",
      `role ${role} may not ${lacking.map(([p, r]) => `${p} ${r}`).join("; ")}, which serving ${relation.sql} needs: as the owner, run \`${grants(lacking, role)}\`${relation.kind === "v" ? "" : `, or ${installHint(relation.sql, spec.idColumn, logSchema, role).replace(/^run /, "")}`}.`,
    );
  }
  return {
    // Raw `schema.name`: the store quotes each part (quoteName); names with a dot are refused above.
    table: `${relation.schema}.${relation.name}`,
    idColumn: spec.idColumn,
    idKind,
    idType: id.castType,
    jsonColumn: spec.jsonColumn,
    versionColumn: spec.versionColumn,
    integerVersion: versionType !== undefined && /^(smallint|integer|bigint|numeric\(\d+,0\))$/.test(versionType),
  };
}

/** The change log's schema, once the log, its feed row and the current function are found there. */
async function checkChangeLog(tx: Tx, relation: Relation, spec: UserTableSpec, role: string, grantTo: string | undefined): Promise<string> {
  const log = await findChangeLog(tx);
  const hint = (schema: string) => installHint(relation.kind === "v" ? "TABLE" : relation.sql, spec.idColumn, schema, grantTo);
  if (log.schema === undefined) {
    if (log.elsewhere.length > 0) {
      const [schema] = log.elsewhere as [string];
      const [found] = await tx<{ database: string; usage: boolean }[]>`
        SELECT current_database() AS database, has_schema_privilege(${schema}, 'USAGE') AS usage`;
      const { database, usage } = found!;
      // A role may set its own defaults; only the schema's owner may grant on it.
      const searchPath = `as ${role} itself (or a superuser), run \`ALTER ROLE ${quoteIdent(role)} IN DATABASE ${quoteIdent(database)} SET search_path = "$user", public, ${quoteIdent(schema)};\` and start again (a search_path in DATABASE_URL's options overrides it: add the schema there instead)`;
      throw refused(
        "DATABASE_URL",
        usage
          ? `the change log ${qualify(schema, CHANGES_TABLE)} is not on the search_path of role ${role}: ${searchPath}.`
          : `the change log ${qualify(schema, CHANGES_TABLE)} is out of reach of role ${role} (no USAGE on schema ${schema}): as the schema's owner, run \`GRANT USAGE ON SCHEMA ${quoteIdent(schema)} TO ${quoteIdent(role)};\`; and if the schema is not on the role's search_path either, ${searchPath}.`,
      );
    }
    throw refused("ITEMS_TABLE", `the change log (${CHANGES_TABLE}) is not installed, so changes to ${relation.sql} would reach no cache: ${hint(DEFAULT_LOG_SCHEMA)}.`);
  }
  const [feed] = await tx<{ ok: boolean }[]>`SELECT to_regclass(${qualify(log.schema, FEED_TABLE)}) IS NOT NULL AS ok`;
  const fn = await functionState(tx, log.schema);
  if (!feed!.ok || fn.state !== "current") {
    const what = !feed!.ok ? `has no ${FEED_TABLE} beside it` : fn.state === "missing" ? `has no function ${TRIGGER_FUNCTION} beside it` : `is written by an older version of ${qualify(log.schema, TRIGGER_FUNCTION)} (owned by ${fn.owner}; ${fn.outdated})`;
    throw refused("ITEMS_TABLE", `the change log ${qualify(log.schema, CHANGES_TABLE)} ${what}: ${hint(log.schema)}.`);
  }
  return log.schema;
}

/** The triggers on the table, or on every table the view reads, record its ids in the log in `logSchema`. */
async function checkTriggers(tx: Tx, relation: Relation, spec: UserTableSpec, logSchema: string, grantTo: string | undefined): Promise<void> {
  if (relation.kind !== "v") {
    const problem = await triggerProblem(tx, relation.oid, logSchema, (column) =>
      column === spec.idColumn ? undefined : `records the column ${quoteLiteral(column)}, not ITEMS_ID_COLUMN ${quoteLiteral(spec.idColumn)}`,
    );
    if (problem === undefined) return;
    const fix = installHint(relation.sql, spec.idColumn, logSchema, grantTo);
    if (problem.startsWith("records the column")) {
      throw refused("ITEMS_ID_COLUMN", `the trigger on ${relation.sql} ${problem}, so the change log would hold ids no request asks for: ${fix} (or set ITEMS_ID_COLUMN to the column the trigger records, if that is the id).`);
    }
    throw refused("ITEMS_TABLE", problem === "missing" ? `no trigger feeds changes of ${relation.sql} to the change log, so caches would never hear of them: ${fix}.` : `the trigger on ${relation.sql}: ${problem}: ${fix}.`);
  }
  for (const read of await viewReads(tx, relation.oid)) {
    if (read.kind === "m" || read.kind === "f") {
      throw refused("ITEMS_TABLE", `the view ${relation.sql} reads ${read.name}, a ${read.kind === "m" ? "materialized view (it changes only on REFRESH" : "foreign table (its rows change on another server"}, which no trigger sees); serve a view over the tables it is built from.`);
    }
    const columns = await columnsOf(tx, read.oid);
    const problem = await triggerProblem(tx, read.oid, logSchema, (column) => (columns.has(column) ? undefined : `records ${quoteLiteral(column)}, which ${read.name} has no column of`));
    if (problem !== undefined) {
      const idColumn = columns.has(spec.idColumn) ? spec.idColumn : "COLUMN";
      const fix = installHint(read.name, idColumn, logSchema, read.hasOwner ? undefined : grantTo);
      const what = problem === "missing" ? `no trigger feeds changes of ${read.name} (a table the view ${relation.sql} reads) to the change log, so caches would never hear of them` : `the trigger on ${read.name} (a table the view ${relation.sql} reads): ${problem}`;
      throw refused("ITEMS_TABLE", `${what}: ${fix}${idColumn === "COLUMN" ? ` (COLUMN: the column of ${read.name} that holds the view's ${spec.idColumn})` : ""}.`);
    }
  }
}

function idKindOf(type: string): IdKind | undefined {
  if (type === "smallint") return "int2";
  if (type === "integer") return "int4";
  if (type === "bigint") return "int8";
  if (type === "uuid") return "uuid";
  if (type === "text" || type === "character varying") return "text";
  return undefined;
}

// ---------------------------------------------------------------------------------------------------
// Failures.

/** Network failures and the server's "not now": the start is retried, not refused. */
const TRANSIENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "ETIMEDOUT", "ECONNRESET", "EAI_AGAIN", "CONNECT_TIMEOUT", "CONNECTION_CLOSED", "CONNECTION_ENDED", "CONNECTION_DESTROYED", "57P01", "57P02", "57P03", "53300"]);

function isTransient(code: string | undefined): boolean {
  return code !== undefined && (TRANSIENT.has(code) || code.startsWith("08"));
}

/**
 * Why the first query failed, with the fix: a refusal (exit 2, not restarted) when the configuration is
 * wrong, a StoreUnavailableError (exit 1, restarted) when the server is not there or not ready yet.
 */
export function connectProblem(error: unknown, display: string): Error {
  const e = error as { code?: string; message?: string };
  const message = e.message ?? String(error);
  switch (e.code) {
    case "28P01":
    case "28000":
      return refused("DATABASE_URL", `PostgreSQL at ${display} refused the login (${message}); fix the user and password in DATABASE_URL, or pg_hba.conf.`);
    case "3D000":
      return refused("DATABASE_URL", `${message} at ${display}; create it (createdb) or fix the database name in DATABASE_URL.`);
    case "53300":
      return new StoreUnavailableError(
        `PostgreSQL at ${display} has no connection free (${message}): each origin process opens up to DATABASE_POOL_SIZE + 5 connections, times ORIGIN_PROCESSES; lower DATABASE_POOL_SIZE or ORIGIN_PROCESSES, or raise the server's max_connections.`,
        { cause: error },
      );
    case "57P03":
      return new StoreUnavailableError(`PostgreSQL at ${display} does not accept connections yet (${message}); starting again once it does.`, { cause: error });
    default:
      if (isTransient(e.code)) {
        // A server that refuses TLS (ssl = off) ends the handshake like a dropped connection: say which it may be.
        const tls = /\bTLS\b/.test(message) ? " over TLS; if the server does not accept TLS, remove sslmode from DATABASE_URL or turn ssl on at the server, else" : ";";
        return new StoreUnavailableError(`cannot reach PostgreSQL at ${display} (${message})${tls} is it running, and are the host and port in DATABASE_URL right?`, { cause: error });
      }
      return refused("DATABASE_URL", `cannot use PostgreSQL at ${display}: ${message}.`);
  }
}

/** A failure while checking or creating the schema, past the first query. */
function setupProblem(error: unknown, role: string): Error {
  if (error instanceof ConfigError || error instanceof StoreUnavailableError) return error;
  const e = error as { code?: string; message?: string };
  if (isTransient(e.code)) return unavailable(error, "checking the schema at start");
  if (e.code === "42501") {
    return refused("DATABASE_URL", `role ${role} lacks a privilege the origin needs (${e.message}): grant it (GRANT … TO ${quoteIdent(role)}), or, for ITEMS_TABLE, run npm run feed:install with --grant-to ${shellWord(role)} as the table's owner.`);
  }
  return error instanceof Error ? error : new Error(String(error));
}
