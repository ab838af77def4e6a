// Items read from a table or view the origin does not own (ITEMS_TABLE): read only, PUT/DELETE answer 405.
// The id column may be text, an integer or a uuid; only its canonical spelling is an id (so that the URL,
// the edge's cache tag and the change log's id are the same string). The body is a JSON column, or the
// whole row as JSON; the ETag comes from a version column or the content, computed the same way on every
// instance.

import { createHash } from "node:crypto";
import type { Sql } from "postgres";
import { checkAndMinifyJson } from "../../http/json.ts";
import type { DeleteResult, ItemStore, PutResult, StoredItem } from "../item-store.ts";
import { answers, closePool, openPool, withDeadline, type PostgresOptions } from "./connection.ts";
import { quoteName } from "./schema.ts";

/** How an id of the table's id column is spelled: the column's type family. */
export type IdKind = "text" | "int2" | "int4" | "int8" | "uuid";

export interface UserTableShape {
  /** The table or view, as configured (quoted when used). */
  table: string;
  idColumn: string;
  idKind: IdKind;
  /** The SQL type the id is cast to in the lookup (the column's own, so its index is used). */
  idType: string;
  /** undefined: the whole row as JSON. */
  jsonColumn: string | undefined;
  /** undefined: the ETag comes from the content. */
  versionColumn: string | undefined;
  /** The version column holds whole numbers (a compact ETag), not timestamps or text (a hashed one). */
  integerVersion: boolean;
}

/** Ids per page of `ids()`: one index range scan of a few ms, far inside any deadline. */
const ID_BATCH = 10_000;
const INTEGER_BITS = { int2: 16n, int4: 32n, int8: 64n } as const;
const DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_";

export class UserTableStore implements ItemStore {
  readonly writable = false;
  readonly description: string;
  readonly #sql: Sql;
  readonly #timeoutMs: number;
  readonly #shape: UserTableShape;
  readonly #lookup: string;
  readonly #probe: string;
  /** The first page of ids, and every next one (after `$1`, the last id listed). */
  readonly #firstIds: string;
  readonly #nextIds: string;
  readonly #idBatch: number;

