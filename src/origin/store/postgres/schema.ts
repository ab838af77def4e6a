// The PostgreSQL objects the origin relies on, as SQL, and their idempotent creation at start. Two kinds of
// table can hold items: the origin's own (`slim_edge_items`, read and written by the origin) or the user's
// (any table or view, read only). Either way every committed change is recorded, in the same transaction,
// in the change log by a trigger, so that every instance (and the purger) learns of it whoever wrote it.

/** The channel every change is announced on (payload: `seq:xid:id`, parsed in src/origin/feed/change-log-cursor.ts). */
export const CHANGE_CHANNEL = "slim_edge_changes";
export const ITEMS_TABLE = "slim_edge_items";
export const CHANGES_TABLE = "slim_edge_changes";
export const FEED_TABLE = "slim_edge_feed";
export const TRIGGER_FUNCTION = "slim_edge_record_change";
/** The trigger's name on whichever table holds the items. */
export const TRIGGER_NAME = "slim_edge_record_change";

/**
 * The change log and its function, shared by both kinds of item table. A change row says "this id changed
 * in transaction xid"; `item_id = ''` (never a valid id) says "everything changed" (TRUNCATE). `xid` lets a
 * reader that was away catch up exactly: every transaction older than a snapshot's xmin has committed or
 * aborted, so rows with xid ≥ the xmin it last saw are all it can have missed (src/origin/feed/change-log-cursor.ts).
 */
export const CHANGE_LOG_SQL = `
CREATE TABLE IF NOT EXISTS ${CHANGES_TABLE} (
  seq bigserial PRIMARY KEY,
  xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
  item_id text NOT NULL,
  changed_at timestamptz NOT NULL DEFAULT now(),
  purged boolean NOT NULL DEFAULT false
);
CREATE INDEX IF NOT EXISTS ${CHANGES_TABLE}_xid ON ${CHANGES_TABLE} (xid);
CREATE INDEX IF NOT EXISTS ${CHANGES_TABLE}_unpurged ON ${CHANGES_TABLE} (seq) WHERE NOT purged;
CREATE TABLE IF NOT EXISTS ${FEED_TABLE} (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  feed_id uuid NOT NULL DEFAULT gen_random_uuid(),
  pruned_below xid8 NOT NULL DEFAULT '0'
);
INSERT INTO ${FEED_TABLE} DEFAULT VALUES ON CONFLICT DO NOTHING;
CREATE OR REPLACE FUNCTION ${TRIGGER_FUNCTION}() RETURNS trigger LANGUAGE plpgsql
  -- Every writer of the items table records its changes without needing rights on the change log.
  SECURITY DEFINER SET search_path FROM CURRENT AS $fn$
DECLARE
  id_column text := TG_ARGV[0];
  old_id text;
  new_id text;
  change record;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    INSERT INTO ${CHANGES_TABLE} (item_id) VALUES ('') RETURNING seq, xid INTO change;
    PERFORM pg_notify('${CHANGE_CHANNEL}', change.seq || ':' || change.xid || ':');
    RETURN NULL;
  END IF;
  IF TG_OP <> 'INSERT' THEN old_id := to_jsonb(OLD) ->> id_column; END IF;
  IF TG_OP <> 'DELETE' THEN new_id := to_jsonb(NEW) ->> id_column; END IF;
  IF old_id IS NOT NULL AND old_id IS DISTINCT FROM new_id THEN
    INSERT INTO ${CHANGES_TABLE} (item_id) VALUES (old_id) RETURNING seq, xid INTO change;
    PERFORM pg_notify('${CHANGE_CHANNEL}', change.seq || ':' || change.xid || ':' || old_id);
  END IF;
  IF new_id IS NOT NULL THEN
    INSERT INTO ${CHANGES_TABLE} (item_id) VALUES (new_id) RETURNING seq, xid INTO change;
    PERFORM pg_notify('${CHANGE_CHANNEL}', change.seq || ':' || change.xid || ':' || new_id);
  END IF;
  RETURN NULL;
END
$fn$;
`;

/** The origin's own item table: versions never reused (a delete keeps a tombstone), epoch per writing session. */
export const OWNED_TABLE_SQL = `
CREATE TABLE IF NOT EXISTS ${ITEMS_TABLE} (
  id text PRIMARY KEY,
  version bigint NOT NULL,
  epoch text NOT NULL,
  body bytea
);
`;

/** The triggers that feed changes of `table` (a quoted, possibly schema-qualified name); idempotent. */
export function triggerSql(table: string, idColumn: string): string {
  return `
CREATE OR REPLACE TRIGGER ${TRIGGER_NAME} AFTER INSERT OR UPDATE OR DELETE ON ${table}
  FOR EACH ROW EXECUTE FUNCTION ${TRIGGER_FUNCTION}(${quoteLiteral(idColumn)});
CREATE OR REPLACE TRIGGER ${TRIGGER_NAME}_truncate AFTER TRUNCATE ON ${table}
  FOR EACH STATEMENT EXECUTE FUNCTION ${TRIGGER_FUNCTION}(${quoteLiteral(idColumn)});
`;
}

/**
 * Everything a user's table needs, as one script: the change log, its function and the triggers, and with
 * `grantTo` the rights the origin's own role needs (reading the table and the log, marking changes purged,
 * pruning the log) when it is not the owner.
 */
export function installScript(table: string, idColumn: string, grantTo?: string): string {
  const grants =
    grantTo === undefined
      ? ""
      : `GRANT SELECT ON ${table} TO ${quoteName(grantTo)};
GRANT SELECT, UPDATE, DELETE ON ${CHANGES_TABLE} TO ${quoteName(grantTo)};
GRANT SELECT, UPDATE ON ${FEED_TABLE} TO ${quoteName(grantTo)};
`;
  return `BEGIN;\n${CHANGE_LOG_SQL}\n${triggerSql(table, idColumn)}\n${grants}COMMIT;\n`;
}

/** An SQL identifier, quoted; `schema.table` becomes `"schema"."table"`. */
export function quoteName(name: string): string {
  return name
    .split(".")
    .map((part) => `"${part.replaceAll('"', '""')}"`)
    .join(".");
}

export function quoteLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}
