// What the egress meter replays: a list of events (edge requests and direct writes to the origin) and the
// items that exist before the first event. Built from a mix file (mix.ts) or an access log (log.ts); the
// replay (replay.ts) sends exactly the same events to the "before" and the "after" system.

import { sampleItem } from "../../src/origin/store/sample-items.ts";

/**
 * Request classes, by what the client asked (the same in both systems, so each class compares like with
 * like):
 *   preflight   OPTIONS with Origin and Access-Control-Request-Method
 *   read        GET/HEAD of an item, without a validator
 *   revalidate  GET/HEAD of an item with If-None-Match (the ETag this client got earlier)
 *   missing     GET/HEAD of an item id that does not exist (404)
 *   other       any other path or method (stray paths, bots, bad ids)
 */
export const REQUEST_CLASSES = ["preflight", "read", "revalidate", "missing", "other"] as const;
export type RequestClass = (typeof REQUEST_CLASSES)[number];

export const CLASS_LABELS: Record<RequestClass, string> = {
  preflight: "preflight (OPTIONS)",
  read: "GET item, no validator",
  revalidate: "GET item, If-None-Match",
  missing: "GET unknown id (404)",
  other: "other path / method",
};

export interface EdgeRequest {
  kind: "request";
  method: string;
  /** Request target as sent, starting with `/`. */
  path: string;
  /** Item id when the path is `/items/:id`. */
  id: string | undefined;
  class: RequestClass;
  /** Key of the simulated client's HTTP cache (ETags it received, per path). */
  client: string;
  /**
   * If-None-Match: `undefined` none; `{ prev: true }` the ETag this client received earlier for this path
   * (none if it has none); `{ value }` a literal header value (from an access log).
   */
  ifNoneMatch: { prev: true } | { value: string } | undefined;
  /** Other request headers (Origin, Access-Control-Request-*, Accept), in order. */
  headers: Array<[string, string]>;
  /** Replayed before measuring starts (fills caches), reported apart. */
  warmup: boolean;
  /** The first read of this id in the whole replay (warm-up included): set by markFirstReads. */
  firstRead?: true;
}

export interface WriteEvent {
  kind: "write";
  method: "PUT" | "DELETE";
  id: string;
  /** Body for PUT. */
  body: string | undefined;
  warmup: boolean;
}

export type TrafficEvent = EdgeRequest | WriteEvent;

export interface Traffic {
  /** Where it came from, for the report: `mix bench/egress/mix.default.json` or `log FILE`. */
  source: string;
  description: string;
  /** Items that exist before the first event: ids `1`…`count` with the origin's sample bodies, or explicit. */
  items: { kind: "sample"; count: number } | { kind: "explicit"; bodies: Map<string, string> };
  events: TrafficEvent[];
  /** Keep-alive connections the client opens to the edge. */
  concurrency: number;
  /**
   * Pace of the "after" replay in requests per second (0 = as fast as it answers). The edge cache's
   * behaviour depends on requests per EDGE_CACHE_TTL window, so a fixed pace gives the same figures on
   * any machine that keeps up. The "before" system has no time-dependent state and runs unpaced.
   */
  ratePerSecond: number;
  /** Worker vars for the "after" system (CORS policy, EDGE_CACHE_TTL, ...). */
  workerVars: Record<string, string>;
}

export const ITEM_PATH = /^\/items\/([A-Za-z0-9_-]{1,128})$/;

/** The item id in a request target, or undefined (query strings are not item reads). */
export function itemIdOf(path: string): string | undefined {
  return ITEM_PATH.exec(path)?.[1];
}

/** Body of the n-th version of an item: the origin's sample body for numeric ids, varied by `version`. */
export function itemBody(id: string, version: number, size?: number): string {
  const n = /^\d{1,9}$/.test(id) ? Number(id) : hash32(id);
  const base = JSON.parse(sampleItem(n)) as Record<string, unknown>;
  base["id"] = id;
  if (version > 0) {
    base["stock"] = ((base["stock"] as number) + version * 7) % 500;
    base["rev"] = version;
  }
  let text = JSON.stringify(base);
  if (size !== undefined && size > text.length) {
    const pad = size - text.length - ',"note":""'.length;
    if (pad > 0) text = JSON.stringify({ ...base, note: "x".repeat(pad) });
  }
  return text;
}

export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % 1_000_000_000;
}

export function countRequests(events: readonly TrafficEvent[]): { warmup: number; measured: number; writes: number } {
  let warmup = 0;
  let measured = 0;
  let writes = 0;
  for (const e of events) {
    if (e.kind === "write") writes++;
    else if (e.warmup) warmup++;
    else measured++;
  }
  return { warmup, measured, writes };
}

/**
 * Marks the first GET/HEAD of each item id (warm-up included) as `firstRead`: the read a cold edge cache must
 * send to the origin whatever its TTL. The replay keeps the reads of one id in order, so it is also the first
 * the edge sees (unless a staleness probe of a written id came first).
 */
export function markFirstReads(events: TrafficEvent[]): void {
  const seen = new Set<string>();
  for (const e of events) {
    if (e.kind !== "request" || e.id === undefined || (e.method !== "GET" && e.method !== "HEAD") || seen.has(e.id)) continue;
    seen.add(e.id);
    e.firstRead = true;
  }
}
