// The terminal table and the Markdown table of an egress report. A report without purge mode (written before
// it existed) prints as it always did.

import { MAX_TAGS_PER_CALL } from "./purge-figures.ts";
import type { EgressReport, ModeReport, SystemReport } from "./report.ts";

const n0 = (x: number) => Math.round(x).toLocaleString("en-US");
const b1 = (x: number) => x.toFixed(1);
/** Bytes that may be a fraction of one (a warm edge's per-request costs): two decimals below 1. */
const b2 = (x: number) => (x > 0 && x < 1 ? x.toFixed(2) : x.toFixed(1));
const pct = (x: number, digits = 1) => `${(x * 100).toFixed(digits)}%`;
const usd = (x: number) => `$${Math.round(x).toLocaleString("en-US")}`;

function pad(cells: string[], widths: number[], align: Array<"l" | "r">): string {
  return cells.map((c, i) => (align[i] === "l" ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
}

function grid(rows: string[][], align: Array<"l" | "r">): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => pad(r, widths, align).trimEnd());
}

export function terminalTable(report: EgressReport): string {
  const { before, after, traffic, pricing, purge } = report;
  const systems = purge === undefined ? [before, after] : [before, after, purge.system];
  const out: string[] = [];
  out.push("");
  out.push(`Origin egress per edge request: ${traffic.source}`);
  out.push(
    `${n0(traffic.requests)} measured requests (+${n0(traffic.warmupRequests)} warm-up), ${n0(traffic.writes)} write${traffic.writes === 1 ? "" : "s"} while they ran, ` +
      `${traffic.concurrency} keep-alive connections${traffic.seed === null ? "" : `, seed ${traffic.seed}`}`,
  );
  if (purge !== undefined) out.push(modesLine(report));
  if (traffic.overlappingReads) out.push("reads of one id overlapped (--overlap): totals exact, the split by class approximate");
  out.push("");
  const rows: string[][] = [
    ["request class", "share", "before B/req", "after B/req", "after/before", ...(purge ? ["purge B/req", "purge/before"] : []), "after: at edge", ...(purge ? ["purge: at edge"] : [])],
  ];
  for (const c of report.classes) {
    const p = purge?.system.classes[c.class];
    rows.push([
      c.label,
      pct(c.share),
      b1(c.before),
      b1(c.after),
      c.ratio === null ? "-" : pct(c.ratio),
      ...(p ? [b2(p.originBytesPerRequest), c.before === 0 ? "-" : pct(p.originBytesPerRequest / c.before)] : []),
      pct(c.afterAnsweredAtEdgeShare),
      ...(p ? [pct(p.answeredAtEdgeShare)] : []),
    ]);
  }
  if (systems.some((s) => s.unattributed.exchanges > 0)) {
    const bg = (s: SystemReport) => b1(s.unattributed.bytes / Math.max(1, s.requests));
    rows.push(["(edge background fetches)", "", bg(before), bg(after), "", ...(purge ? [bg(purge.system), ""] : []), "", ...(purge ? [""] : [])]);
  }
  rows.push([
    "all requests (socket count)",
    "100.0%",
    b1(before.originBytesPerRequest),
    b1(after.originBytesPerRequest),
    pct(report.ratio),
    ...(purge ? [b2(purge.originBytesPerRequest), pct(purge.ratio)] : []),
    pct(after.answeredAtEdgeShare),
    ...(purge ? [pct(purge.system.answeredAtEdgeShare)] : []),
  ]);
  const lines = grid(rows, ["l", ...rows[0]!.slice(1).map(() => "r" as const)]);
  const rule = "─".repeat(Math.max(...lines.map((l) => l.length)));
  out.push(lines[0]!, rule, ...lines.slice(1, -1), rule, lines[lines.length - 1]!);
  out.push("");

  const split: string[][] = [["origin → edge, B/req", "status line", "headers", "(CORS)", "body", "messages", "socket", "difference"]];
  for (const s of systems) {
    split.push([
      s.system,
      b1(s.origin.statusLine),
      b1(s.origin.headers),
      b1(s.origin.corsHeaders),
      b1(s.origin.body),
      b1(s.originBytesPerRequestFromMessages),
      b1(s.originBytesPerRequest),
      pct(s.originAgreement.difference, 3),
    ]);
  }
  out.push(...grid(split, ["l", "r", "r", "r", "r", "r", "r", "r"]));
  out.push("");
  const edge: string[][] = [["", "origin requests/edge req", "answered at edge", "edge → client B/req", "$/month"]];
  for (const s of systems) {
    edge.push([s.system, (s.originExchanges / Math.max(1, s.requests)).toFixed(3), pct(s.answeredAtEdgeShare), b1(s.edgeToClientBytesPerRequest), usd(s.usdPerMonth)]);
  }
  out.push(...grid(edge, ["l", "r", "r", "r", "r"]));
  for (const s of systems) out.push(`${s.system} origin responses: ${originStatusText(s)}`);
  out.push("");
  out.push(
    `after / before = ${pct(report.ratio)} (saving ${pct(report.saving.share)}, ${b1(report.saving.bytesPerRequest)} B per request): ` +
      `${usd(report.saving.usdPerMonth)}/month at ${pricing.requestsPerDay.toExponential(0).replace("e+", "e")} requests/day and $${pricing.usdPerGb}/GB`,
  );
  out.push(`target after ≤ ${pct(report.target.maxRatio, 0)} of before: ${report.target.met ? "met" : "NOT met"}`);
  if (purge !== undefined) out.push(...freshnessLines(report));
  out.push(
    `socket vs messages: ${systems.map((s) => `${s.system} ${agreementText(s)}`).join(", ")} ` +
      `(edge→client: ${systems.map((s) => `${s.system} ${pct(s.edgeToClientAgreement.difference, 3)}`).join(", ")})`,
  );
  out.push(
    `pace: before unpaced (${n0(before.requestsPerSecond)} req/s), ${purge ? "after and purge" : "after"} ${traffic.ratePerSecond > 0 ? `paced at ${traffic.ratePerSecond} req/s` : "unpaced"} ` +
      `(${systems.slice(1).map((s) => `${n0(s.requestsPerSecond)}`).join(" and ")} req/s achieved); EDGE_CACHE_TTL ${traffic.workerVars["EDGE_CACHE_TTL"] ?? "(worker default)"} s`,
  );
  for (const note of report.notes) out.push(`note: ${note}`);
  return out.join("\n");
}

