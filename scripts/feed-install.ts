// `npm run feed:install -- --table NAME [--id-column id] [--schema public] [--grant-to ROLE] [--print]`:
// installs what feeds the changes of your own items table to every origin instance (the change log, its
// function and the table's triggers), in one transaction, on the database DATABASE_URL names. Run it as the
// table's owner; run it again any time (it creates what is missing, replaces an older function, and
// re-creates the triggers). The table is named as in SQL (and as ITEMS_TABLE): `products`, `shop.products`,
// `"Shop"."Products"`. The change log goes in the schema it is already in, else --schema (default public),
// and the function is bound to it. --grant-to gives the origin's role (when it is not the owner) what it
// needs: USAGE on the schemas, read the table and the log, mark changes purged and prune the log. With
// --print it only prints the SQL, to apply by hand or through your migrations.

import { parseArgs } from "node:util";
import postgres, { type TransactionSql } from "postgres";
import { parseDatabaseUrl, redact } from "../src/origin/config/database-url.ts";
import { ConfigError, type ConfigProblem } from "../src/shared/config/config-error.ts";
import {
  columnsOf,
  connectProblem,
  findChangeLog,
  functionState,
  grants,
  missingPrivileges,
  otherFedTables,
  resolveRelation,
  sameButCase,
  SCHEMA_LOCK,
  viewReads,
} from "../src/origin/store/postgres/prepare.ts";
import {
  CHANGES_TABLE,
  changeLogSql,
  DEFAULT_LOG_SCHEMA,
  FEED_TABLE,
  feedRowSql,
  feedTableSql,
  functionSql,
  grantSql,
  installScript,
  LOG_PRIVILEGES,
  parseQualifiedName,
  qualify,
  quoteIdent,
  quoteLiteral,
  shellWord,
  TRIGGER_FUNCTION,
  triggerSql,
} from "../src/origin/store/postgres/schema.ts";

const USAGE =
  "usage: npm run feed:install -- --table NAME [--id-column COLUMN] [--schema SCHEMA] [--grant-to ROLE] [--print]   (DATABASE_URL=postgres://… in the environment)";

