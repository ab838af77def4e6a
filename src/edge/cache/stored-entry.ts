// One edge-cache entry, stored and served: which origin answers the edge may keep and for how long, what the
// stored copy carries besides the origin's answer (its freshness deadline, the origin's own Cache-Control,
// the origin it came from, its purge tags), and how an entry becomes the answer a client gets again, with
// that bookkeeping removed.

import { INTERNAL_RESPONSE_LIST_DIGEST, stripResponseHeaders } from "../headers/strip.ts";
import type { ItemAnswer } from "../proxy/clean-response.ts";
import { ifNoneMatchMatches } from "../../shared/if-none-match.ts";

// Stored-copy-only headers, never served: when the entry stops being fresh (ms since the epoch), and the
// origin's own Cache-Control ("" when it sent none). The Cache API evicts by Cache-Control, so the stored
// copy carries RETAIN instead: entries must outlive their freshness so that a stale one is revalidated with
// a 304, not refetched.
const FRESH_UNTIL = "x-slim-edge-fresh-until";
const ORIGIN_CACHE_CONTROL = "x-slim-edge-cache-control";
// The answer's age when it was stored (the Age it arrived with: a cache between the edge and the origin
// may have held it), and when it was stored (ms since the epoch): a hit served with the origin's
// Cache-Control is served with its current age (RFC 9111 §4), not the Cache API's, which restarts at the put.
const AGE_AT_STORE = "x-slim-edge-age";
const STORED_AT = "x-slim-edge-stored-at";
// What the entry was filled under: the ORIGIN_URL it came from and the internal-header list its headers were
// stripped with. Entries are keyed by the Worker's host, which outlives both: after a deploy that points the
// Worker elsewhere, an entry of the old origin (kept up to a day, and purged by the old origin only) must
// not be served, nor revalidated against the new one with the old origin's ETag; after a deploy that lists
// a header as internal, an entry stored with it must not keep serving it. Either is a miss, and is replaced.
const FILLED_FROM = "x-slim-edge-origin";
const RETAIN = "max-age=604800";
// The purge tags of a stored entry (src/shared/cache-tag.ts). Cloudflare purges a Worker's `cache.put` entry
// by the Cache-Tag the Worker set on it (https://developers.cloudflare.com/cache/how-to/purge-cache/purge-by-tags/).
// Bookkeeping like the headers above: never served; and an origin's own Cache-Tag is never stored or served.
const CACHE_TAG = "cache-tag";
const MAX_CACHED_BODY_BYTES = 1024 * 1024;
// A 304 carries what the 200 would have that a cache needs to update its copy (RFC 9110 §15.4.5).
const NOT_MODIFIED_HEADERS = ["etag", "cache-control", "vary", "expires", "content-location", "date"];

/** How long the edge serves an entry without asking the origin, by what the origin answered. */
export interface EntryLifetimes {
  /** A 200, in seconds; 0 revalidates every read (with the entry's ETag). */
  itemSeconds: number;
  /** A 404, in seconds; 0 never stores one (it has no ETag to revalidate with). */
  notFoundSeconds: number;
}

/** What an entry is filed as: what it was filled under (`filledUnder`), and its purge tags (src/shared/cache-tag.ts). */
export interface EntryLabels {
  filledUnder: string;
  cacheTags: string;
}

let lastLabel = { originUrl: "", label: "" };

/**
 * The label of entries filled from `originUrl` by this deployment. A reader is made per request and an
 * isolate serves one ORIGIN_URL (the same parsed string each time), so the label is built once, not per
 * request.
 */
export function filledUnder(originUrl: string): string {
  if (lastLabel.originUrl !== originUrl) lastLabel = { originUrl, label: `${originUrl} ${INTERNAL_RESPONSE_LIST_DIGEST}` };
  return lastLabel.label;
}

/** True when a stored entry was filled under `label` (`filledUnder`); anything else is a miss. */
export function isFilledUnder(stored: Headers, label: string): boolean {
  return stored.get(FILLED_FROM) === label;
}

/** True while a stored entry may be served without asking the origin. */
export function isFresh(stored: Headers): boolean {
  return Number(stored.get(FRESH_UNTIL)) > Date.now();
}

