// The PostgreSQL objects the origin relies on, as SQL. Two kinds of table can hold items: the origin's own
// (`slim_edge_items`, read and written by the origin) or the user's (any table or view, read only). Either
// way every committed change is recorded, in the same transaction, in the change log by a trigger, so that
// every instance (and the purger) learns of it whoever wrote it. What exists is checked, and what is
// missing created, by prepare.ts (at start) and scripts/feed-install.ts (for the user's table).
//
// The change log, its feed row and the trigger function live in one schema, decided when they are
// installed and written into the function: the function runs as its owner (SECURITY DEFINER) for every
// writer of the table, so it must not look anything up through a search_path a writer can put objects in
// (pg_temp is searched first unless named last): its path is `pg_catalog, pg_temp` and every object it
// touches is schema-qualified.

import { ITEM_ID } from "../../../shared/item-id.ts";

/** The channel every change is announced on (payload: `seq:xid:id`, parsed in src/origin/feed/change-log-cursor.ts). */
export const CHANGE_CHANNEL = "slim_edge_changes";
export const ITEMS_TABLE = "slim_edge_items";
export const CHANGES_TABLE = "slim_edge_changes";
export const FEED_TABLE = "slim_edge_feed";
export const TRIGGER_FUNCTION = "slim_edge_record_change";
/** The triggers' names on whichever table holds the items: rows, and TRUNCATE. */
export const TRIGGER_NAME = "slim_edge_record_change";
export const TRUNCATE_TRIGGER_NAME = `${TRIGGER_NAME}_truncate`;
/** Where feed:install puts the change log unless given --schema. */
export const DEFAULT_LOG_SCHEMA = "public";
/** The function's only setting, as pg_proc.proconfig holds it. */
export const FUNCTION_SETTING = "search_path=pg_catalog, pg_temp";
/** pg_trigger.tgtype of the two triggers: ROW | INSERT | DELETE | UPDATE (AFTER), and TRUNCATE (AFTER, per statement). */
export const ROW_TRIGGER_TYPE = 1 | 4 | 8 | 16;
export const TRUNCATE_TRIGGER_TYPE = 32;

/** `schema.name`, each part quoted. */
export function qualify(schema: string, name: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(name)}`;
}

/**
 * The change log, shared by both kinds of item table. A change row says "this id changed in transaction
 * xid"; `item_id = ''` (never a valid id) says "everything changed" (TRUNCATE). `xid` lets a reader that was
 * away catch up exactly: what its last snapshot did not see as finished is all it can have missed
 * (src/origin/feed/change-log-cursor.ts).
 */
export function changeLogSql(schema: string): string {
  const log = qualify(schema, CHANGES_TABLE);
  return `CREATE TABLE IF NOT EXISTS ${log} (
  seq bigserial PRIMARY KEY,
  xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
  item_id text NOT NULL,
  changed_at timestamptz NOT NULL DEFAULT now(),
  purged boolean NOT NULL DEFAULT false
);
CREATE INDEX IF NOT EXISTS ${CHANGES_TABLE}_xid ON ${log} (xid);
CREATE INDEX IF NOT EXISTS ${CHANGES_TABLE}_unpurged ON ${log} (seq) WHERE NOT purged;
`;
}

/** The log's identity and pruning point: one row. */
export function feedTableSql(schema: string): string {
  return `CREATE TABLE IF NOT EXISTS ${qualify(schema, FEED_TABLE)} (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  feed_id uuid NOT NULL DEFAULT gen_random_uuid(),
  pruned_below xid8 NOT NULL DEFAULT '0'
);
${feedRowSql(schema)}`;
}

export function feedRowSql(schema: string): string {
  return `INSERT INTO ${qualify(schema, FEED_TABLE)} DEFAULT VALUES ON CONFLICT DO NOTHING;\n`;
}

/**
 * The trigger function's body for a change log in `schema`. prepare.ts compares an installed function's
 * body with this (whitespace aside): one that differs (an older version) is replaced or refused.
 *
 * Only item ids are recorded (src/shared/item-id.ts, the same pattern): no request can name any other, so no
 * cache holds it, and a user's table may hold ids of any length, while NOTIFY refuses a payload of 8,000
 * bytes or more, which failed the writer's own statement.
 */
export function functionBody(schema: string): string {
  const log = qualify(schema, CHANGES_TABLE);
  const itemId = `'${ITEM_ID.source}'`;
  return `
DECLARE
  id_column text := TG_ARGV[0];
  old_id text;
  new_id text;
  change record;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    INSERT INTO ${log} (item_id) VALUES ('') RETURNING seq, xid INTO change;
    PERFORM pg_notify('${CHANGE_CHANNEL}', change.seq || ':' || change.xid || ':');
    RETURN NULL;
  END IF;
  IF TG_OP <> 'INSERT' THEN old_id := to_jsonb(OLD) ->> id_column; END IF;
  IF TG_OP <> 'DELETE' THEN new_id := to_jsonb(NEW) ->> id_column; END IF;
  IF old_id ~ ${itemId} AND old_id IS DISTINCT FROM new_id THEN
    INSERT INTO ${log} (item_id) VALUES (old_id) RETURNING seq, xid INTO change;
    PERFORM pg_notify('${CHANGE_CHANNEL}', change.seq || ':' || change.xid || ':' || old_id);
  END IF;
  IF new_id ~ ${itemId} THEN
    INSERT INTO ${log} (item_id) VALUES (new_id) RETURNING seq, xid INTO change;
    PERFORM pg_notify('${CHANGE_CHANNEL}', change.seq || ':' || change.xid || ':' || new_id);
  END IF;
  RETURN NULL;
