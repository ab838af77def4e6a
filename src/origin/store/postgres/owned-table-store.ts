// Items in the origin's own PostgreSQL table (slim_edge_items), shared by any number of origin instances.
// The same contract as the embedded SQLite store (test/origin/store-contract.test.ts runs against both):
// versions per item that are never reused (a delete keeps a tombstone), a random write epoch per store
// session stamped on what it writes, ETag = epoch + version, every write committed before it resolves.

import type { Fragment, PendingQuery, Sql } from "postgres";
import { EPOCH, etagFor, parseEtag, randomEpoch } from "../etag.ts";
import { PreconditionFailedError, type DeleteResult, type ItemStore, type PutResult, type StoredItem, type WriteCondition } from "../item-store.ts";
import { answers, anyOf, closePool, openPool, unavailable, withDeadline, type PostgresOptions } from "./connection.ts";
import { ITEMS_TABLE } from "./schema.ts";

const SEED_BATCH = 1000;
/** Ids per page of `ids()`: one index range scan of a few ms, far inside any deadline. */
const ID_BATCH = 10_000;

/**
 * A written row: its new version, and the transaction that wrote it (`xid`) as the trigger records it in the
 * change log (the column's default, pg_current_xact_id(): schema.ts) and the change feed reports it.
 */
type Written = { version: string; xid: string };

export class OwnedTableStore implements ItemStore {
  readonly writable = true;
  readonly description: string;
  readonly #sql: Sql;
  readonly #timeoutMs: number;
  #epoch: string;
  readonly #fixedEpoch: boolean;
  readonly #idBatch: number;