/** Which configuration each slim-edge system ran. */
function modesLine(report: EgressReport): string {
  const { ttl, purge } = report;
  if (purge === undefined) return "";
  return (
    `slim-edge twice, the same events side by side: after = TTL mode (EDGE_CACHE_TTL ${ttl?.edgeCacheTtl || "default"} s, no purge), ` +
    `purge = purge on change (EDGE_CACHE_TTL ${purge.edgeCacheTtl} s, EDGE_CACHE_NOT_FOUND_TTL ${purge.edgeCacheNotFoundTtl} s, ${purge.plan} plan); ` +
    edgeStartText(report)
  );
}

/** How the edge started: prefilled (warm) or empty (cold); older reports are cold. */
function edgeStartText(report: EgressReport): string {
  const { purge, coldEdge, traffic } = report;
  if (purge?.edgeStart !== "warm") return "edge cache empty at the start (cold edge: every id's first read is a miss in the figures)";
  return (
    `edge cache prefilled (warm edge): ${n0(purge.prefill?.requests ?? traffic.prefillReads ?? 0)} reads per system, one per id the traffic reads, before the warm-up, not counted` +
    (coldEdge === undefined ? "" : "; the cold-edge rows replay the same events from an empty cache")
  );
}

/** `1,234 ms`, `≥ 22,000 ms` when the figure rests on a probe that gave up. */
function ms(x: number, atLeast = false): string {
  return `${atLeast ? "≥ " : ""}${x >= 100 ? n0(x) : x.toFixed(1)} ms`;
}

function stalenessRow(m: ModeReport): string[] {
  const s = m.staleness;
  return [
    m.mode === "ttl" ? "after (TTL)" : "purge",
    m.edgeStart ?? "cold",
    `${m.edgeCacheTtl || "default"} s`,
    b2(m.originBytesPerRequest),
    pct(m.ratio, 2),
    m.warm === undefined ? "-" : `${b2(m.warm.originBytesPerRequest)} (${pct(m.warm.ratio, 2)})`,
    ms(m.stalenessMs.p50, s.gaveUp > 0 && m.stalenessMs.p50 >= s.limitMs),
    ms(m.stalenessMs.p99, s.p99AtLeast),
    ms(m.stalenessMs.max, s.maxAtLeast),
    `${s.gaveUp} of ${s.probed}`,
    `${n0(m.probes.requests)} (${n0(m.probes.originBytes)} B)`,
  ];
}

/** Staleness in both modes, purge mode's targets, its API calls, the rate-limit projection, the Snippet path. */
function freshnessLines(report: EgressReport): string[] {
  const { ttl, purge } = report;
  if (purge === undefined) return [];
  const out: string[] = [""];
  out.push(`Fresh after writes: each measured write probed at the edge ${purge.staleness.pollMs} until it served the new version (probes not counted above)`);
  const rows: string[][] = [["mode", "edge", "EDGE_CACHE_TTL", "origin B/req", "of before", "without first reads", "staleness p50", "p99", "max", "gave up", "probes (origin bytes)"]];
  for (const m of modeRows(report)) rows.push(stalenessRow(m));
  out.push(...grid(rows, ["l", "l", "r", "r", "r", "r", "r", "r", "r", "r", "r"]));
  out.push(...purgeFigureLines(report));
  return out;
}

