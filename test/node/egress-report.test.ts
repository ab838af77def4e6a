// The egress report: figures per class and overall from phase results, the JSON's top-level contract,
// the $/month projection, the socket-vs-message check that fails a run loudly, and the chart; TTL mode and purge
// mode side by side (staleness, purge API calls, the rate-limit projection, the Snippet path's Cache-Tag cost).
import { describe, expect, it } from "vitest";
import { niceScale, renderChart } from "../../bench/egress/chart.ts";
import type { PhaseResult } from "../../bench/egress/phase.ts";
import { zeroCounters } from "../../bench/egress/relay.ts";
import { emptyUnattributed, type RequestRecord } from "../../bench/egress/replay.ts";
import { cacheTagCost, rateLimitProjection } from "../../bench/egress/purge-figures.ts";
import { buildReport, REPORT_SCHEMA, usdPerMonth, type EgressReport, type ReportInput } from "../../bench/egress/report.ts";
import { markdownTable, terminalTable } from "../../bench/egress/table.ts";
import type { EdgeRequest, RequestClass } from "../../bench/egress/traffic.ts";

function request(cls: RequestClass): EdgeRequest {
  return {
    kind: "request",
    method: cls === "preflight" ? "OPTIONS" : "GET",
    path: "/items/1",
    id: "1",
    class: cls,
    client: "c1",
    ifNoneMatch: cls === "revalidate" ? { prev: true } : undefined,
    headers: [],
    warmup: false,
  };
}

/** A record whose origin exchange (if any) had these byte counts. */
function record(cls: RequestClass, origin: [number, number, number] | undefined, edge: [number, number, number], cors = 0): RequestRecord {
  return {
    event: request(cls),
    status: 200,
    sentIfNoneMatch: cls === "revalidate",
    edge: { startLine: edge[0], headers: edge[1], body: edge[2] },
    edgeCors: 0,
    origin: origin ? { startLine: origin[0], headers: origin[1], body: origin[2] } : { startLine: 0, headers: 0, body: 0 },
    originCors: origin ? cors : 0,
    originExchanges: origin ? 1 : 0,
    originStatuses: origin ? [200] : [],
    error: undefined,
  };
}

function phase(system: "before" | "after", records: RequestRecord[], socketDelta = 0): PhaseResult {
  const sum = (pick: (r: RequestRecord) => number) => records.reduce((n, r) => n + pick(r), 0);
  const socket = zeroCounters();
  socket.upstreamBytes = sum((r) => r.origin.startLine + r.origin.headers + r.origin.body) + socketDelta;
  socket.responses = sum((r) => r.originExchanges);
  return {
    system,
    records,
    warmupRequests: 0,
    socket,
    edgeSocketBytes: sum((r) => r.edge.startLine + r.edge.headers + r.edge.body),
    unattributed: emptyUnattributed(),
    openAtEnd: 0,
    seconds: 2,
    writes: 1,
  };
}

function input(before: PhaseResult, after: PhaseResult): ReportInput {
  return {
    before,
    after,
    pricing: { requestsPerDay: 1e9, usdPerGb: 0.09 },
    maxRatio: 0.1,
    command: "npm run egress",
    traffic: { source: "mix test", description: "", requests: 4, warmupRequests: 0, writes: 1, concurrency: 1, ratePerSecond: 0, seed: 1, workerVars: { EDGE_CACHE_TTL: "10" }, overlappingReads: false },
    now: new Date("2026-01-01T00:00:00Z"),
  };
}

// Before: every request reaches the origin; after: the preflight and one read never do.
const before = phase("before", [
  record("preflight", [25, 459, 0], [25, 459, 0], 314),
  record("read", [17, 500, 83], [17, 500, 83], 314),
  record("read", [17, 500, 83], [17, 500, 83], 314),
  record("revalidate", [30, 456, 0], [30, 456, 0], 314),
]);
const after = phase("after", [
  record("preflight", undefined, [25, 120, 0]),
  record("read", [17, 30, 83], [17, 150, 83]),
  record("read", undefined, [17, 150, 83]),
  record("revalidate", [28, 12, 0], [28, 60, 0]),
]);

