import type { Server } from "node:http";
import type { Socket } from "node:net";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { ReadyItemsStats } from "./reads/ready-items.ts";
import type { ChangeFeedStats } from "./feed/change-feed.ts";
import type { LeaderDuties } from "./purge/leader-duties.ts";
import type { KnownIdsStats } from "./reads/known-ids.ts";

export const ROUTES = ["/items/:id", "/healthz", "/metrics", "other"] as const;
export type RouteIndex = 0 | 1 | 2 | 3;
export const ROUTE_ITEM: RouteIndex = 0;
export const ROUTE_HEALTHZ: RouteIndex = 1;
export const ROUTE_METRICS: RouteIndex = 2;
export const ROUTE_OTHER: RouteIndex = 3;

const METHODS = ["GET", "HEAD", "PUT", "DELETE", "other"] as const;

function methodIndex(method: string | undefined): number {
  switch (method) {
    case "GET":
      return 0;
    case "HEAD":
      return 1;
    case "PUT":
      return 2;
    case "DELETE":
      return 3;
    default:
      return 4;
  }
}

export type StoreOp = "get" | "put" | "delete";

export interface MetricsSources {
  cacheStats: () => Readonly<ReadyItemsStats>;
  /** Connections the fast path gave to node:http (a request it does not serve). */
  handOffs: () => number;
  cacheMaxBytes: number;
  storeReads: () => number;
  coalesced: () => number;
  /** Feed reports of this instance's own writes whose cached result was kept. */
  ownChangesKept: () => number;
  feed: () => { healthy: boolean; stats: Readonly<ChangeFeedStats> };
  /** Cached entries served unconfirmed because the feed was down and the store did not answer. */
  staleServed: () => number;
  knownIds: () => Readonly<KnownIdsStats>;
  duties: () => LeaderDuties;
}

/**
 * Prometheus metrics. The request path only bumps plain numbers (one Map update keyed by an integer, no
 * label objects, no strings built); prom-client reads them when /metrics is scraped. Store latency is
 * observed directly: it happens on misses and writes only.
 */
export class OriginMetrics {
  readonly registry = new Registry();
  /** (route * 8 + method) * 1000 + status → count */
  readonly #requests = new Map<number, number>();
  readonly #sockets = new Set<Socket>();
  #closedBytes = 0;
  readonly #storeSeconds: Histogram<"op" | "outcome">;

