// Items in the origin's own PostgreSQL table (slim_edge_items), shared by any number of origin instances.
// The same contract as the embedded SQLite store (test/origin/store-contract.test.ts runs against both):
// versions per item that are never reused (a delete keeps a tombstone), a random write epoch per store
// session stamped on what it writes, ETag = epoch + version, every write committed before it resolves.

import type { Sql } from "postgres";
import { EPOCH, etagFor, randomEpoch } from "../etag.ts";
import type { ItemStore, StoredItem } from "../item-store.ts";
import { answers, closePool, openPool, unavailable, withDeadline, type PostgresOptions } from "./connection.ts";
import { ITEMS_TABLE } from "./schema.ts";

const SEED_BATCH = 1000;
/** Ids per page of `ids()`: one index range scan of a few ms, far inside any deadline. */
const ID_BATCH = 10_000;

export class OwnedTableStore implements ItemStore {
  readonly writable = true;
  readonly description: string;
  readonly #sql: Sql;
  readonly #timeoutMs: number;
  readonly #epoch: string;
  readonly #idBatch: number;

  /**
   * `writeEpoch`: instead of a random one (tests compare two instances byte for byte). `idBatch`: ids per
   * page of `ids()` (tests page a small table many times).
   */
  constructor(options: PostgresOptions & { display: string; writeEpoch?: string; idBatch?: number }) {
    this.description = `${options.display} (table ${ITEMS_TABLE})`;
    this.#epoch = options.writeEpoch ?? randomEpoch();
    if (!EPOCH.test(this.#epoch)) throw new RangeError(`bad write epoch ${JSON.stringify(this.#epoch)}`);
    this.#sql = openPool(options);
    this.#timeoutMs = options.timeoutMs;
    this.#idBatch = options.idBatch ?? ID_BATCH;
    if (!Number.isSafeInteger(this.#idBatch) || this.#idBatch < 1) throw new RangeError(`bad id batch ${this.#idBatch}`);
  }

  get writeEpoch(): string {
    return this.#epoch;
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

  async put(id: string, body: Uint8Array): Promise<string> {
    const sql = this.#sql;
    const t = sql(ITEMS_TABLE);
    const rows = await withDeadline(
      sql<{ version: string }[]>`
        INSERT INTO ${t} (id, version, epoch, body) VALUES (${id}, 1, ${this.#epoch}, ${Buffer.from(body.buffer, body.byteOffset, body.byteLength)})
        ON CONFLICT (id) DO UPDATE SET version = ${t}.version + 1, epoch = excluded.epoch, body = excluded.body
        RETURNING version`,
      this.#timeoutMs,
      `writing item ${id}`,
    );
    return etagFor(this.#epoch, Number(rows[0]!.version));
  }

  async delete(id: string): Promise<boolean> {
    const sql = this.#sql;
    const rows = await withDeadline(
      sql`UPDATE ${sql(ITEMS_TABLE)} SET version = version + 1, body = NULL WHERE id = ${id} AND body IS NOT NULL RETURNING version`,
      this.#timeoutMs,
      `deleting item ${id}`,
    );
    return rows.length > 0;
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
    return answers(this.#sql, this.#timeoutMs);
  }

  close(): Promise<void> {
    return closePool(this.#sql);
  }
}