describe("egress report", () => {
  const report = buildReport(input(before, after));

  it("has the top-level contract: before/after originBytesPerRequest and ratio", () => {
    expect(report.schema).toBe(REPORT_SCHEMA);
    expect(report.before.originBytesPerRequest).toBe((484 + 600 + 600 + 486) / 4);
    expect(report.after.originBytesPerRequest).toBe((130 + 40) / 4);
    expect(report.ratio).toBeCloseTo(170 / 2170, 12);
    expect(report.target).toEqual({ maxRatio: 0.1, met: true });
    expect(report.ok).toBe(true);
    // The JSON round-trips (no Maps, no undefined-only fields that matter).
    const json = JSON.parse(JSON.stringify(report));
    expect(Object.keys(json)).toEqual(expect.arrayContaining(["before", "after", "ratio", "classes", "pricing", "traffic"]));
  });

  it("splits per request into status line, headers (CORS apart) and body, per class", () => {
    expect(report.before.origin).toEqual({ statusLine: 89 / 4, headers: 1915 / 4, corsHeaders: 314, body: 166 / 4, total: 2170 / 4 });
    const read = report.after.classes.read;
    expect(read.requests).toBe(2);
    expect(read.share).toBe(0.5);
    expect(read.originBytesPerRequest).toBe(65);
    expect(read.answeredAtEdgeShare).toBe(0.5);
    expect(report.after.classes.preflight.answeredAtEdgeShare).toBe(1);
    expect(report.after.answeredAtEdgeShare).toBe(0.5);
    expect(report.classes.map((c) => c.class)).toEqual(["preflight", "read", "revalidate"]);
    expect(report.classes[0]).toMatchObject({ before: 484, after: 0, ratio: 0 });
  });

  it("projects $/month: 300 bytes a request at 1e9 a day and $0.09/GB is $810", () => {
    expect(usdPerMonth(300, { requestsPerDay: 1e9, usdPerGb: 0.09 })).toBeCloseTo(810, 9);
    expect(report.before.usdPerMonth).toBeCloseTo(usdPerMonth(542.5, { requestsPerDay: 1e9, usdPerGb: 0.09 }), 9);
    expect(report.saving.usdPerMonth).toBeCloseTo(report.before.usdPerMonth - report.after.usdPerMonth, 9);
  });

  it("reports socket and message counts side by side, and fails the run when they differ by more than 1%", () => {
    expect(report.after.originAgreement).toMatchObject({ socketBytes: 170, messageBytes: 170, difference: 0, ok: true });
    const off = buildReport(input(before, phase("after", after.records, 5)));
    expect(off.after.originBytesPerRequest).toBe(175 / 4);
    expect(off.after.originBytesPerRequestFromMessages).toBe(170 / 4);
    expect(off.after.originAgreement.ok).toBe(false);
    expect(off.ok).toBe(false);
    expect(off.problems.join()).toMatch(/after: origin bytes from parsed messages \(170\) and on the socket \(175\) differ by 2\.86%/);
    const slightly = buildReport(input(phase("before", before.records, 10), after));
    expect(slightly.before.originAgreement.ok).toBe(true); // 10 of 2180: under 1%
  });

  it("counts origin exchanges nobody claimed in the totals, not in a class", () => {
    const withBackground = phase("after", after.records, 40);
    withBackground.unattributed = { bytes: { startLine: 28, headers: 12, body: 0 }, cors: 0, exchanges: 1, statuses: new Map([[304, 1]]) };
    const r = buildReport(input(before, withBackground));
    expect(r.after.originAgreement.ok).toBe(true);
    expect(r.after.unattributed).toEqual({ exchanges: 1, bytes: 40, statuses: { "304": 1 } });
    expect(r.after.classes.read.originBytesPerRequest).toBe(65);
  });

  it("refuses a cheap-looking system that answers wrongly", () => {
    const broken = phase("after", after.records.map((r) => ({ ...r, status: 500, origin: { startLine: 0, headers: 0, body: 0 }, originExchanges: 0, originStatuses: [] })));
    const r = buildReport(input(before, broken));
    expect(r.ratio).toBe(0);
    expect(r.ok).toBe(false);
    expect(r.problems.join("\n")).toMatch(/after: 4 of 4 edge answers were 5xx/);
    expect(r.problems.join("\n")).toMatch(/read: 100\.0% of answers were 200 before and 0\.0% after/);
  });

  it("refuses runs with failed requests or different traffic", () => {
    const failed = phase("after", [...after.records.slice(0, 3), { ...after.records[3]!, error: "no answer within 15000 ms", status: 0 }]);
    expect(buildReport(input(before, failed)).problems.join()).toMatch(/1 of 4 requests failed/);
    expect(buildReport(input(before, phase("after", after.records.slice(1)))).problems.join()).toMatch(/not the same traffic/);
  });

  it("prints a table and Markdown with every class and the overall row", () => {
    const table = terminalTable(report);
    expect(table).toMatch(/all requests \(socket count\)\s+100\.0%\s+542\.5\s+42\.5\s+7\.8%/);
    expect(table).toMatch(/target after ≤ 10% of before: met/);
    const md = markdownTable(report);
    expect(md).toContain("| **all requests** (socket count) | 100% | **542.5** | **42.5** | **7.8%** | 50.0% |");
  });

  it("renders a self-contained SVG chart", () => {
    const svg = renderChart(report);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith("</svg>")).toBe(true);
    expect(svg).toContain("<title>Origin egress per edge request: before 542.5 B, after 42.5 B (7.8%)</title>");
    expect(svg).not.toMatch(/NaN|undefined|Infinity/);
    expect(svg.match(/<text /g)!.length).toBe(svg.match(/<\/text>/g)!.length);
    expect(niceScale(620)).toEqual({ max: 700, step: 100 });
    expect(niceScale(45)).toEqual({ max: 50, step: 10 });
  });
});