  constructor(sources: MetricsSources, options: { defaultMetrics: boolean }) {
    const registers = [this.registry];
    // Figures are read from their sources at scrape time, so the request path does no metric work.
    const counter = (name: string, help: string, read: () => number) =>
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          this.inc(read());
        },
      });
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    const requests = this.#requests;
    new Counter({
      name: "origin_http_requests_total",
      help: "Requests answered, by route, method and status",
      labelNames: ["route", "method", "status"] as const,
      registers,
      collect() {
        this.reset();
        for (const [key, count] of requests) {
          const status = key % 1000;
          const rm = Math.floor(key / 1000);
          this.inc({ route: ROUTES[rm >> 3]!, method: METHODS[rm & 7]!, status: String(status) }, count);
        }
      },
    });
    const bytesWritten = () => {
      let total = this.#closedBytes;
      for (const socket of this.#sockets) total += socket.bytesWritten;
      return total;
    };
    counter("origin_http_response_bytes_total", "Bytes written to item-port connections (response heads and bodies, exactly as sent)", bytesWritten);
    const sockets = this.#sockets;
    gauge("origin_http_open_connections", "Open connections on the item port", () => sockets.size);
    counter("origin_cache_hits_total", "Cache lookups that found a live entry", () => sources.cacheStats().hits);
    counter("origin_cache_misses_total", "Cache lookups that found nothing (or an expired entry)", () => sources.cacheStats().misses);
    counter("origin_cache_evictions_total", "Entries the policy dropped to stay within CACHE_MAX_BYTES", () => sources.cacheStats().evictions);
    counter("origin_cache_expirations_total", "Entries dropped because CACHE_TTL_SECONDS ran out", () => sources.cacheStats().expirations);
    gauge("origin_cache_entries", "Entries in the cache", () => sources.cacheStats().entries);
    gauge("origin_cache_bytes", "Bytes the cache's policy counts for its entries (records and their share of the per-entry structures)", () => sources.cacheStats().bytes);
    gauge("origin_cache_allocated_bytes", "Bytes the cache really holds (slabs, index, policy, heap tier): at most CACHE_MAX_BYTES", () => sources.cacheStats().allocatedBytes);
    gauge("origin_cache_hot_entries", "Entries also held as heap strings for the most read ids (the heap tier)", () => sources.cacheStats().hotEntries);
    counter("origin_cache_hot_hits_total", "Hits answered from the heap tier (part of origin_cache_hits_total)", () => sources.cacheStats().hotHits);
    gauge("origin_cache_max_bytes", "CACHE_MAX_BYTES", () => sources.cacheMaxBytes);
    counter("origin_store_reads_total", "Store reads made to fill the cache (one per coalesced group of misses)", () => sources.storeReads());
    counter("origin_store_coalesced_total", "Cache misses that joined a store read already in flight for the same id", () => sources.coalesced());
    counter("origin_fast_path_handoffs_total", "Connections the fast path handed to node:http (first request that is not a simple GET/HEAD /items/:id)", () => sources.handOffs());
    counter("origin_feed_changes_total", "Changes the change feed applied to the cache (each once)", () => sources.feed().stats.changes);
    counter("origin_feed_own_writes_total", "Changes the feed reported that were this instance's own writes, whose cached result was kept (no store read)", () => sources.ownChangesKept());
    counter("origin_feed_resets_total", "Times the change feed lost track and dropped every cached item", () => sources.feed().stats.resets);
    counter("origin_feed_poll_failures_total", "Polls of the change log that failed", () => sources.feed().stats.pollFailures);
    counter("origin_feed_listens_total", "Times the change feed's listener (re)connected", () => sources.feed().stats.listens);
    counter("origin_feed_ignored_total", "Changes to ids that are not item ids (no request can name them), not applied", () => sources.feed().stats.ignored);
    counter("origin_stale_served_total", "Cached items served unconfirmed: the feed was down and the store did not answer", sources.staleServed);
    counter("origin_filter_rejections_total", "Misses answered 404 without a store read: the membership filter ruled the id out", () => sources.knownIds().rejections);
    gauge("origin_filter_ids", "Ids in the membership filter", () => sources.knownIds().ids);
    gauge("origin_filter_bytes", "Memory of the membership filter (outside CACHE_MAX_BYTES)", () => sources.knownIds().bytes);
    gauge("origin_filter_ready", "1 while the membership filter answers, 0 while it is (re)built", () => (sources.knownIds().ready ? 1 : 0));
    const purge = () => sources.duties().purgeStats();
    // What a purger that stopped (leadership moved on) last saw is not this instance's state any more: the
    // gauges report the leader only, so summed over instances pending counts once and the state is the leader's.
    const leaderPurge = () => (sources.duties().leading ? purge() : undefined);
    gauge("origin_leader", "1 while this instance purges the edge and prunes the change log for all of them", () => (sources.duties().leading ? 1 : 0));
    gauge("origin_purge_pending", "Changes waiting to be purged from the edge, at the purger's last look (0 unless this instance leads)", () => leaderPurge()?.pending ?? 0);
    gauge("origin_purge_repeats_owed", "Tags whose second purge (CLOUDFLARE_PURGE_REPEAT_MS after the first) is still to be sent; 0 except on the leader", () => leaderPurge()?.repeatsOwed ?? 0);
    counter("origin_purge_calls_total", "Purge API calls sent (by tag, wide, and the start-up check)", () => purge()?.calls ?? 0);
    counter("origin_purge_tags_total", "Cache tags in purge calls Cloudflare accepted", () => purge()?.purgedTags ?? 0);
    counter("origin_purge_repeated_tags_total", "Tags in accepted purge calls sent only as a repeat: a tag's second purge, CLOUDFLARE_PURGE_REPEAT_MS after its first (for edge fills that landed after the first)", () => purge()?.repeatedTags ?? 0);
    counter("origin_purge_retries_total", "Purge calls that failed retryably (429, 5xx, timeout, network, malformed answer)", () => purge()?.retried ?? 0);
    counter("origin_purge_refused_total", "Purge calls Cloudflare refused (wrong token or permission)", () => purge()?.refused ?? 0);
    counter("origin_purge_fallbacks_total", "Wide purges of every item sent because tag purges could not keep up or kept failing", () => purge()?.fallbacks ?? 0);
    counter("origin_purge_dropped_total", "Changes given up on (always 0: the wide purge covers what tag purges cannot)", () => purge()?.dropped ?? 0);
    new Gauge({
      name: "origin_purge_state",
      help: "1 for the purger's current state: ok, retrying, refused or fallback",
      labelNames: ["state"] as const,
      registers,
      collect() {
        this.reset();
        const state = leaderPurge()?.state;
        if (state !== undefined) for (const s of ["ok", "retrying", "refused", "fallback"]) this.set({ state: s }, s === state ? 1 : 0);
      },
    });
    gauge("origin_feed_healthy", "1 while the change feed knows every change up to a moment ago, else 0", () => (sources.feed().healthy ? 1 : 0));
    this.#storeSeconds = new Histogram({
      name: "origin_store_duration_seconds",
      help: "Store operation latency (writes include the fsync)",
      labelNames: ["op", "outcome"] as const,
      buckets: [0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
      registers,
    });
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }

  countRequest(route: RouteIndex, method: string | undefined, status: number): void {
    const key = ((route << 3) | methodIndex(method)) * 1000 + status;
    this.#requests.set(key, (this.#requests.get(key) ?? 0) + 1);
  }

  observeStore(op: StoreOp, seconds: number, ok: boolean): void {
    this.#storeSeconds.observe({ op, outcome: ok ? "ok" : "error" }, seconds);
  }

  /** Counts the bytes of every connection on `server` (exact, read from the sockets, zero per-request cost). */
  watch(server: Server): void {
    server.on("connection", (socket: Socket) => {
      this.#sockets.add(socket);
      socket.once("close", () => {
        this.#sockets.delete(socket);
        this.#closedBytes += socket.bytesWritten;
      });
    });
  }

  async render(): Promise<{ body: string; contentType: string }> {
    return { body: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}