  /** `idBatch`: ids per page of `ids()` (tests page a small table many times). */
  constructor(options: PostgresOptions & { display: string; idBatch?: number }, shape: UserTableShape) {
    this.description = `${options.display} (table ${shape.table}, read only)`;
    this.#sql = openPool(options);
    this.#timeoutMs = options.timeoutMs;
    this.#shape = shape;
    const body = shape.jsonColumn === undefined ? "to_jsonb(t)::text" : `t.${quoteName(shape.jsonColumn)}::text`;
    const version = shape.versionColumn === undefined ? "NULL" : `t.${quoteName(shape.versionColumn)}::text`;
    this.#lookup = `SELECT ${body} AS body, ${version} AS version FROM ${quoteName(shape.table)} t WHERE t.${quoteName(shape.idColumn)} = $1::${shape.idType} LIMIT 1`;
    // The lookup's table and columns, no row: what /healthz runs.
    this.#probe = `SELECT ${body} AS body, ${version} AS version, t.${quoteName(shape.idColumn)} AS id FROM ${quoteName(shape.table)} t LIMIT 0`;
    // Paged in the column's own order and compared as its own type (integers as integers, so 10 follows 9;
    // the column's collation; its index is used), listed in its text spelling. Qualified with `t.`: a bare
    // name in ORDER BY would be the output column (the text). NULL is no id (and no request can name it).
    this.#idBatch = options.idBatch ?? ID_BATCH;
    if (!Number.isSafeInteger(this.#idBatch) || this.#idBatch < 1) throw new RangeError(`bad id batch ${this.#idBatch}`);
    const id = `t.${quoteName(shape.idColumn)}`;
    const page = (where: string) => `SELECT ${id}::text AS id FROM ${quoteName(shape.table)} t WHERE ${where} ORDER BY ${id} LIMIT ${this.#idBatch}`;
    this.#firstIds = page(`${id} IS NOT NULL`);
    this.#nextIds = page(`${id} > $1::${shape.idType}`);
  }

  async get(id: string): Promise<StoredItem | undefined> {
    if (!isCanonical(id, this.#shape.idKind)) return undefined;
    const rows = await withDeadline(this.#sql.unsafe<{ body: string | null; version: string | null }[]>(this.#lookup, [id]), this.#timeoutMs, `reading item ${id}`);
    const row = rows[0];
    if (row === undefined || row.body === null) return undefined;
    const json = checkAndMinifyJson(Buffer.from(row.body, "utf8"));
    if (!json.ok) throw new Error(`${this.#shape.table}: the row with ${this.#shape.idColumn} = ${id} is not valid JSON (${json.reason})`);
    return { etag: this.#etag(json.minified, row.version), body: json.minified };
  }

  put(): Promise<PutResult> {
    return Promise.reject(new Error(`${this.#shape.table} is read only`));
  }

  delete(): Promise<DeleteResult> {
    return Promise.reject(new Error(`${this.#shape.table} is read only`));
  }

  async count(): Promise<number> {
    const rows = await withDeadline(this.#sql.unsafe<{ n: string }[]>(`SELECT count(*) AS n FROM ${quoteName(this.#shape.table)}`), this.#timeoutMs, "counting items");
    return Number(rows[0]!.n);
  }

  seedIfEmpty(): Promise<number> {
    return Promise.resolve(0);
  }

  /**
   * Every id, a page at a time in the column's order, each page its own short statement under the deadline
   * and starting after the last id of the one before (keyset). Not a cursor: that is one statement for the
   * whole scan, which STORE_TIMEOUT_MS cancelled on a table of a few million rows, after which postgres.js
   * (3.4.9) could hand the cancelled cursor's rows to the connection's next query. An id that exists
   * throughout the scan is listed; one created or deleted meanwhile may or may not be. Each page reads the
   * id column's index; without one (a view of a join, a column without a key) each page sorts the table.
   */
  async *ids(): AsyncIterable<readonly string[]> {
    let last: string | undefined;
    for (;;) {
      const page =
        last === undefined ? this.#sql.unsafe<{ id: string }[]>(this.#firstIds) : this.#sql.unsafe<{ id: string }[]>(this.#nextIds, [last]);
      const ids = (await withDeadline(page, this.#timeoutMs, "listing item ids")).map((row) => row.id);
      if (ids.length > 0) yield ids;
      if (ids.length < this.#idBatch) return;
      last = ids[ids.length - 1];
    }
  }

  ping(): Promise<boolean> {
    return answers(this.#sql.unsafe(this.#probe), this.#timeoutMs);
  }

  close(): Promise<void> {
    return closePool(this.#sql);
  }

  /**
   * A whole-number version in base 64 (`"v1"` … a few characters, like the origin's own ETags); any other
   * version, or the content itself, hashed to 72 bits (12 characters): the same on every instance.
   */
  #etag(body: Uint8Array, version: string | null): string {
    if (version !== null && this.#shape.integerVersion && /^\d{1,18}$/.test(version)) {
      let n = BigInt(version);
      let digits = "";
      do {
        digits = DIGITS[Number(n % 64n)]! + digits;
        n /= 64n;
      } while (n > 0n);
      return `"v${digits}"`;
    }
    const hash = createHash("sha256");
    hash.update(version ?? body);
    return `"${hash.digest("base64url").slice(0, 12)}"`;
  }
}

/**
 * Only the canonical spelling of a typed id, within its type's range, is an id (`7`, not `07`; lowercase
 * uuids): anything else is a 404 without a query (and never a cast error from the database).
 */
export function isCanonical(id: string, kind: IdKind): boolean {
  switch (kind) {
    case "text":
      return true;
    case "uuid":
      return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id);
    default: {
      if (!/^(0|-?[1-9]\d{0,18})$/.test(id)) return false;
      const limit = 2n ** (INTEGER_BITS[kind] - 1n);
      const n = BigInt(id);
      return n < limit && n >= -limit;
    }
  }
}
