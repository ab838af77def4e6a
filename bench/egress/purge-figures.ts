// The purge mode's own figures, from the run's records: what the purge API was asked (the stand-in's call log)
// and what reached the worker's cache, whether the plan's rate limit would hold at production scale, and what
// the Snippet path would pay to tag its zone-cache entries from the origin's header instead of a Cache Rule.
// Pure functions (tested in test/node/egress-report.test.ts).

import type { AppliedPurge } from "../../scripts/lib/local-edge.ts";
import type { RecordedCall } from "../../scripts/lib/cloudflare-api-stand-in.ts";
import { MAX_TAGS_PER_CALL } from "../../src/origin/purge/cloudflare-purge-api.ts";
import { PURGE_PLANS, type PurgePlanName } from "../../src/origin/purge/token-bucket.ts";
import { ALL_ITEMS_TAG, itemCacheTags } from "../../src/shared/cache-tag.ts";
import type { OriginItemAnswers } from "./replay.ts";

export { MAX_TAGS_PER_CALL };
/** The production share of writes the rate-limit question is asked for. */
export const PRODUCTION_WRITE_SHARE = 0.01;

export interface PurgeApiFigures {
  /** Calls to `purge_cache` in the measured part, whatever came of them. */
  calls: number;
  accepted: number;
  /** Answered 429 (over the plan's rate). */
  rateLimited: number;
  /** Refused (401/403/400) or failed otherwise. */
  failed: number;
  /** Token verifications (`/user/tokens/verify`). */
  verifications: number;
  /** Tags in accepted calls, and per accepted call. */
  tags: number;
  tagsPerCall: number;
  /** Accepted calls that purged every item (`items`): the purger's fallback. */
  wide: number;
  writes: number;
  callsPerThousandWrites: number;
  /** What the accepted purges did to the worker's cache. */
  entriesDeleted: number;
  /** Entries at a purged key without the tag (kept): should be 0. */
  entriesUntagged: number;
}

/** The stand-in's call log and the purges applied to the edge, over [from, to] (performance.now() ms). */
export function purgeApiFigures(calls: readonly RecordedCall[], applied: readonly AppliedPurge[], window: { from: number; to: number }, writes: number): PurgeApiFigures {
  const inWindow = <T extends { at: number }>(x: T) => x.at >= window.from && x.at <= window.to;
  const purges = calls.filter((c) => inWindow(c) && c.method === "POST" && c.path.endsWith("/purge_cache"));
  const accepted = purges.filter((c) => c.outcome === "accepted");
  const tagsOf = (c: RecordedCall) => {
    const tags = (c.body as { tags?: unknown } | undefined)?.tags;
    return Array.isArray(tags) ? tags.map(String) : [];
  };
  const tags = accepted.reduce((n, c) => n + tagsOf(c).length, 0);
  const edge = applied.filter(inWindow);
  return {
    calls: purges.length,
    accepted: accepted.length,
    rateLimited: purges.filter((c) => c.status === 429).length,
    failed: purges.filter((c) => c.outcome !== "accepted" && c.status !== 429).length,
    verifications: calls.filter((c) => inWindow(c) && c.path.endsWith("/user/tokens/verify")).length,
    tags,
    tagsPerCall: accepted.length === 0 ? 0 : tags / accepted.length,
    wide: accepted.filter((c) => tagsOf(c).some((t) => t.toLowerCase() === ALL_ITEMS_TAG)).length,
    writes,
    callsPerThousandWrites: writes === 0 ? 0 : (purges.length / writes) * 1000,
    entriesDeleted: edge.reduce((n, p) => n + p.deleted, 0),
    entriesUntagged: edge.reduce((n, p) => n + p.untagged, 0),
  };
}

export interface RateLimitProjection {
  plan: PurgePlanName;
  /** The plan's sustained purge calls per second, and its burst. */
  planCallsPerSecond: number;
  planBurst: number;
  requestsPerDay: number;
  writeShare: number;
  /** Writes (changed items) per second at that scale. */
  writesPerSecond: number;
  /** Tags per accepted call in this run (local writes are sparse, so about 1). */
  measuredTagsPerCall: number;
  /** Calls per second if each carried as many tags as in this run. */
  callsPerSecondAtMeasuredBatching: number;
  /** Calls per second with full calls (30 tags): the fewest that can carry that many changes. */
  callsPerSecondAtFullBatches: number;
  /** The plan allows the calls at this run's batching. */
  holdsAtMeasuredBatching: boolean;
  /**
   * The plan allows full calls: the purger batches what arrives while it waits for a token, so under a rate it
   * cannot keep with one tag a call it fills calls instead (at the cost of the wait, ~1/plan rate, in staleness).
   */
  holdsWithFullBatches: boolean;
}

/** Whether `plan` keeps up at `requestsPerDay` with `writeShare` of them writes, given the run's tags per call. */
export function rateLimitProjection(plan: PurgePlanName, requestsPerDay: number, writeShare: number, measuredTagsPerCall: number): RateLimitProjection {
  const limit = PURGE_PLANS[plan];
  const writesPerSecond = (requestsPerDay * writeShare) / 86_400;
  const perCall = Math.min(MAX_TAGS_PER_CALL, Math.max(1, measuredTagsPerCall));
  const atMeasured = writesPerSecond / perCall;
  const atFull = writesPerSecond / MAX_TAGS_PER_CALL;
  return {
    plan,
    planCallsPerSecond: limit.rate,
    planBurst: limit.burst,
    requestsPerDay,
    writeShare,
    writesPerSecond,
    measuredTagsPerCall,
    callsPerSecondAtMeasuredBatching: atMeasured,
    callsPerSecondAtFullBatches: atFull,
    holdsAtMeasuredBatching: atMeasured <= limit.rate,
    holdsWithFullBatches: atFull <= limit.rate,
  };
}

export interface CacheTagCost {
  /** Origin 200s and 404s for items in the measured part (traffic and edge background fetches). */
  origin200s: number;
  origin404s: number;
  /** Whether this run's edge kept 404s (EDGE_CACHE_NOT_FOUND_TTL > 0): then they would carry the tag too. */
  notFoundCached: boolean;
  /** `Cache-Tag: item:<id>,items\r\n` on each of those 200s (and cached 404s), in bytes. */
  headerBytes: number;
  /** The same per edge request, and as a share of the origin bytes the run measured. */
  headerBytesPerRequest: number;
  shareOfOriginBytes: number;
  /** A Cache Response Rule (`set_cache_tags`) sets the tags at the zone: nothing on the wire. */
  ruleBytesPerRequest: 0;
  example: string;
}

/** Bytes of `Cache-Tag: <itemCacheTags(id)>\r\n`, summed from the answers' counts and id lengths. */
export function cacheTagCost(answers: OriginItemAnswers, requests: number, originBytes: number, notFoundCached: boolean): CacheTagCost {
  const fixed = Buffer.byteLength(`Cache-Tag: ${itemCacheTags("")}\r\n`, "latin1");
  const bytesOf = (a: { count: number; idChars: number }) => a.count * fixed + a.idChars;
  const headerBytes = bytesOf(answers.ok) + (notFoundCached ? bytesOf(answers.notFound) : 0);
  return {
    origin200s: answers.ok.count,
    origin404s: answers.notFound.count,
    notFoundCached,
    headerBytes,
    headerBytesPerRequest: requests === 0 ? 0 : headerBytes / requests,
    shareOfOriginBytes: originBytes === 0 ? 0 : headerBytes / originBytes,
    ruleBytesPerRequest: 0,
    example: `Cache-Tag: ${itemCacheTags("1234")}`,
  };
}