/** The headline modes (TTL, purge), then the cold-edge pair when the run measured one. */
function modeRows(report: EgressReport): ModeReport[] {
  const { ttl, purge, coldEdge } = report;
  if (purge === undefined) return [];
  return [...(ttl === undefined ? [] : [ttl]), purge, ...(coldEdge === undefined ? [] : [coldEdge.ttl, coldEdge.purge])];
}

/** What the prefill cost each mode (origin bytes before the measured window, not counted in any figure). */
function prefillLine(report: EgressReport): string | undefined {
  const { ttl, purge } = report;
  if (purge?.prefill === undefined) return undefined;
  const one = (name: string, m: ModeReport | undefined) => {
    const p = m?.prefill;
    if (p === undefined) return undefined;
    const statuses = Object.entries(p.originStatuses).sort(([a], [b]) => a.localeCompare(b)).map(([st, k]) => `${st} ×${n0(k)}`).join(" · ");
    return `${name} ${n0(p.requests)} reads in ${p.seconds.toFixed(1)} s, ${n0(p.originBytes)} origin bytes (${statuses || "no origin exchange"})${p.failed > 0 ? `, ${n0(p.failed)} failed` : ""}`;
  };
  return `prefill (not counted): ${[one("TTL mode", ttl), one("purge mode", purge)].filter((x) => x !== undefined).join("; ")}`;
}

/** Purge mode's targets, its API calls, the rate-limit projection and the Snippet path's tag cost, a line each. */
function purgeFigureLines(report: EgressReport): string[] {
  const { purge, snippetCacheTag: tag } = report;
  if (purge === undefined) return [];
  const out: string[] = [];
  const t = purge.target;
  const cold = report.coldEdge?.purge;
  const beside =
    purge.edgeStart === "warm"
      ? `from a prefilled edge${cold === undefined ? "" : `; ${pct(cold.ratio, 2)} from a cold one, ${pct(cold.warm.ratio, 2)} of that without each id's first read`}`
      : purge.warm === undefined
        ? ""
        : `; ${pct(purge.warm.ratio, 2)} without the first read of each id, which a cold edge pays whatever its TTL`;
  const prefill = prefillLine(report);
  if (prefill !== undefined) out.push(prefill);
  out.push(
    `target purge mode ≤ ${pct(t.maxRatio, 0)} of before: ${t.ratioMet ? "met" : "NOT met"} (${pct(purge.ratio, 2)}` +
      `${beside.startsWith(";") || beside === "" ? beside : ` ${beside}`}); ` +
      `staleness p99 ≤ ${n0(t.maxP99Ms)} ms: ${
        purge.staleness.probed === 0
          ? "not measured (no write of the run was probed: replay more requests)"
          : `${t.stalenessMet ? "met" : "NOT met"} (${ms(purge.stalenessMs.p99, purge.staleness.p99AtLeast)})`
      }`,
  );
  const a = purge.api;
  const r = purge.rateLimit;
  out.push(
    `purge API (${purge.plan} plan: ${rate(r.planCallsPerSecond)} calls/s, burst ${r.planBurst}): ${n0(a.calls)} calls for ${n0(a.writes)} writes = ` +
      `${n0(a.callsPerThousandWrites)} per 1,000 writes; ${n0(a.accepted)} accepted, ${n0(a.rateLimited)} × 429, ${n0(a.failed)} failed, ${n0(a.wide)} wide (all items); ` +
      `${a.tagsPerCall.toFixed(2)} tags per call; ${n0(a.entriesDeleted)} edge cache entries deleted`,
  );
  const measured =
    a.accepted === 0
      ? "no call accepted in this run to measure tags per call; "
      : `${r.callsPerSecondAtMeasuredBatching.toFixed(1)} calls/s at this run's ${r.measuredTagsPerCall.toFixed(2)} tags per call (${r.holdsAtMeasuredBatching ? "holds" : "over the plan"}), `;
  out.push(
    `rate limit at ${r.requestsPerDay.toExponential(0).replace("e+", "e")} requests/day with ${pct(r.writeShare, 0)} writes: ${r.writesPerSecond.toFixed(1)} changes/s → ` +
      measured +
      `${r.callsPerSecondAtFullBatches.toFixed(1)} calls/s with full ${MAX_TAGS_PER_CALL}-tag calls (${r.holdsWithFullBatches ? "holds: the purger fills calls while it waits for tokens" : "over the plan: pick a bigger plan"})`,
  );
  const coldTag = report.coldEdge?.purge.snippetCacheTag;
  if (tag !== undefined) {
    out.push(
      `Snippet path (zone cache): "${tag.example}" on each of ${n0(tag.origin200s)} origin 200s${tag.notFoundCached ? ` and ${n0(tag.origin404s)} cached 404s` : ""} = ` +
        `${b2(tag.headerBytesPerRequest)} B per edge request (+${pct(tag.shareOfOriginBytes)} on purge mode's origin bytes` +
        (coldTag === undefined ? "" : `; cold edge: ${n0(coldTag.origin200s)} 200s, ${b2(coldTag.headerBytesPerRequest)} B, +${pct(coldTag.shareOfOriginBytes)}`) +
        "); a Cache Response Rule (set_cache_tags): 0 B",
    );
  }
  return out;
}

