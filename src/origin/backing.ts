// What DATABASE_URL selects besides the store itself: the change feed that tells this instance of other
// writers' changes, and the leader's duties over the store's record of changes (purging the edge, pruning
// the log). Embedded SQLite: one machine, this process's writes are the feed, the process decides who leads.
// PostgreSQL: a feed per instance, leadership by advisory lock.

import type { OriginConfig } from "./config/parse-origin-config.ts";
import { LocalChangeFeed, type ChangeFeed } from "./feed/change-feed.ts";
import { PostgresChangeFeed } from "./feed/postgres-change-feed.ts";
import { PostgresChangeLogPruner, SqliteChangeLogPruner, type ChangeLogPruner } from "./purge/change-log-pruner.ts";
import { startLeaderDuties, type LeaderDuties } from "./purge/leader-duties.ts";
import { FixedLeadership, PostgresLeadership, type Leadership } from "./purge/leadership.ts";
import { PostgresPurgeSource } from "./purge/postgres-purge-source.ts";
import type { PurgeSource } from "./purge/purge-source.ts";
import { SqlitePurgeSource } from "./purge/sqlite-purge-source.ts";
import type { ItemStore } from "./store/item-store.ts";
import type { PostgresOptions } from "./store/postgres/connection.ts";
import { OwnedTableStore } from "./store/postgres/owned-table-store.ts";
import { preparePostgres, recheckPostgres } from "./store/postgres/prepare.ts";
import { UserTableStore } from "./store/postgres/user-table-store.ts";
import { SqliteItemStore } from "./store/sqlite-store.ts";

/** Leadership needs a deadline a slow database does not make flap (leadership.ts). */
const MIN_LEADERSHIP_TIMEOUT_MS = 2000;

export function postgresOptions(config: OriginConfig, url: string, role = "origin"): PostgresOptions {
  return { url, poolSize: config.poolSize, timeoutMs: config.storeTimeoutMs, applicationName: `slim-edge-${role}` };
}

/** The store DATABASE_URL names, checked (and for PostgreSQL, its schema prepared) before anything is served. */
export async function openStore(config: OriginConfig, writeEpoch: string | undefined, log: (line: string) => void): Promise<ItemStore> {
  const { database } = config;
  if (database.kind === "sqlite") {
    // The purger reads what changed from the store: record it in the same transaction as each write.
    return new SqliteItemStore(database.path, { ...(writeEpoch === undefined ? {} : { writeEpoch }), recordChanges: config.purge !== undefined, log });
  }
  const options = { ...postgresOptions(config, database.url), display: database.display };
  const shape = await preparePostgres(options, config.userTable);
  if (shape !== undefined) return new UserTableStore(options, shape);
  return new OwnedTableStore(writeEpoch === undefined ? options : { ...options, writeEpoch });
}

export function feedFor(config: OriginConfig, log: (line: string) => void): ChangeFeed {
  const { database } = config;
  if (database.kind === "sqlite") return new LocalChangeFeed();
  return new PostgresChangeFeed({
    ...postgresOptions(config, database.url),
    pollMs: config.feedPollMs,
    staleBoundMs: config.feedStaleBoundMs,
    log,
    recheck: (sql) => recheckPostgres(sql, config.userTable, config.storeTimeoutMs),
  });
}

/**
 * The leader's duties for this store. `sqliteLeader`: whether this process leads (the embedded store's
 * processes share one file; the cluster primary picks one). A store the origin did not open itself (a
 * test's wrapper) records nothing for a purger to read: its duties are none.
 */
export async function startDutiesFor(
  config: OriginConfig,
  store: ItemStore,
  sqliteLeader: boolean,
  log: (line: string) => void,
  purgeRefusalStopsStart = true,
): Promise<LeaderDuties> {
  const { database } = config;
  let leadership: Leadership;
  let source: PurgeSource | undefined;
  let pruner: ChangeLogPruner | undefined;
  const closeables: (() => Promise<void>)[] = [];
  if (database.kind === "postgres") {
    const options = postgresOptions(config, database.url);
    leadership = new PostgresLeadership({
      url: database.url,
      timeoutMs: Math.max(MIN_LEADERSHIP_TIMEOUT_MS, config.storeTimeoutMs),
      applicationName: "slim-edge-leader",
      duties: config.purge === undefined ? "the change log's pruning" : "the purge and the change log's pruning",
      log,
    });
    const postgresPruner = new PostgresChangeLogPruner(postgresOptions(config, database.url, "pruner"));
    pruner = postgresPruner;
    closeables.push(() => postgresPruner.close());
    if (config.purge !== undefined) {
      const postgresSource = new PostgresPurgeSource(options);
      source = postgresSource;
      closeables.push(() => postgresSource.close());
    }
  } else {
    leadership = new FixedLeadership(sqliteLeader);
    if (store instanceof SqliteItemStore && store.recordsChanges) {
      // Only the leading process purges, so only it checks the token: N processes would spend N calls of the
      // account's purge budget at every start. A refusal there stops the whole start (cluster/primary.ts).
      if (sqliteLeader) source = new SqlitePurgeSource(store);
      pruner = new SqliteChangeLogPruner(store);
    } else if (config.purge !== undefined) {
      log("origin: purge on change needs the store the origin opens itself; nothing will be purged");
    }
  }
  try {
    return await startLeaderDuties({
      leadership,
      purge: config.purge === undefined || source === undefined ? undefined : { config: config.purge, source },
      pruner,
      closeables,
      log,
      refusalStopsStart: purgeRefusalStopsStart,
    });
  } catch (error) {
    for (const close of closeables) await close();
    throw error;
  }
}