let values: { table?: string; "id-column"?: string; schema?: string; "grant-to"?: string; print?: boolean; help?: boolean };
try {
  ({ values } = parseArgs({
    options: {
      table: { type: "string" },
      "id-column": { type: "string", default: "id" },
      schema: { type: "string" },
      "grant-to": { type: "string" },
      print: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  }));
} catch (error) {
  fail(`${(error as Error).message}\n${USAGE}`);
}
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
if (values.table === undefined || values.table.trim() === "") fail(`--table is required (the table whose rows are the items, e.g. public.products)\n${USAGE}`);
const tableName = values.table.trim();
const idColumn = values["id-column"]!.trim();
const grantTo = values["grant-to"]?.trim() || undefined;
const schemaOption = values.schema?.trim() || undefined;

if (values.print) {
  const parsed = parseQualifiedName(tableName);
  if (parsed === undefined) fail(`${quoteLiteral(tableName)} is not a table name; write it as in SQL: products, shop.products, or '"Shop"."Products"' for mixed case`);
  const table = parsed.schema === undefined ? quoteIdent(parsed.name) : qualify(parsed.schema, parsed.name);
  process.stdout.write(installScript(table, idColumn, schemaOption ?? DEFAULT_LOG_SCHEMA, grantTo === undefined ? undefined : { role: grantTo, tableSchema: parsed.schema }));
  process.exit(0);
}

const url = process.env.DATABASE_URL;
if (url === undefined || !/^postgres(ql)?:\/\//.test(url)) fail(`set DATABASE_URL to the PostgreSQL database that holds ${tableName} (postgres://user:password@host:5432/db), or use --print`);
{
  // The origin's own reading of DATABASE_URL: what it refuses (a URL that does not parse, no host or database, a
  // Unix socket), this refuses too, with the same words and never the password.
  const problems: ConfigProblem[] = [];
  parseDatabaseUrl(url, process.cwd(), problems);
  if (problems.length > 0) fail(problems.map((p) => `${p.variable} ${p.message}`).join("\n"));
}
/** A refusal found while installing: the transaction is rolled back, the message printed. */
class Refusal extends Error {}

const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
let failure: string | undefined;
try {
  const done = await sql.begin((tx) => install(tx));
  process.stdout.write(
    `feed:install: changes of ${done.table} (id column ${idColumn}) now reach every origin instance through the change log ${qualify(done.schema, CHANGES_TABLE)} in ${redact(url)}\n`,
  );
  // Not refused here: the tables of one view (ITEMS_TABLE) are installed one at a time. The origin, which
  // knows what it serves, refuses to start beside another deployment.
  if (done.others.length > 0) {
    process.stderr.write(
      `feed:install: note: the change log also records changes of ${done.others.join(", ")}. That is right if ITEMS_TABLE is a view that reads ${done.others.length > 1 ? "them" : "it"} and ${done.table}; ` +
        `if ${done.others.length > 1 ? "they belong" : "it belongs"} to another deployment, an origin serving either refuses to start (one deployment per database: docs/limits.md).\n`,
    );
  }
} catch (error) {
  failure = explain(error, redact(url));
} finally {
  await sql.end({ timeout: 2 });
}
if (failure !== undefined) fail(failure);

function explain(error: unknown, display: string): string {
  if (error instanceof Refusal) return error.message;
  const e = error as { code?: string; message?: string };
  if (e.code === "42501") {
    const schema = quoteIdent(schemaOption ?? DEFAULT_LOG_SCHEMA);
    return `cannot install on ${display}: ${e.message} (run it as the table's owner; while the change log is not there yet, with CREATE on schema ${schema}: as the schema's owner, \`GRANT CREATE ON SCHEMA ${schema} TO …\`)`;
  }
  const problem = connectProblem(error, display);
  return problem instanceof ConfigError ? problem.problems[0]!.message : problem.message;
}

/** Checks the table and the column, then creates what is missing, replaces what is outdated, re-creates the triggers. */
async function install(tx: TransactionSql): Promise<{ table: string; schema: string; others: string[] }> {
  await tx.unsafe(SCHEMA_LOCK);
  let relation: Awaited<ReturnType<typeof resolveRelation>>;
  try {
    relation = await resolveRelation(tx, tableName);
  } catch (error) {
    const e = error as { code?: string; message?: string };
    if (e.code === "42501" || e.code?.startsWith("42") !== true) throw error;
    throw new Refusal(`${quoteLiteral(tableName)} is not a table name (${e.message}); write it as in SQL: products, shop.products, or '"Shop"."Products"' for mixed case`);
  }
  if (relation === undefined) {
    const like = await sameButCase(tx, tableName);
    throw new Refusal(`no table ${quoteLiteral(tableName)} in this database (as seen with the search_path of DATABASE_URL's user)${like.length > 0 ? `; did you mean --table ${like.map(shellWord).join(" or ")} (unquoted names are read in lower case, as in SQL)?` : ""}`);
  }
  if (relation.kind === "v") {
    const tables = (await viewReads(tx, relation.oid)).filter((r) => r.kind === "r" || r.kind === "p").map((r) => r.name);
    throw new Refusal(`${relation.sql} is a view: run this for each table it reads (${tables.join(", ") || "none found"}), with the column of that table that holds the view's ids as --id-column`);
  }
  if (relation.kind !== "r" && relation.kind !== "p") throw new Refusal(`${relation.sql} is not a table (a materialized view changes only on REFRESH, which no trigger sees); install on the table it is built from`);
  const columns = await columnsOf(tx, relation.oid);
  if (!columns.has(idColumn)) throw new Refusal(`${relation.sql} has no column ${quoteLiteral(idColumn)}; its columns are ${[...columns.keys()].join(", ")} (pass the id column with --id-column)`);

  const log = await findChangeLog(tx);
  // One change log per database: one this role's search_path does not show is still the one to install beside.
  const [hidden] = log.elsewhere;
  if (log.schema === undefined && hidden !== undefined && (schemaOption === undefined || !log.elsewhere.includes(schemaOption))) {
    throw new Refusal(
      `the change log is already in schema ${hidden} (${qualify(hidden, CHANGES_TABLE)}), which this role's search_path does not show: there is one per database, where every origin reads it; pass --schema ${shellWord(hidden)}`,
    );
  }
  if (schemaOption !== undefined && log.schema !== undefined && log.schema !== schemaOption) {
    throw new Refusal(`the change log is already in schema ${log.schema} (${qualify(log.schema, CHANGES_TABLE)}), where the origin finds it: there is one per database; drop --schema or pass --schema ${shellWord(log.schema)}`);
  }
  const schema = log.schema ?? schemaOption ?? DEFAULT_LOG_SCHEMA;
  if (log.elsewhere.includes(schema)) {
    // Off the search_path, or without USAGE: every query naming the log would fail with "permission denied".
    const usage = await schemaUsage(tx, schema);
    if (!usage.ok) {
      throw new Refusal(`the change log is in schema ${schema}, on which this role has no USAGE: as ${usage.owner}, who owns it, run \`GRANT USAGE ON SCHEMA ${quoteIdent(schema)} TO ${quoteIdent(usage.role)};\`, then run this again`);
    }
  }
  const statements: string[] = [];
  const feed = qualify(schema, FEED_TABLE);
  const [found] = await tx<{ log: boolean; feed: boolean; feedReadable: boolean }[]>`
    SELECT to_regclass(${qualify(schema, CHANGES_TABLE)}) IS NOT NULL AS log, to_regclass(${feed}) IS NOT NULL AS feed,
      to_regclass(${feed}) IS NOT NULL AND has_table_privilege(to_regclass(${feed}), 'SELECT') AS "feedReadable"`;
  if (!found!.log) statements.push(changeLogSql(schema));
  if (!found!.feed) statements.push(feedTableSql(schema));
  // Another table's owner, installing beside a log they do not own, needs no rights on it: its row is
  // the log owner's, put back by their next run (the origin's change feed says so while it is missing).
  else if (found!.feedReadable && (await tx.unsafe(`SELECT 1 FROM ${feed}`)).length === 0) statements.push(feedRowSql(schema));
  const fn = await functionState(tx, schema);
  const fnName = `${qualify(schema, TRIGGER_FUNCTION)}()`;
  if (fn.state === "outdated" && fn.mayReplace === false) {
    throw new Refusal(`${fnName} is an older version (${fn.outdated}) and belongs to ${fn.owner}: run this once as ${fn.owner}`);
  }
  if (fn.state === "current" && fn.mayExecute === false) {
    throw new Refusal(`${fnName} belongs to ${fn.owner}, and this role may not attach it to a table: as ${fn.owner}, run \`GRANT EXECUTE ON FUNCTION ${fnName} TO ${quoteIdent(String((await tx<{ u: string }[]>`SELECT current_user AS u`)[0]!.u))};\``);
  }
  if (fn.state !== "current") statements.push(functionSql(schema));
  statements.push(triggerSql(relation.sql, idColumn, schema));
  if (grantTo !== undefined) statements.push(await grantToStatements(tx, relation, schema, grantTo));
  await tx.unsafe(statements.join(""));
  return { table: relation.sql, schema, others: (await otherFedTables(tx, [relation.oid])).map((o) => o.table) };
}

/**
 * --grant-to's statements. Only the change log's owner can grant on it and its schema: installing beside a
 * log another role owns, what the origin's role already has there is left out, and what it lacks is refused
 * with the GRANT that owner must run (a GRANT here would fail, rolling back the install).
 */
async function grantToStatements(tx: TransactionSql, relation: { sql: string; schema: string }, schema: string, role: string): Promise<string> {
  const [known] = await tx<{ ok: boolean }[]>`SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = ${role}) AS ok`;
  if (!known!.ok) throw new Refusal(`--grant-to ${shellWord(role)}: there is no such role; create it first (CREATE ROLE ${quoteIdent(role)} LOGIN PASSWORD '…'), or name the role the origin's DATABASE_URL logs in as`);
  const log = qualify(schema, CHANGES_TABLE);
  const [owner] = await tx<{ name: string; mine: boolean }[]>`
    SELECT pg_get_userbyid(relowner) AS name, pg_has_role(relowner, 'USAGE') AS mine FROM pg_class WHERE oid = to_regclass(${log})`;
  // No log yet (this install creates it, as this role) or one of this role's own: grant it all.
  if (owner === undefined || owner.mine) return grantSql(relation.sql, relation.schema, schema, role);
  // A table of the log that is not there yet (this run creates it) is granted nothing yet either.
  const lacking = await missingPrivileges(tx, LOG_PRIVILEGES.map(([name, privileges]) => [qualify(schema, name), privileges] as const), role);
  const usage = await schemaUsage(tx, schema, role);
  const fixes = [
    ...(lacking.length > 0 ? [`as ${owner.name}, who owns the change log ${log}, run \`${grants(lacking, role)}\``] : []),
    ...(usage.ok ? [] : [`as ${usage.owner}, who owns its schema, run \`GRANT USAGE ON SCHEMA ${quoteIdent(schema)} TO ${quoteIdent(role)};\``]),
  ];
  if (fixes.length > 0) throw new Refusal(`--grant-to ${shellWord(role)}: only their owners can grant what it needs on the change log: ${fixes.join("; ")}; then run this again`);
  return grantSql(relation.sql, relation.schema, schema, role, false);
}

/** Whether `role` (default: this session's) may use `schema`, and who owns it (who may grant that). */
async function schemaUsage(tx: TransactionSql, schema: string, role?: string): Promise<{ ok: boolean; owner: string; role: string }> {
  const [row] = await tx<{ ok: boolean; owner: string; role: string }[]>`
    SELECT has_schema_privilege(coalesce(${role ?? null}::name, current_user), ${schema}, 'USAGE') AS ok, pg_get_userbyid(nspowner) AS owner,
      coalesce(${role ?? null}::name, current_user)::text AS role
    FROM pg_namespace WHERE nspname = ${schema}`;
  return row!;
}

function fail(message: string): never {
  process.stderr.write(`feed:install: ${message}\n`);
  process.exit(2);
}