/**
 * The seconds to store an origin answer for, or null when the edge must not store it: a 200 (revalidated
 * once stale), or a 404 when 404s are cached at all and the origin's own freshness leaves it some life (a
 * stale 404 is refetched, so storing one that is stale at once only costs a write). Anything else, and
 * anything `cacheable` refuses, streams through uncached.
 */
export function lifetimeOf(status: number, headers: Headers, lifetimes: EntryLifetimes): number | null {
  if (!cacheable(headers)) return null;
  if (status === 200) return lifetimes.itemSeconds;
  if (status !== 404 || lifetimes.notFoundSeconds === 0) return null;
  return freshSeconds(headers.get("cache-control") ?? "", lifetimes.notFoundSeconds, ageOf(headers)) > 0 ? lifetimes.notFoundSeconds : null;
}

/**
 * Whether a stored entry, refreshed by a revalidating 304 (`storable` with `update`), may still be kept: the
 * 304 updates the headers the rules read (RFC 9111 §4.3.4), so it can make the item `private` or `no-store`,
 * or vary on more than the entry is keyed by. Such an entry is served to the client that asked, and
 * removed, never served to another.
 */
export function keepsRefreshed(stored: Headers): boolean {
  // Only what a 304 can change: its body, and the body's size, are the stored one.
  return sharedControls(stored, stored.get(ORIGIN_CACHE_CONTROL));
}

/**
 * True when the request says `Cache-Control: no-store`: a cache MUST NOT store the answer to it
 * (RFC 9111 §5.2.1.5). It may still be answered from what is stored.
 */
export function forbidsStoring(request: Headers): boolean {
  const cacheControl = request.get("cache-control");
  return cacheControl !== null && NO_STORE.test(cacheControl);
}

const NO_STORE = /(^|[\s,])no-store([\s,=]|$)/i;

/**
 * What a shared cache may keep: a sized body up to MAX_CACHED_BODY_BYTES; not `no-store` or `private`; and
 * no `Vary` beyond `origin` and `accept-encoding`, since entries are keyed by item alone (the Cache API
 * refuses `Vary: *` anyway).
 */
function cacheable(headers: Headers): boolean {
  return Number(headers.get("content-length") ?? NaN) <= MAX_CACHED_BODY_BYTES && sharedControls(headers, headers.get("cache-control"));
}

/** Neither `no-store` nor `private`, and no `Vary` beyond what entries are keyed by. */
function sharedControls(headers: Headers, cacheControl: string | null): boolean {
  if (cacheControl !== null && /(^|[\s,])(no-store|private)([\s,=]|$)/i.test(cacheControl)) return false;
  const vary = headers.get("vary");
  if (vary === null) return true;
  return vary.split(",").every((field) => /^\s*(origin|accept-encoding)?\s*$/i.test(field));
}

/**
 * How long the edge may serve an entry without asking: the configured lifetime, shortened by what is left
 * of the origin's `s-maxage` (or else `max-age`) at `ageSeconds` (RFC 9111 §4.2), and zero under `no-cache`.
 */
function freshSeconds(cacheControl: string, lifetimeSeconds: number, ageSeconds: number): number {
  if (/(^|[\s,])no-cache([\s,=]|$)/i.test(cacheControl)) return 0;
  const lifetime = /(?:^|[\s,])s-maxage\s*=\s*"?(\d+)/i.exec(cacheControl) ?? /(?:^|[\s,])max-age\s*=\s*"?(\d+)/i.exec(cacheControl);
  return lifetime ? Math.max(0, Math.min(lifetimeSeconds, Number(lifetime[1]) - ageSeconds)) : lifetimeSeconds;
}

/** An answer's Age in whole seconds, 0 when it has none or an invalid one (RFC 9111 §5.1). */
function ageOf(headers: Headers): number {
  const age = headers.get("age");
  return age !== null && /^\d+$/.test(age) ? Number(age) : 0;
}

/**
 * Headers to store: the cleaned origin headers, refreshed by a revalidating 304's own headers (RFC 9111
 * §4.3.4; never its Content-Length), with the origin's Cache-Control set aside, the freshness deadline, and
 * the entry's labels (whatever Cache-Tag the origin sent is replaced by the entry's own).
 */