/** A rate that may be below 1 (free plan: 5 a minute). */
function rate(x: number): string {
  return x >= 1 ? String(Math.round(x * 100) / 100) : x.toFixed(3);
}

/** `200 ×12,345 · 304 ×2,000 · …` over every class and the unattributed exchanges. */
function originStatusText(s: SystemReport): string {
  const counts = new Map<string, number>();
  for (const c of Object.values(s.classes)) for (const [status, n] of Object.entries(c.originStatuses)) counts.set(status, (counts.get(status) ?? 0) + n);
  for (const [status, n] of Object.entries(s.unattributed.statuses)) counts.set(status, (counts.get(status) ?? 0) + n);
  const parts = [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([status, n]) => `${status} ×${n0(n)}`);
  return parts.length === 0 ? "none" : parts.join(" · ");
}

function agreementText(s: SystemReport): string {
  return `${pct(s.originAgreement.difference, 3)} ${s.originAgreement.ok ? "✓" : "✗"}`;
}

/** The README table: the same figures as Markdown (with purge mode's columns and tables when the report has it). */
export function markdownTable(report: EgressReport): string {
  const { before, after, purge } = report;
  const systems = purge === undefined ? [before, after] : [before, after, purge.system];
  const lines = purge
    ? [
        "| request class | share | before B/req | after B/req | after/before | purge B/req | purge/before | after: answered at edge | purge: answered at edge |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
      ]
    : ["| request class | share | before B/req | after B/req | after/before | after: answered at edge |", "|---|---:|---:|---:|---:|---:|"];
  for (const c of report.classes) {
    const p = purge?.system.classes[c.class];
    const purgeCells = p ? ` ${b2(p.originBytesPerRequest)} | ${c.before === 0 ? "-" : pct(p.originBytesPerRequest / c.before)} |` : "";
    lines.push(
      `| ${c.label} | ${pct(c.share)} | ${b1(c.before)} | ${b1(c.after)} | ${c.ratio === null ? "-" : pct(c.ratio)} |${purgeCells} ${pct(c.afterAnsweredAtEdgeShare)} |` +
        (p ? ` ${pct(p.answeredAtEdgeShare)} |` : ""),
    );
  }
  const purgeAll = purge ? ` **${b2(purge.originBytesPerRequest)}** | **${pct(purge.ratio, 2)}** |` : "";
  lines.push(
    `| **all requests** (socket count) | 100% | **${b1(before.originBytesPerRequest)}** | **${b1(after.originBytesPerRequest)}** | **${pct(report.ratio)}** |${purgeAll} ${pct(after.answeredAtEdgeShare)} |` +
      (purge ? ` ${pct(purge.system.answeredAtEdgeShare)} |` : ""),
  );
  lines.push("");
  lines.push("| origin → edge, B/req | status line | headers | of which CORS | body | from messages | on the socket | difference |");
  lines.push("|---|---:|---:|---:|---:|---:|---:|---:|");
  for (const s of systems) {
    lines.push(
      `| ${s.system} | ${b1(s.origin.statusLine)} | ${b1(s.origin.headers)} | ${b1(s.origin.corsHeaders)} | ${b1(s.origin.body)} | ${b1(s.originBytesPerRequestFromMessages)} | ${b1(s.originBytesPerRequest)} | ${pct(s.originAgreement.difference, 3)} |`,
    );
  }
  lines.push("");
  lines.push("| | edge → client B/req | $/month |");
  lines.push("|---|---:|---:|");
  for (const s of systems) lines.push(`| ${s.system} | ${b1(s.edgeToClientBytesPerRequest)} | ${usd(s.usdPerMonth)} |`);
  if (purge !== undefined) {
    lines.push("");
    lines.push("| mode | edge | EDGE_CACHE_TTL | origin B/req | of before | without first reads | staleness p50 | p99 | max | gave up | probes (origin bytes) |");
    lines.push("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (const m of modeRows(report)) lines.push(`| ${stalenessRow(m).join(" | ")} |`);
    lines.push("");
    lines.push(...purgeFigureLines(report).map((line) => `- ${line}`));
  }
  return lines.join("\n");
}
