// The origin's environment variables: the only place their names, defaults, meanings and grammar are
// written. `parseOriginConfig` reads every one through this table, `node src/origin/main.ts --help` prints
// it, and `npm run gen:docs` writes the configuration reference in docs/ from it. A default is written the
// way a user would write the value, and parsed by the same reader, so the two cannot drift apart.

import { availableParallelism } from "node:os";
import { readBoolean, readBytes, readChoice, readSeconds, readWholeNumber } from "../../shared/config/grammar.ts";
import type { VarDoc } from "../../shared/config/var-table.ts";
import { DEFAULT_PURGE_REPEAT_MS } from "../../shared/edge-fill-deadline.ts";
import { DEFAULT_DATABASE_URL, parseDatabaseUrl, type DatabaseSpec } from "./database-url.ts";
import { optionalName, PURGE_PLAN_NAMES, readHttpUrl, readPort, readRate, readToken, readZoneId, type ReadContext } from "./origin-var-readers.ts";

export interface OriginVar<T> extends VarDoc {
  read(raw: string, context: ReadContext): T;
}

const v = <T>(doc: VarDoc, read: (raw: string, context: ReadContext) => T): OriginVar<T> => ({ ...doc, read });

export const DEFAULT_SEED_ITEMS = 1000;

export const ORIGIN_VARS = {
  HOST: v({ name: "HOST", default: "127.0.0.1", meaning: "Interface the item listener binds to." }, (raw) => raw.trim()),
  PORT: v({ name: "PORT", default: "8788", meaning: "Item listener port (0 = any free port)." }, (raw, c) => readPort("PORT", raw, c)),
  DATABASE_URL: v(
    {
      name: "DATABASE_URL",
      default: DEFAULT_DATABASE_URL,
      meaning:
        "Where items are kept. A SQLite file (a plain path, `sqlite:PATH`, `sqlite:///ABS/PATH` or a `file:` URL; relative paths resolve against the working directory; the directory is created), or `postgres://user:password@host:5432/database` for PostgreSQL (several instances, or your own table: docs/origin.md).",
    },
    (raw, c): DatabaseSpec => parseDatabaseUrl(raw.trim(), c.cwd, c.problems),
  ),
  ID_FILTER_CAPACITY: v(
    {
      name: "ID_FILTER_CAPACITY",
      default: "auto",
      meaning:
        "Ids the membership filter is sized for (1% false positives, about 1.3 bytes per id by `node bench/filter.ts`, outside CACHE_MAX_BYTES): a miss for an id it rules out is answered 404 without reading the store. `auto`: twice the ids at start, at least 1,000,000; it is rebuilt larger when full. `0` turns it off. A number whose filter the machine cannot hold beside the cache is refused at start.",
    },
    (raw, c) => (raw.trim() === "auto" ? "auto" : readWholeNumber("ID_FILTER_CAPACITY", raw, { min: 0, max: 10_000_000_000, unit: "ids", example: "auto" }, c.problems)),
  ),
  ITEMS_TABLE: v(
    {
      name: "ITEMS_TABLE",
      default: "",
      meaning:
        "PostgreSQL only: serve items from your own table or view (e.g. `public.products`) instead of the origin's `slim_edge_items`, read only (PUT/DELETE answer 405). Its changes must be fed to the change log: `npm run feed:install` (docs/origin.md).",
    },
    (raw) => optionalName(raw),
  ),
  ITEMS_ID_COLUMN: v(
    { name: "ITEMS_ID_COLUMN", default: "id", meaning: "With ITEMS_TABLE: the id column (text, integer or uuid); only its canonical spelling is an id." },
    (raw) => raw.trim(),
  ),
  ITEMS_JSON_COLUMN: v(
    { name: "ITEMS_JSON_COLUMN", default: "", meaning: "With ITEMS_TABLE: the json, jsonb or text column served as the item; unset serves the whole row as JSON." },
    (raw) => optionalName(raw),
  ),
  ITEMS_VERSION_COLUMN: v(
    {
      name: "ITEMS_VERSION_COLUMN",
      default: "",
      meaning:
        "With ITEMS_TABLE: a column that changes on every write (a version number or an updated-at time) the ETag is made from; unset makes it from the content. Either way every instance computes the same ETag.",
    },
    (raw) => optionalName(raw),
  ),
  DATABASE_POOL_SIZE: v(
    { name: "DATABASE_POOL_SIZE", default: "10", meaning: "PostgreSQL only: connections per origin process for item reads and writes (the change feed has its own three)." },
    (raw, c) => readWholeNumber("DATABASE_POOL_SIZE", raw, { min: 1, max: 1000, unit: "connections", example: "10" }, c.problems),
  ),
  STORE_TIMEOUT_MS: v(
    {
      name: "STORE_TIMEOUT_MS",
      default: "1000",
      meaning:
        "PostgreSQL only: the deadline of one store call. Past it (or when PostgreSQL is down) a miss or a write answers 503 and says why in the log; cached items keep being served.",
    },
    (raw, c) => readWholeNumber("STORE_TIMEOUT_MS", raw, { min: 10, max: 600_000, unit: "milliseconds", example: "1000" }, c.problems),
  ),
  FEED_POLL_MS: v(
    {
      name: "FEED_POLL_MS",
      default: "250",
      meaning:
        "PostgreSQL only: how often each instance reads the change log. NOTIFY brings changes within milliseconds; the poll makes sure none is missed (NOTIFY does not keep what a disconnected listener misses).",
    },
    (raw, c) => readWholeNumber("FEED_POLL_MS", raw, { min: 10, max: 60_000, unit: "milliseconds", example: "250" }, c.problems),
  ),
  FEED_STALE_BOUND_MS: v(
    {
      name: "FEED_STALE_BOUND_MS",
      default: "1000",
      meaning:
        "When the change feed has been silent for this long (PostgreSQL: the change log could not be read; SQLite with ORIGIN_PROCESSES > 1: no word from the primary that relays writes), cached items older than this are re-read from the store before they are served (and served as they are only if the store does not answer either).",
    },
    (raw, c) => readWholeNumber("FEED_STALE_BOUND_MS", raw, { min: 20, max: 3_600_000, unit: "milliseconds", example: "1000" }, c.problems),
  ),
  CLOUDFLARE_ZONE_ID: v(
    {
      name: "CLOUDFLARE_ZONE_ID",
      default: "",
      meaning:
        "Purge on change: the zone whose edge cache holds the items (its Overview page shows the ID). With CLOUDFLARE_API_TOKEN, every committed change purges that item's cache tag (docs/purge.md); unset, nothing is purged and the edge relies on EDGE_CACHE_TTL.",
    },
    (raw, c) => readZoneId(raw, c),
  ),
  CLOUDFLARE_API_TOKEN: v(
    {
      name: "CLOUDFLARE_API_TOKEN",
      default: "",
      secret: true,
      meaning: "Purge on change: an API token with the Zone → Cache Purge permission for CLOUDFLARE_ZONE_ID. Checked once at start (a purge of a tag no entry carries).",
    },
    (raw) => (raw.trim() === "" ? undefined : raw.trim()),
  ),
  CLOUDFLARE_API_BASE: v(
    {
      name: "CLOUDFLARE_API_BASE",
      default: "https://api.cloudflare.com/client/v4",
      meaning: "Purge on change: the API's base URL (tests and the egress meter point it at a loopback stand-in).",
    },
    (raw, c) => readHttpUrl("CLOUDFLARE_API_BASE", raw, c),
  ),
  CLOUDFLARE_PURGE_PLAN: v(
    {
      name: "CLOUDFLARE_PURGE_PLAN",
      default: "free",
      meaning:
        "Purge on change: the account's plan, which sets the purge rate limit the purger paces itself to (free 5/min burst 25, pro 5/s burst 25, business 10/s burst 50, enterprise 50/s burst 500).",
    },
    (raw, c) => readChoice("CLOUDFLARE_PURGE_PLAN", raw, PURGE_PLAN_NAMES, c.problems),
  ),
  CLOUDFLARE_PURGE_RATE: v(
    { name: "CLOUDFLARE_PURGE_RATE", default: "", meaning: "Purge on change: purge calls per second, instead of the plan's (e.g. `2.5`)." },
    (raw, c) => (raw.trim() === "" ? undefined : readRate(raw, c)),
  ),
  CLOUDFLARE_PURGE_BURST: v(
    { name: "CLOUDFLARE_PURGE_BURST", default: "", meaning: "Purge on change: purge calls that may go out at once, instead of the plan's." },
    (raw, c) => (raw.trim() === "" ? undefined : readWholeNumber("CLOUDFLARE_PURGE_BURST", raw, { min: 1, max: 10_000, unit: "calls", example: "25" }, c.problems)),
  ),
  CLOUDFLARE_PURGE_REPEAT_MS: v(
    {
      name: "CLOUDFLARE_PURGE_REPEAT_MS",
      default: String(DEFAULT_PURGE_REPEAT_MS),
      meaning:
        "Purge on change: every accepted purge is sent once more this many milliseconds later (plus FEED_STALE_BOUND_MS with PostgreSQL or ORIGIN_PROCESSES > 1, where another process may answer with the old version that long), for an edge fill that read the item before the write and was stored after the first purge (docs/purge.md). At least the Worker's `ORIGIN_TIMEOUT_MS` plus 1000; `0`: never repeated.",
    },
    (raw, c) => readWholeNumber("CLOUDFLARE_PURGE_REPEAT_MS", raw, { min: 0, max: 120_000, unit: "milliseconds", example: String(DEFAULT_PURGE_REPEAT_MS) }, c.problems),
  ),
  ORIGIN_TOKEN: v(
    {
      name: "ORIGIN_TOKEN",
      default: "",
      secret: true,
      meaning:
        "Shared secret; when set, every request on PORT without the same `x-origin-token` header gets 401 (constant-time compare). The same value as the worker's `ORIGIN_TOKEN` secret. Unset: no check; set but empty is refused (unlike other variables, whose empty value means the default).",
    },
    (raw, c) => readToken(raw, c),
  ),
  MAX_ITEM_BYTES: v(
    { name: "MAX_ITEM_BYTES", default: "64KiB", meaning: "Largest PUT body accepted; a larger one gets 413." },
    (raw, c) => readBytes("MAX_ITEM_BYTES", raw, { min: 1, max: 64 * 2 ** 20, example: "64KiB" }, c.problems),
  ),
  CACHE_MAX_BYTES: v(
    {
      name: "CACHE_MAX_BYTES",
      default: "64MiB",
      meaning:
        "What the in-process cache of ready-to-send answers holds in memory, everything it allocates counted: slabs, index and policy off the V8 heap, and a heap tier for the most read ids (1/32 of it, at most 4 MiB; none below 1.9 MiB). Per process; refused at start when the machine (or its container) cannot hold it.",
    },
    (raw, c) => readBytes("CACHE_MAX_BYTES", raw, { min: 64 * 2 ** 10, max: 2 ** 40, example: "256MiB" }, c.problems),
  ),
  CACHE_TTL_SECONDS: v(
    {
      name: "CACHE_TTL_SECONDS",
      default: "86400",
      meaning:
        "How long a cached entry may be served before the store is read again: a safety net, since every change reaches the cache through the change feed (PostgreSQL) or the write itself (SQLite). Another program writing the SQLite file is seen only when an entry expires: set it lower then, and ID_FILTER_CAPACITY=0 (or use PostgreSQL, whose feed sees every writer). 0 = no TTL.",
    },
    (raw, c) => readSeconds("CACHE_TTL_SECONDS", raw, { min: 0, max: 10 * 365 * 86400, example: "86400" }, c.problems),
  ),
  ORIGIN_SEND_DATE: v(
    {
      name: "ORIGIN_SEND_DATE",
      default: "false",
      meaning: "`true` adds `Date` to every response (RFC 9110 §6.6.1): set it when an HTTP cache stores origin responses directly.",
    },
    (raw, c) => readBoolean("ORIGIN_SEND_DATE", raw, c.problems),
  ),
  ORIGIN_REASON_PHRASE: v(
    {
      name: "ORIGIN_REASON_PHRASE",
      default: "true",
      meaning: "`false` sends empty reason phrases (`HTTP/1.1 304 \\r\\n`): 12 fewer bytes per 304, 2 per 200.",
    },
    (raw, c) => readBoolean("ORIGIN_REASON_PHRASE", raw, c.problems),
  ),
  ORIGIN_FAST_PATH: v(
    {
      name: "ORIGIN_FAST_PATH",
      default: "true",
      meaning:
        "`false` serves every request through node:http. The fast path answers simple `GET`/`HEAD /items/:id` from pre-encoded bytes (the same bytes, 1.35-1.6× the throughput in `npm run bench:origin` runs) and hands anything else to node:http; it is off while ORIGIN_SEND_DATE=true.",
    },
    (raw, c) => readBoolean("ORIGIN_FAST_PATH", raw, c.problems),
  ),
  KEEP_ALIVE_TIMEOUT_SECONDS: v(
    {
      name: "KEEP_ALIVE_TIMEOUT_SECONDS",
      default: "910",
      meaning: "Idle keep-alive timeout, and the longest a connection may sit with nothing read or written (a client that stops reading an answer); keep it above Cloudflare's 900 s connection reuse window. Refused below STORE_TIMEOUT_MS.",
    },
    (raw, c) => readSeconds("KEEP_ALIVE_TIMEOUT_SECONDS", raw, { min: 1, max: 86400, example: "910" }, c.problems),
  ),
  METRICS_HOST: v({ name: "METRICS_HOST", default: "127.0.0.1", meaning: "Interface of the metrics listener." }, (raw) => raw.trim()),
  METRICS_PORT: v(
    {
      name: "METRICS_PORT",
      default: "8789",
      meaning:
        "Separate listener for `GET /metrics` and `GET /healthz`, never token-checked (keep it private); `off` disables it (both paths stay on PORT, behind the token).",
    },
    (raw, c) => (raw.trim() === "off" ? undefined : readPort("METRICS_PORT", raw, c, ', or "off" for no separate listener (PORT serves /metrics too)')),
  ),
  SEED_SAMPLE_ITEMS: v(
    {
      name: "SEED_SAMPLE_ITEMS",
      default: "0",
      meaning: `Insert this many sample items when the store is empty (first run); \`--seed\` on the command line means ${DEFAULT_SEED_ITEMS}, \`--seed=N\` means N. Never touches a store that has items.`,
    },
    (raw, c) => readWholeNumber("SEED_SAMPLE_ITEMS", raw, { min: 0, max: 100_000_000, unit: "items", example: "1000" }, c.problems),
  ),
  ORIGIN_PROCESSES: v(
    {
      name: "ORIGIN_PROCESSES",
      default: "1",
      meaning:
        "Processes serving PORT on this machine (node:cluster): a whole number, or `auto` for one per core. Above 1, a primary process forks them, replaces one that dies, serves METRICS_PORT for all of them (counters summed, `origin_worker_*{worker}` per process; on PORT each process serves only its own /metrics, so METRICS_PORT=off leaves no merged page) and stops them together on SIGINT/SIGTERM. Each has its own cache: with SQLite the primary relays every write to the other processes' caches (FEED_STALE_BOUND_MS bounds how long a silent primary is trusted); with PostgreSQL each process follows the change feed itself.",
    },
    (raw, c) => (raw.trim() === "auto" ? availableParallelism() : readWholeNumber("ORIGIN_PROCESSES", raw, { min: 1, max: 1024, unit: "processes (or auto)", example: "4" }, c.problems)),
  ),
} as const;

export type OriginVarName = keyof typeof ORIGIN_VARS;
export type OriginValues = { -readonly [K in OriginVarName]: ReturnType<(typeof ORIGIN_VARS)[K]["read"]> };

/** The table as plain documentation rows, in order. */
export const ORIGIN_VAR_DOCS: readonly VarDoc[] = Object.values(ORIGIN_VARS).map(({ name, default: d, meaning, ...rest }) => ({
  name,
  default: d,
  meaning,
  ...("secret" in rest ? { secret: true } : {}),
}));