export function storable(base: Headers, lifetimeSeconds: number, labels: EntryLabels, update?: Headers): Headers {
  const headers = new Headers(base);
  if (update) {
    for (const [name, value] of stripResponseHeaders(update)) if (name !== "content-length") headers.set(name, value);
  }
  // What the Cache API added to the match this entry was read from is not the origin's, and not stored again;
  // nor is an Age: the age kept is the one the answer arrived with (a refreshed entry's starts again at its
  // validation, at the 304's own Age: RFC 9111 §4.3.4).
  headers.delete("cf-cache-status");
  headers.delete("age");
  const age = ageOf(update ?? base);
  const originCacheControl = update?.get("cache-control") ?? base.get(ORIGIN_CACHE_CONTROL) ?? base.get("cache-control") ?? "";
  const now = Date.now();
  headers.set(ORIGIN_CACHE_CONTROL, originCacheControl);
  headers.set(FRESH_UNTIL, String(now + freshSeconds(originCacheControl, lifetimeSeconds, age) * 1000));
  headers.set(AGE_AT_STORE, String(age));
  headers.set(STORED_AT, String(now));
  headers.set("cache-control", RETAIN);
  headers.set(FILLED_FROM, labels.filledUnder);
  headers.set(CACHE_TAG, labels.cacheTags);
  return headers;
}

/** An answer that does not come from a stored entry: an origin's Cache-Tag is the zone's business, not the client's. */
export function withoutCacheTag(headers: Headers): Headers {
  headers.delete(CACHE_TAG);
  return headers;
}

/**
 * A stored entry as served: a 304 when it is a 200 the client already holds (never for a 404: it has no
 * version to match), else its status and body (none for HEAD), with the bookkeeping headers replaced by
 * what the origin said. `hit`: answered from the cache, not by the origin for this request. With the origin's
 * Cache-Control, a hit carries the entry's current age (RFC 9111 §4: the age it was stored at, plus its time
 * in the edge cache); an answer the origin just gave or validated carries only an Age it arrived with (§5.1:
 * an Age says the origin did not make it for this request). Without one the answer has no freshness a
 * client could use an Age for, and the Age is bytes, not data, as is the Cache API's `cf-cache-status`.
 */
export function serveStored(
  status: number,
  stored: Headers,
  body: ReadableStream | ArrayBuffer | null,
  method: "GET" | "HEAD",
  clientTag: string | null,
  hit: boolean,
): ItemAnswer {
  const originCacheControl = stored.get(ORIGIN_CACHE_CONTROL) ?? "";
  const etag = stored.get("etag");
  const notModified = status === 200 && clientTag !== null && etag !== null && ifNoneMatchMatches(clientTag, etag);
  if ((notModified || method === "HEAD") && body instanceof ReadableStream) void body.cancel();
  if (notModified) {
    const headers = new Headers();
    for (const name of NOT_MODIFIED_HEADERS) {
      const value = name === "cache-control" ? originCacheControl : stored.get(name);
      if (value) headers.set(name, value);
    }
    return { status: 304, headers, body: null };
  }
  const headers = new Headers(stored);
  headers.delete(FRESH_UNTIL);
  headers.delete(ORIGIN_CACHE_CONTROL);
  headers.delete(AGE_AT_STORE);
  headers.delete(STORED_AT);
  headers.delete(FILLED_FROM);
  headers.delete(CACHE_TAG);
  headers.delete("cf-cache-status");
  if (originCacheControl === "") {
    headers.delete("cache-control");
    headers.delete("age");
  } else {
    headers.set("cache-control", originCacheControl);
    const ageAtStore = Number(stored.get(AGE_AT_STORE) ?? 0);
    const storedAt = Number(stored.get(STORED_AT) ?? Date.now());
    if (hit) headers.set("age", String(ageAtStore + Math.max(0, Math.floor((Date.now() - storedAt) / 1000))));
    else if (ageAtStore > 0) headers.set("age", String(ageAtStore));
    else headers.delete("age");
  }
  return { status, headers, body: method === "HEAD" ? null : body };
}