END
`;
}

/**
 * The function every writer of the items table records its changes through, without rights on the log
 * (SECURITY DEFINER, with the fixed search_path above). Only triggers run it: EXECUTE is revoked from
 * PUBLIC so that nobody attaches it to a table of their own (a temporary one, say) to write the log.
 */
export function functionSql(schema: string): string {
  const fn = qualify(schema, TRIGGER_FUNCTION);
  return `CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql
  SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$${functionBody(schema)}$fn$;
REVOKE ALL ON FUNCTION ${fn}() FROM PUBLIC;
`;
}

/** The origin's own item table: versions never reused (a delete keeps a tombstone), epoch per writing session. */
export function ownedTableSql(schema: string): string {
  return `CREATE TABLE IF NOT EXISTS ${qualify(schema, ITEMS_TABLE)} (
  id text PRIMARY KEY,
  version bigint NOT NULL,
  epoch text NOT NULL,
  body bytea
);
`;
}

/**
 * The triggers that feed changes of `table` (quoted, schema-qualified SQL) to the log in `schema`;
 * idempotent. ENABLE ALWAYS: they fire in logical-replication apply workers too (session_replication_role
 * = replica), which skip triggers enabled the default way (and CREATE OR REPLACE resets them to it).
 */
export function triggerSql(table: string, idColumn: string, schema: string): string {
  const fn = `${qualify(schema, TRIGGER_FUNCTION)}(${quoteLiteral(idColumn)})`;
  return `CREATE OR REPLACE TRIGGER ${TRIGGER_NAME} AFTER INSERT OR UPDATE OR DELETE ON ${table}
  FOR EACH ROW EXECUTE FUNCTION ${fn};
CREATE OR REPLACE TRIGGER ${TRUNCATE_TRIGGER_NAME} AFTER TRUNCATE ON ${table}
  FOR EACH STATEMENT EXECUTE FUNCTION ${fn};
ALTER TABLE ${table} ENABLE ALWAYS TRIGGER ${TRIGGER_NAME}, ENABLE ALWAYS TRIGGER ${TRUNCATE_TRIGGER_NAME};
`;
}

/** What serving a user's table needs on the change log beside it: read it, mark changes purged, prune it. */
export const LOG_PRIVILEGES: readonly (readonly [table: string, privileges: readonly string[]])[] = [
  [CHANGES_TABLE, ["SELECT", "UPDATE", "DELETE"]],
  [FEED_TABLE, ["SELECT", "UPDATE"]],
];

/**
 * What a role that does not own them needs to serve `table` (quoted SQL) through the log in `schema`:
 * read the table, read the log, mark changes purged and prune the log. `tableSchema`: the table's schema,
 * when known. Without `log`, only what is granted on the table and its schema.
 */
export function grantSql(table: string, tableSchema: string | undefined, schema: string, role: string, log = true): string {
  const to = quoteIdent(role);
  const schemas = [...new Set([...(tableSchema === undefined ? [] : [tableSchema]), ...(log ? [schema] : [])])];
  const onLog = log ? LOG_PRIVILEGES.map(([name, privileges]) => `GRANT ${privileges.join(", ")} ON ${qualify(schema, name)} TO ${to};\n`).join("") : "";
  return `${schemas.map((s) => `GRANT USAGE ON SCHEMA ${quoteIdent(s)} TO ${to};\n`).join("")}GRANT SELECT ON ${table} TO ${to};\n${onLog}`;
}

/** Everything a user's table needs, as one script (feed:install --print): idempotent, one transaction. */
export function installScript(table: string, idColumn: string, schema = DEFAULT_LOG_SCHEMA, grantTo?: { role: string; tableSchema: string | undefined }): string {
  const grants = grantTo === undefined ? "" : grantSql(table, grantTo.tableSchema, schema, grantTo.role);
  return `BEGIN;\n${changeLogSql(schema)}${feedTableSql(schema)}${functionSql(schema)}${triggerSql(table, idColumn, schema)}${grants}COMMIT;\n`;
}

/** One SQL identifier, quoted. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * `schema.table` (raw names, as UserTableShape.table holds them) as `"schema"."table"`. Not for names that
 * contain a dot themselves: prepare.ts refuses those.
 */
export function quoteName(name: string): string {
  return name
    .split(".")
    .map((part) => quoteIdent(part))
    .join(".");
}

/**
 * A table name written as in SQL (and as to_regclass reads it): `Shop.Items` is shop.items (unquoted names
 * fold to lower case), `"Shop"."Items"` is Shop.Items. The parts, or undefined when it is not such a name.
 */
export function parseQualifiedName(text: string): { schema: string | undefined; name: string } | undefined {
  const parts: string[] = [];
  let rest = text.trim();
  for (;;) {
    const quoted = /^"((?:[^"]|"")+)"/.exec(rest);
    const bare = quoted === null ? /^[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*/.exec(rest) : null;
    const match = quoted ?? bare;
    if (match === null) return undefined;
    // PostgreSQL folds unquoted names to lower case, ASCII letters only (in a UTF-8 database).
    parts.push(quoted === null ? match[0].replace(/[A-Z]/g, (c) => c.toLowerCase()) : quoted[1]!.replaceAll('""', '"'));
    rest = rest.slice(match[0].length);
    if (rest === "") break;
    if (rest[0] !== ".") return undefined;
    rest = rest.slice(1);
  }
  if (parts.length > 2) return undefined;
  return parts.length === 2 ? { schema: parts[0], name: parts[1]! } : { schema: undefined, name: parts[0]! };
}

export function quoteLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/** A word as a POSIX shell reads it: as it is when that is safe, else single-quoted. */
export function shellWord(value: string): string {
  return /^[A-Za-z0-9_.,:\/=@%+-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}
