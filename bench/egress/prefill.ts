// The edge's starting state. A real edge in front of a long-running API is warm: with purge on change an item
// stays at the edge for EDGE_CACHE_TTL=86400 s, so every id read in the last day is there, and a change
// reaches it as a purge, not as a cold miss. A 2-minute replay starting from an empty cache would instead pay
// the first read of every id it names (thousands of misses in the default mix) and report a cold start, not
// the steady state the issue asks about. So by default (`--edge-start warm`) each slim-edge system is
// *prefilled* before its warm-up: every id the traffic will read (warm-up and measured; existing ids and the
// ones that 404) is read once through that system's edge, with a plain GET (no Origin, no validator, no
// Cache-Control), unpaced. The prefill is not traffic: its origin bytes fall before the measured window and
// are reported apart. "before" has no edge and is never prefilled.
//
// What a prefill leaves behind depends on the mode, which is the point:
//   purge mode  items and 404s kept a day: the measured window starts with every entry fresh, as after a day
//   TTL mode    entries are fresh for EDGE_CACHE_TTL (10 s in the default mix) and kept (stale) for a week:
//               by the measured window they have expired, so a first read there is a 304 revalidation rather
//               than a 200 miss; 404s are not kept at all (EDGE_CACHE_NOT_FOUND_TTL unset)
//
// `--edge-start cold` skips the prefill (the first reads are then in the figures; the report's "without first
// reads" column estimates the warm figure from a cold run); `--edge-start both` measures a cold pair of
// systems after the warm pair, so one report has both figures.
import type { EdgeRequest, TrafficEvent } from "./traffic.ts";

export const EDGE_STARTS = ["warm", "cold", "both"] as const;
export type EdgeStart = (typeof EDGE_STARTS)[number];
/** Why warm: see the comment above (also in `--help` and docs/egress.md). */
export const DEFAULT_EDGE_START: EdgeStart = "warm";

/** The client name prefill reads go out under (no HTTP cache: never sends a validator). */
export const PREFILL_CLIENT = "(prefill)";

/**
 * One plain GET per id the traffic reads (GET/HEAD of `/items/:id`, warm-up included, existing or not), in the
 * order the traffic first reads them. Preflights, writes and other paths never touch the edge cache: left out.
 */
export function prefillEvents(events: readonly TrafficEvent[]): EdgeRequest[] {
  const seen = new Set<string>();
  const out: EdgeRequest[] = [];
  for (const e of events) {
    if (e.kind !== "request" || e.id === undefined || (e.method !== "GET" && e.method !== "HEAD") || seen.has(e.id)) continue;
    seen.add(e.id);
    out.push({
      kind: "request",
      method: "GET",
      path: `/items/${e.id}`,
      id: e.id,
      class: e.class === "missing" ? "missing" : "read",
      client: PREFILL_CLIENT,
      ifNoneMatch: undefined,
      headers: [],
      warmup: true,
    });
  }
  return out;
}

/** The edge starts a run measures: `both` = warm (the headline) then cold (for comparison). */
export function edgeStartsOf(start: EdgeStart): Array<"warm" | "cold"> {
  return start === "both" ? ["warm", "cold"] : [start];
}