  /**
   * `writeEpoch`: instead of a random one (tests compare two instances byte for byte). `idBatch`: ids per
   * page of `ids()` (tests page a small table many times).
   */
  constructor(options: PostgresOptions & { display: string; writeEpoch?: string; idBatch?: number }) {
    this.description = `${options.display} (table ${ITEMS_TABLE})`;
    this.#epoch = options.writeEpoch ?? randomEpoch();
    this.#fixedEpoch = options.writeEpoch !== undefined;
    if (!EPOCH.test(this.#epoch)) throw new RangeError(`bad write epoch ${JSON.stringify(this.#epoch)}`);
    this.#sql = openPool(options);
    this.#timeoutMs = options.timeoutMs;
    this.#idBatch = options.idBatch ?? ID_BATCH;
    if (!Number.isSafeInteger(this.#idBatch) || this.#idBatch < 1) throw new RangeError(`bad id batch ${this.#idBatch}`);
  }

  get writeEpoch(): string {
    return this.#epoch;
  }

  /** A TRUNCATE removes tombstones with the rows: version 1 of an id may be written again, under a new epoch. */
  renewWriteEpoch(): void {
    if (this.#fixedEpoch) return;
    let next = randomEpoch();
    while (next === this.#epoch) next = randomEpoch();
    this.#epoch = next;
  }

  async get(id: string): Promise<StoredItem | undefined> {
    const sql = this.#sql;
    const rows = await withDeadline(
      sql<{ version: string; epoch: string; body: Buffer }[]>`SELECT version, epoch, body FROM ${sql(ITEMS_TABLE)} WHERE id = ${id} AND body IS NOT NULL`,
      this.#timeoutMs,
      `reading item ${id}`,
    );
    const row = rows[0];
    return row === undefined ? undefined : { etag: etagFor(row.epoch, Number(row.version)), body: row.body };
  }

  /**
   * A `condition` is part of the one statement that writes, so nothing can change the row between its
   * check and the write. With If-Match: an UPDATE of the live row whose ETag matches (READ COMMITTED
   * re-checks the WHERE on the newest row version after waiting for a concurrent writer). Without: the
   * usual upsert, whose DO UPDATE runs only where If-None-Match holds (ON CONFLICT locks the conflicting
   * row and evaluates that WHERE on its newest version). No row returned: refused, nothing written, so no
   * trigger fired and no change is logged.
   */
  async put(id: string, body: Uint8Array, condition?: WriteCondition): Promise<PutResult> {
    const sql = this.#sql;
    const t = sql(ITEMS_TABLE);
    const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    // Read once: a new epoch drawn while this write waits must not name a version written under the old one.
    const epoch = this.#epoch;
    let statement: PendingQuery<Written[]>;
    if (condition === undefined) {
      statement = sql<Written[]>`
        INSERT INTO ${t} (id, version, epoch, body) VALUES (${id}, 1, ${epoch}, ${bytes})
        ON CONFLICT (id) DO UPDATE SET version = ${t}.version + 1, epoch = excluded.epoch, body = excluded.body
        RETURNING version, pg_current_xact_id()::text AS xid`;
    } else if (condition.ifMatch !== undefined) {
      statement = sql<Written[]>`
        UPDATE ${t} SET version = version + 1, epoch = ${epoch}, body = ${bytes}
        WHERE id = ${id} AND body IS NOT NULL AND ${this.#holds(ITEMS_TABLE, condition)}
        RETURNING version, pg_current_xact_id()::text AS xid`;
    } else {
      statement = sql<Written[]>`
        INSERT INTO ${t} (id, version, epoch, body) VALUES (${id}, 1, ${epoch}, ${bytes})
        ON CONFLICT (id) DO UPDATE SET version = ${t}.version + 1, epoch = excluded.epoch, body = excluded.body
        WHERE ${t}.body IS NULL OR ${this.#holds(ITEMS_TABLE, condition)}
        RETURNING version, pg_current_xact_id()::text AS xid`;
    }
    const rows = await withDeadline(statement, this.#timeoutMs, `writing item ${id}`);
    if (rows.length === 0) throw new PreconditionFailedError(id);
    const row = rows[0]!;
    return { etag: etagFor(epoch, Number(row.version)), transaction: BigInt(row.xid) };
  }

  /**
   * With a `condition`: one statement that locks the live row (FOR UPDATE, which waits for a concurrent
   * writer and then reads the newest version), evaluates the condition on what it locked and tombstones it
   * only if it holds; it also reports whether there was a live row, since a refusal and "nothing to delete"
   * are different answers (412, 204) unless If-Match asked for a live item.
   */
  async delete(id: string, condition?: WriteCondition): Promise<DeleteResult> {
    const sql = this.#sql;
    const t = sql(ITEMS_TABLE);
    if (condition === undefined) {
      const rows = await withDeadline(
        sql<Written[]>`UPDATE ${t} SET version = version + 1, body = NULL WHERE id = ${id} AND body IS NOT NULL RETURNING version, pg_current_xact_id()::text AS xid`,
        this.#timeoutMs,
        `deleting item ${id}`,
      );
      return rows.length > 0 ? { deleted: true, transaction: BigInt(rows[0]!.xid) } : { deleted: false, transaction: undefined };
    }
    const rows = await withDeadline(
      sql<{ live: number; xid: string | null }[]>`
        WITH live AS (SELECT epoch, version FROM ${t} WHERE id = ${id} AND body IS NOT NULL FOR UPDATE),
        gone AS (
          UPDATE ${t} SET version = ${t}.version + 1, body = NULL FROM live
          WHERE ${t}.id = ${id} AND ${this.#holds("live", condition)}
          RETURNING ${t}.version, pg_current_xact_id()::text AS xid)
        SELECT (SELECT count(*) FROM live)::int AS live, (SELECT xid FROM gone) AS xid`,
      this.#timeoutMs,
      `deleting item ${id}`,
    );
    const { live, xid } = rows[0]!;
    if (xid !== null) return { deleted: true, transaction: BigInt(xid) };
    if (live > 0 || condition.ifMatch !== undefined) throw new PreconditionFailedError(id);
    return { deleted: false, transaction: undefined }; // no live item, and no If-Match asking for one: nothing to delete (204)
  }

  /**
   * `condition` as SQL on the epoch and version columns of `row` (the table, or a CTE), for a row known to
   * be live. ETags are compared as epoch + decimal version (`"Xa1"` → `Xa1`; the epoch has a fixed length,
   * so this reads back one way only); a tag this store never issues matches nothing.
   */
  #holds(row: string, condition: WriteCondition): Fragment {
    const sql = this.#sql;
    const key = sql`(${sql(row)}.epoch || ${sql(row)}.version::text)`;
    const { ifMatch, ifNoneMatch } = condition;
    const oneOf = (etags: readonly string[]) => sql`${key} = ${anyOf(sql, versionKeys(etags), "text")}`;
    const match = ifMatch === undefined || ifMatch === "*" ? sql`TRUE` : oneOf(ifMatch);
    if (ifNoneMatch === undefined) return match;
    if (ifNoneMatch === "*") return sql`FALSE`;
    return sql`${match} AND NOT ${oneOf(ifNoneMatch)}`;
  }

  async count(): Promise<number> {
    const sql = this.#sql;
    const rows = await withDeadline(sql<{ n: string }[]>`SELECT count(*) AS n FROM ${sql(ITEMS_TABLE)} WHERE body IS NOT NULL`, this.#timeoutMs, "counting items");
    return Number(rows[0]!.n);
  }

  async seedIfEmpty(items: Iterable<readonly [string, Uint8Array]>): Promise<number> {
    try {
      return await this.#sql.begin(async (sql) => {
        // Two instances seeding at once: the second waits here, then finds the items.
        await sql`LOCK TABLE ${sql(ITEMS_TABLE)} IN SHARE ROW EXCLUSIVE MODE`;
        const any = await sql`SELECT 1 FROM ${sql(ITEMS_TABLE)} LIMIT 1`;
        if (any.length > 0) return 0;
        let inserted = 0;
        let batch: { id: string; version: number; epoch: string; body: Buffer }[] = [];
        const flush = async () => {
          if (batch.length === 0) return;
          await sql`INSERT INTO ${sql(ITEMS_TABLE)} ${sql(batch)} ON CONFLICT DO NOTHING`;
          inserted += batch.length;
          batch = [];
        };
        for (const [id, body] of items) {
          batch.push({ id, version: 1, epoch: this.#epoch, body: Buffer.from(body) });
          if (batch.length === SEED_BATCH) await flush();
        }
        await flush();
        return inserted;
      });
    } catch (error) {
      throw unavailable(error, "seeding sample items");
    }
  }

  /**
   * Every live id, a page at a time in id order, each page its own short statement under the deadline and
   * starting after the last id of the one before (keyset). Not a cursor: that is one statement for the
   * whole scan, which STORE_TIMEOUT_MS cancelled on a table of a few million ids, after which postgres.js
   * (3.4.9) could hand the cancelled cursor's rows to the connection's next query. An id that exists
   * throughout the scan is listed exactly once; one created or deleted meanwhile may or may not be.
   */
  async *ids(): AsyncIterable<readonly string[]> {
    const sql = this.#sql;
    const t = sql(ITEMS_TABLE);
    const limit = this.#idBatch;
    let last: string | undefined;
    for (;;) {
      const page =
        last === undefined
          ? sql<{ id: string }[]>`SELECT id FROM ${t} WHERE body IS NOT NULL ORDER BY id LIMIT ${limit}`
          : sql<{ id: string }[]>`SELECT id FROM ${t} WHERE body IS NOT NULL AND id > ${last} ORDER BY id LIMIT ${limit}`;
      const ids = (await withDeadline(page, this.#timeoutMs, "listing item ids")).map((row) => row.id);
      if (ids.length > 0) yield ids;
      if (ids.length < limit) return;
      last = ids[ids.length - 1];
    }
  }

  ping(): Promise<boolean> {
    const sql = this.#sql;
    return answers(sql`SELECT version, epoch, body FROM ${sql(ITEMS_TABLE)} LIMIT 0`, this.#timeoutMs);
  }

  close(): Promise<void> {
    return closePool(this.#sql);
  }
}


/** Each ETag this store could have issued as epoch + decimal version (`"Xa1"` → `Xa1`); others are left out. */
function versionKeys(etags: readonly string[]): string[] {
  const keys: string[] = [];
  for (const etag of etags) {
    const parsed = parseEtag(etag);
    if (parsed !== undefined) keys.push(parsed.epoch + String(parsed.version));
  }
  return keys;
}
