// The egress report: figures per class and overall from phase results, the JSON's top-level contract,
// the $/month projection, the socket-vs-message check that fails a run loudly, and the chart.
import { describe, expect, it } from "vitest";
import { niceScale, renderChart } from "../../bench/egress/chart.ts";
import type { PhaseResult } from "../../bench/egress/phase.ts";
import { zeroCounters } from "../../bench/egress/relay.ts";
import { emptyUnattributed, type RequestRecord } from "../../bench/egress/replay.ts";
import { buildReport, REPORT_SCHEMA, usdPerMonth, type ReportInput } from "../../bench/egress/report.ts";
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
