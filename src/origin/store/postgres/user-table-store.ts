// Items read from a table or view the origin does not own (ITEMS_TABLE): read only, PUT/DELETE answer 405.
// The id column may be text, an integer or a uuid; only its canonical spelling is an id (so that the URL,
// the edge's cache tag and the change log's id are the same string). The body is a JSON column, or the
// whole row as JSON; the ETag comes from a version column or the content, computed the same way on every
// instance.

import { createHash } from "node:crypto";
import type { Sql } from "postgres";
import { checkAndMinifyJson } from "../../http/json.ts";
import type { ItemStore, StoredItem } from "../item-store.ts";
import { answers, closePool, openPool, unavailable, withDeadline, type PostgresOptions } from "./connection.ts";
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

  constructor(options: PostgresOptions & { display: string }, shape: UserTableShape) {
    this.description = `${options.display} (table ${shape.table}, read only)`;
    this.#sql = openPool(options);
    this.#timeoutMs = options.timeoutMs;
    this.#shape = shape;
    const body = shape.jsonColumn === undefined ? "to_jsonb(t)::text" : `t.${quoteName(shape.jsonColumn)}::text`;
    const version = shape.versionColumn === undefined ? "NULL" : `t.${quoteName(shape.versionColumn)}::text`;
    this.#lookup = `SELECT ${body} AS body, ${version} AS version FROM ${quoteName(shape.table)} t WHERE t.${quoteName(shape.idColumn)} = $1::${shape.idType} LIMIT 1`;
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

  put(): Promise<string> {
    return Promise.reject(new Error(`${this.#shape.table} is read only`));
  }

  delete(): Promise<boolean> {
    return Promise.reject(new Error(`${this.#shape.table} is read only`));
  }

  async count(): Promise<number> {
    const rows = await withDeadline(this.#sql.unsafe<{ n: string }[]>(`SELECT count(*) AS n FROM ${quoteName(this.#shape.table)}`), this.#timeoutMs, "counting items");
    return Number(rows[0]!.n);
  }

  seedIfEmpty(): Promise<number> {
    return Promise.resolve(0);
  }

  async *ids(): AsyncIterable<readonly string[]> {
    const query = `SELECT ${quoteName(this.#shape.idColumn)}::text AS id FROM ${quoteName(this.#shape.table)}`;
    try {
      for await (const rows of this.#sql.unsafe<{ id: string }[]>(query).cursor(ID_BATCH)) {
        yield rows.map((row) => row.id);
      }
    } catch (error) {
      throw unavailable(error, "listing item ids");
    }
  }

  ping(): Promise<boolean> {
    return answers(this.#sql, this.#timeoutMs);
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