describe("egress report: TTL mode and purge mode", () => {
  const sample = (ms: number, outcome: "served" | "gave-up" = "served") => ({ id: "1", ms, outcome, probes: 3 });
  // TTL mode (after): staleness up to the 10 s TTL.
  const ttlPhase: PhaseResult = { ...after, staleness: [sample(4000), sample(9000)], stalenessLimitMs: 12_000, probes: { requests: 80, failed: 0, originExchanges: 2, originBytes: { startLine: 34, headers: 60, body: 166 }, edgeSocketBytes: 9000 }, window: { from: 0, to: 1000 } };
  ttlPhase.socket = { ...after.socket, upstreamBytes: after.socket.upstreamBytes + 260 };
  // Purge mode: one read reaches the origin; two writes, purged in two calls.
  // Its one origin exchange is the first read of its id: a warm edge would have sent nothing.
  const firstRead = record("read", [17, 30, 83], [17, 150, 83]);
  firstRead.event = { ...firstRead.event, firstRead: true };
  const purgeRecords = [record("preflight", undefined, [25, 120, 0]), firstRead, record("read", undefined, [17, 150, 83]), record("revalidate", undefined, [28, 60, 0])];
  const purgePhase: PhaseResult = {
    ...phase("after", purgeRecords),
    system: "purge",
    writes: 2,
    staleness: [sample(120), sample(180)],
    stalenessLimitMs: 22_000,
    probes: { requests: 12, failed: 0, originExchanges: 2, originBytes: { startLine: 34, headers: 60, body: 166 }, edgeSocketBytes: 1500 },
    originItemAnswers: { ok: { count: 1, idChars: 1 }, notFound: { count: 0, idChars: 0 } },
    window: { from: 0, to: 1000 },
  };
  purgePhase.socket = { ...purgePhase.socket, upstreamBytes: 130 + 260 };
  const call = (at: number, tags: string[], status = 200) => ({ at, method: "POST", path: "/client/v4/zones/z/purge_cache", body: { tags }, status, outcome: status === 200 ? ("accepted" as const) : ("rate-limited" as const) });
  const calls = [call(-5, ["item:9"]), call(100, ["item:1"]), call(400, ["item:1", "item:2"]), call(500, ["item:3"], 429), { at: 1, method: "GET", path: "/client/v4/user/tokens/verify", body: undefined, status: 200, outcome: "verified" as const }];
  const applied = [{ at: 101, tags: ["item:1"], keys: 1, deleted: 1, untagged: 0 }, { at: 401, tags: ["item:1", "item:2"], keys: 2, deleted: 1, untagged: 0 }];
  const report = buildReport({
    ...input(before, ttlPhase),
    purge: { phase: purgePhase, plan: "pro", calls, applied, workerVars: { EDGE_CACHE_TTL: "86400", EDGE_CACHE_NOT_FOUND_TTL: "86400" } },
  });

  it("has ttl.* and purge.* headline fields, and keeps before/after/ratio for TTL mode", () => {
    expect(report.after.originBytesPerRequest).toBe(170 / 4); // the probes' 260 bytes are not traffic
    expect(report.after.originAgreement.ok).toBe(true);
    expect(report.ratio).toBeCloseTo(170 / 2170, 12);
    expect(report.ttl).toMatchObject({ mode: "ttl", figures: "after", edgeCacheTtl: "10", originBytesPerRequest: 170 / 4, stalenessMs: { p50: 4000, p99: 9000, max: 9000 } });
    expect(report.ttl!.probes).toEqual({ requests: 80, failed: 0, originExchanges: 2, originBytes: 260, originBytesPerRequest: 65 });
    expect(report.purge).toMatchObject({
      mode: "purge",
      figures: "purge.system",
      edgeCacheTtl: "86400",
      edgeCacheNotFoundTtl: "86400",
      originBytesPerRequest: 130 / 4,
      stalenessMs: { p50: 120, p99: 180, max: 180 },
      plan: "pro",
    });
    expect(report.purge!.ratio).toBeCloseTo(130 / 2170, 12);
    expect(report.purge!.system.firstReads).toEqual({ requests: 1, originBytes: 130, otherOriginBytesPerRequest: 0 });
    expect(report.purge!.warm).toEqual({ originBytesPerRequest: 0, ratio: 0 });
    expect(report.ttl!.warm.originBytesPerRequest).toBe(170 / 4);
    expect(report.purge!.system.originAgreement).toMatchObject({ socketBytes: 130, messageBytes: 130, ok: true });
    expect(report.ok).toBe(true);
    const json = JSON.parse(JSON.stringify(report));
    expect(json.purge.stalenessMs).toEqual({ p50: 120, p99: 180, max: 180 });
    expect(json.ttl.originBytesPerRequest).toBe(42.5);
  });

  it("counts purge calls in the measured window, per 1,000 writes, and what they deleted", () => {
    expect(report.purge!.api).toEqual({
      calls: 3,
      accepted: 2,
      rateLimited: 1,
      failed: 0,
      verifications: 1,
      tags: 3,
      tagsPerCall: 1.5,
      wide: 0,
      writes: 2,
      callsPerThousandWrites: 1500,
      entriesDeleted: 2,
      entriesUntagged: 0,
    });
  });

  it("projects the plan's rate limit at 1e9 requests a day with 1% writes", () => {
    const r = report.purge!.rateLimit;
    expect(r).toMatchObject({ plan: "pro", planCallsPerSecond: 5, planBurst: 25, requestsPerDay: 1e9, writeShare: 0.01, measuredTagsPerCall: 1.5 });
    expect(r.writesPerSecond).toBeCloseTo(1e7 / 86_400, 9); // 115.7 changes a second
    expect(r.callsPerSecondAtMeasuredBatching).toBeCloseTo(1e7 / 86_400 / 1.5, 9);
    expect(r.callsPerSecondAtFullBatches).toBeCloseTo(1e7 / 86_400 / 30, 9);
    expect([r.holdsAtMeasuredBatching, r.holdsWithFullBatches]).toEqual([false, true]);
    expect(rateLimitProjection("free", 1e9, 0.01, 30).holdsWithFullBatches).toBe(false);
    expect(rateLimitProjection("enterprise", 1e9, 0.01, 3).holdsAtMeasuredBatching).toBe(true);
  });

  it("judges purge mode against ≤ 1% of before and p99 ≤ 1 s, a given-up probe never meeting it", () => {
    expect(report.purge!.target).toEqual({ maxRatio: 0.01, maxP99Ms: 1000, ratioMet: false, stalenessMet: true, met: false });
    const stuck = buildReport({
      ...input(before, ttlPhase),
      purge: { phase: { ...purgePhase, staleness: [sample(120), sample(22_000, "gave-up")] }, plan: "pro", calls: [], applied: [], workerVars: {}, maxRatio: 0.5 },
    });
    expect(stuck.purge!.stalenessMs.p99).toBe(22_000);
    expect(stuck.purge!.staleness).toMatchObject({ gaveUp: 1, p99AtLeast: true });
    expect(stuck.purge!.target).toMatchObject({ ratioMet: true, stalenessMet: false, met: false });
    expect(stuck.notes.join("\n")).toMatch(/no purge call during the measured part/);
  });

  it("prices the Snippet path's Cache-Tag header from the origin's 200s (and cached 404s) vs 0 for a Cache Rule", () => {
    const line = "Cache-Tag: item:1,items\r\n".length; // 25 bytes for id "1"
    expect(report.snippetCacheTag).toMatchObject({ origin200s: 1, origin404s: 0, notFoundCached: true, headerBytes: line, ruleBytesPerRequest: 0 });
    expect(report.snippetCacheTag!.headerBytesPerRequest).toBe(line / 4);
    expect(report.snippetCacheTag!.shareOfOriginBytes).toBe(line / 130);
    const answers = { ok: { count: 10, idChars: 40 }, notFound: { count: 2, idChars: 8 } };
    expect(cacheTagCost(answers, 100, 1000, true).headerBytes).toBe(12 * "Cache-Tag: item:,items\r\n".length + 48);
    expect(cacheTagCost(answers, 100, 1000, false).headerBytes).toBe(10 * "Cache-Tag: item:,items\r\n".length + 40);
  });

  it("prints both modes with staleness, the purge API figures and the Snippet cost; Markdown and SVG too", () => {
    const table = terminalTable(report);
    expect(table).toMatch(/all requests \(socket count\)\s+100\.0%\s+542\.5\s+42\.5\s+7\.8%\s+32\.5\s+6\.0%/);
    expect(table).toMatch(/after \(TTL\)\s+cold\s+10 s\s+42\.5\s+7\.83%\s+42\.5 \(7\.83%\)\s+4,000 ms\s+9,000 ms\s+9,000 ms\s+0 of 2\s+80 \(260 B\)/);
    expect(table).toMatch(/purge\s+cold\s+86400 s\s+32\.5\s+5\.99%\s+0\.0 \(0\.00%\)\s+120 ms\s+180 ms\s+180 ms\s+0 of 2/);
    expect(table).toMatch(/target purge mode ≤ 1% of before: NOT met \(5\.99%; 0\.00% without the first read of each id, which a cold edge pays whatever its TTL\); staleness p99 ≤ 1,000 ms: met \(180 ms\)/);
    // A run whose writes were none probed measured no staleness: said, not reported as missed at 0 ms.
    const unprobed = terminalTable({ ...report, purge: { ...report.purge!, staleness: { ...report.purge!.staleness, probed: 0 } } });
    expect(unprobed).toMatch(/staleness p99 ≤ 1,000 ms: not measured \(no write of the run was probed: replay more requests\)/);
    expect(table).toMatch(/3 calls for 2 writes = 1,500 per 1,000 writes; 2 accepted, 1 × 429/);
    expect(table).toMatch(/115\.7 changes\/s → 77\.2 calls\/s at this run's 1\.50 tags per call \(over the plan\), 3\.9 calls\/s with full 30-tag calls \(holds/);
    expect(table).toMatch(/Cache Response Rule \(set_cache_tags\): 0 B/);
    const md = markdownTable(report);
    expect(md).toContain("| **all requests** (socket count) | 100% | **542.5** | **42.5** | **7.8%** | **32.5** | **5.99%** | 50.0% | 75.0% |");
    expect(md).toContain("| purge | cold | 86400 s | 32.5 | 5.99% | 0.0 (0.00%) | 120 ms | 180 ms | 180 ms | 0 of 2 | 12 (260 B) |");
    const svg = renderChart(report);
    expect(svg).not.toMatch(/NaN|undefined|Infinity/);
    expect(svg).toContain("purge on change");
    expect(svg).toMatch(/purge mode p50 120 ms, p99 180 ms, max 180 ms/);
    expect(svg.match(/<text /g)!.length).toBe(svg.match(/<\/text>/g)!.length);
  });

  // --edge-start warm (the default) and both: the headline pair prefilled, the cold pair (the phases above) beside it.
  const prefill = { requests: 3, failed: 0, originExchanges: 3, originBytes: 390, originStatuses: { "200": 2, "404": 1 }, seconds: 0.5 };
  const purgeVars = { EDGE_CACHE_TTL: "86400", EDGE_CACHE_NOT_FOUND_TTL: "86400" };
  // Prefilled, the first read of id 1 is a hit: purge mode's traffic sends the origin nothing (the probes' 260 bytes are theirs).
  const warmPurge: PhaseResult = {
    ...purgePhase,
    records: purgeRecords.map((r) => (r === firstRead ? { ...r, origin: { startLine: 0, headers: 0, body: 0 }, originExchanges: 0, originStatuses: [] } : r)),
    socket: { ...purgePhase.socket, upstreamBytes: 260 },
    originItemAnswers: { ok: { count: 0, idChars: 0 }, notFound: { count: 0, idChars: 0 } },
    prefill,
  };
  const warmTtl: PhaseResult = { ...ttlPhase, prefill };
  const both = (warm: { ttl?: Partial<PhaseResult>; purge?: Partial<PhaseResult> } = {}) =>
    buildReport({
      ...input(before, { ...warmTtl, ...warm.ttl }),
      purge: { phase: { ...warmPurge, ...warm.purge }, plan: "pro", calls, applied, workerVars: purgeVars },
      cold: { after: ttlPhase, purge: { phase: purgePhase, plan: "pro", calls, applied, workerVars: purgeVars } },
    });

  it("reports a prefilled edge as the headline (same keys) and the cold pair under coldEdge", () => {
    const r = both();
    expect(r.ok).toBe(true);
    expect(r.purge).toMatchObject({ edgeStart: "warm", prefill, originBytesPerRequest: 0, stalenessMs: { p50: 120, p99: 180, max: 180 } });
    expect(r.purge!.target).toMatchObject({ ratioMet: true, stalenessMet: true, met: true });
    expect(r.ttl).toMatchObject({ edgeStart: "warm", prefill, originBytesPerRequest: 170 / 4 });
    expect(r.coldEdge!.purge).toMatchObject({ edgeStart: "cold", figures: "coldEdge.purge.system", originBytesPerRequest: 130 / 4, stalenessMs: { p99: 180 } });
    expect(r.coldEdge!.purge.ratio).toBeCloseTo(130 / 2170, 12);
    expect(r.coldEdge!.purge.prefill).toBeUndefined();
    expect(r.coldEdge!.ttl).toMatchObject({ edgeStart: "cold", figures: "coldEdge.ttl.system", originBytesPerRequest: 170 / 4 });
    expect(r.coldEdge!.purge.api.calls).toBe(3);
    expect(r.snippetCacheTag!.origin200s).toBe(0);
    expect(r.coldEdge!.purge.snippetCacheTag.origin200s).toBe(1);
    const json = JSON.parse(JSON.stringify(r));
    expect(json.purge.originBytesPerRequest).toBe(0);
    expect(json.purge.stalenessMs).toEqual({ p50: 120, p99: 180, max: 180 });
    expect(json.coldEdge.purge.originBytesPerRequest).toBe(32.5);
    // A report with no prefill says cold, as every report before prefills existed was.
    expect(report.purge!.edgeStart).toBe("cold");
    expect(report.coldEdge).toBeUndefined();
  });

  it("prints the warm rows, then the cold ones, the prefill's cost and the target judged warm", () => {
    const r = both();
    const table = terminalTable(r);
    expect(table).toMatch(/edge cache prefilled \(warm edge\): 3 reads per system, one per id the traffic reads, before the warm-up, not counted; the cold-edge rows/);
    expect(table).toMatch(/purge\s+warm\s+86400 s\s+0\.0\s+0\.00%/);
    expect(table).toMatch(/after \(TTL\)\s+cold\s+10 s\s+42\.5\s+7\.83%/);
    expect(table).toMatch(/purge\s+cold\s+86400 s\s+32\.5\s+5\.99%/);
    expect(table).toContain("prefill (not counted): TTL mode 3 reads in 0.5 s, 390 origin bytes (200 ×2 · 404 ×1); purge mode 3 reads in 0.5 s, 390 origin bytes (200 ×2 · 404 ×1)");
    expect(table).toMatch(/target purge mode ≤ 1% of before: met \(0\.00% from a prefilled edge; 5\.99% from a cold one, 0\.00% of that without each id's first read\)/);
    expect(table).toMatch(/cold edge: 1 200s, 6\.3 B, \+19\.2%\); a Cache Response Rule/);
    const md = markdownTable(r);
    expect(md).toContain("| purge | warm | 86400 s | 0.0 | 0.00% |");
    expect(md).toContain("| purge | cold | 86400 s | 32.5 | 5.99% |");
    const svg = renderChart(r);
    expect(svg).toContain("purge on change (warm)");
    expect(svg).toContain("Warm edge: every id the traffic reads was read once through each edge first (3 reads, not counted)");
    expect(svg).toMatch(/cold \(empty\) edge: TTL mode 42\.5 B \(7\.8%\), purge mode 32\.5 B \(5\.99%\)/);
    expect(svg).not.toMatch(/NaN|undefined|Infinity/);
    expect(svg.match(/<text /g)!.length).toBe(svg.match(/<\/text>/g)!.length);
  });

  it("treats failed prefill reads as a note within tolerance and as a problem beyond it", () => {
    const bad = both({ purge: { prefill: { ...prefill, failed: 1 } } });
    expect(bad.ok).toBe(false);
    expect(bad.problems).toContain("purge: 1 of 3 prefill reads failed (those ids start cold)");
    const few = both({ ttl: { prefill: { ...prefill, requests: 5000, failed: 1 } } });
    expect(few.ok).toBe(true);
    expect(few.notes).toContain("after: 1 of 5000 prefill reads failed (those ids start cold)");
  });

  it("renders a report written before the modes existed, as it did", () => {
    const old = JSON.parse(JSON.stringify(buildReport(input(before, after)))) as EgressReport;
    expect(old.ttl).toBeUndefined();
    expect(old.purge).toBeUndefined();
    expect(terminalTable(old)).not.toMatch(/purge/);
    expect(markdownTable(old)).toContain("| **all requests** (socket count) | 100% | **542.5** | **42.5** | **7.8%** | 50.0% |");
    expect(renderChart(old)).not.toMatch(/purge|NaN|undefined/);
  });
});
