// The terminal table and the Markdown table of an egress report.

import type { EgressReport, SystemReport } from "./report.ts";

const n0 = (x: number) => Math.round(x).toLocaleString("en-US");
const b1 = (x: number) => x.toFixed(1);
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
  const { before, after, traffic, pricing } = report;
  const out: string[] = [];
  out.push("");
  out.push(`Origin egress per edge request: ${traffic.source}`);
  out.push(
    `${n0(traffic.requests)} measured requests (+${n0(traffic.warmupRequests)} warm-up), ${n0(traffic.writes)} write${traffic.writes === 1 ? "" : "s"} while they ran, ` +
      `${traffic.concurrency} keep-alive connections${traffic.seed === null ? "" : `, seed ${traffic.seed}`}`,
  );
  if (traffic.overlappingReads) out.push("reads of one id overlapped (--overlap): totals exact, the split by class approximate");
  out.push("");
  const rows: string[][] = [["request class", "share", "before B/req", "after B/req", "after/before", "after: at edge"]];
  for (const c of report.classes) {
    rows.push([c.label, pct(c.share), b1(c.before), b1(c.after), c.ratio === null ? "-" : pct(c.ratio), pct(c.afterAnsweredAtEdgeShare)]);
  }
  if (after.unattributed.exchanges + before.unattributed.exchanges > 0) {
    rows.push([
      "(edge background fetches)",
      "",
      b1(before.unattributed.bytes / Math.max(1, before.requests)),
      b1(after.unattributed.bytes / Math.max(1, after.requests)),
      "",
      "",
    ]);
  }
  rows.push(["all requests (socket count)", "100.0%", b1(before.originBytesPerRequest), b1(after.originBytesPerRequest), pct(report.ratio), pct(after.answeredAtEdgeShare)]);
  const lines = grid(rows, ["l", "r", "r", "r", "r", "r"]);
  const rule = "─".repeat(Math.max(...lines.map((l) => l.length)));
  out.push(lines[0]!, rule, ...lines.slice(1, -1), rule, lines[lines.length - 1]!);
  out.push("");

  const split: string[][] = [["origin → edge, B/req", "status line", "headers", "(CORS)", "body", "messages", "socket", "difference"]];
  for (const s of [before, after]) {
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
  for (const s of [before, after]) {
    edge.push([s.system, (s.originExchanges / Math.max(1, s.requests)).toFixed(3), pct(s.answeredAtEdgeShare), b1(s.edgeToClientBytesPerRequest), usd(s.usdPerMonth)]);
  }
  out.push(...grid(edge, ["l", "r", "r", "r", "r"]));
  for (const s of [before, after]) out.push(`${s.system} origin responses: ${originStatusText(s)}`);
  out.push("");
  out.push(
    `after / before = ${pct(report.ratio)} (saving ${pct(report.saving.share)}, ${b1(report.saving.bytesPerRequest)} B per request): ` +
      `${usd(report.saving.usdPerMonth)}/month at ${pricing.requestsPerDay.toExponential(0).replace("e+", "e")} requests/day and $${pricing.usdPerGb}/GB`,
  );
  out.push(`target after ≤ ${pct(report.target.maxRatio, 0)} of before: ${report.target.met ? "met" : "NOT met"}`);
  out.push(
    `socket vs messages: before ${agreementText(before)}, after ${agreementText(after)} ` +
      `(edge→client: before ${pct(before.edgeToClientAgreement.difference, 3)}, after ${pct(after.edgeToClientAgreement.difference, 3)})`,
  );
  out.push(
    `pace: before unpaced (${n0(before.requestsPerSecond)} req/s), after ${traffic.ratePerSecond > 0 ? `paced at ${traffic.ratePerSecond} req/s` : "unpaced"} ` +
      `(${n0(after.requestsPerSecond)} req/s achieved); EDGE_CACHE_TTL ${traffic.workerVars["EDGE_CACHE_TTL"] ?? "(worker default)"} s`,
  );
  for (const note of report.notes) out.push(`note: ${note}`);
  return out.join("\n");
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

/** The README table: the same figures as Markdown. */
export function markdownTable(report: EgressReport): string {
  const { before, after } = report;
  const lines = [
    "| request class | share | before B/req | after B/req | after/before | after: answered at edge |",
    "|---|---:|---:|---:|---:|---:|",
  ];
  for (const c of report.classes) {
    lines.push(`| ${c.label} | ${pct(c.share)} | ${b1(c.before)} | ${b1(c.after)} | ${c.ratio === null ? "-" : pct(c.ratio)} | ${pct(c.afterAnsweredAtEdgeShare)} |`);
  }
  lines.push(
    `| **all requests** (socket count) | 100% | **${b1(before.originBytesPerRequest)}** | **${b1(after.originBytesPerRequest)}** | **${pct(report.ratio)}** | ${pct(after.answeredAtEdgeShare)} |`,
  );
  lines.push("");
  lines.push("| origin → edge, B/req | status line | headers | of which CORS | body | from messages | on the socket | difference |");
  lines.push("|---|---:|---:|---:|---:|---:|---:|---:|");
  for (const s of [before, after]) {
    lines.push(
      `| ${s.system} | ${b1(s.origin.statusLine)} | ${b1(s.origin.headers)} | ${b1(s.origin.corsHeaders)} | ${b1(s.origin.body)} | ${b1(s.originBytesPerRequestFromMessages)} | ${b1(s.originBytesPerRequest)} | ${pct(s.originAgreement.difference, 3)} |`,
    );
  }
  lines.push("");
  lines.push("| | edge → client B/req | $/month |");
  lines.push("|---|---:|---:|");
  for (const s of [before, after]) lines.push(`| ${s.system} | ${b1(s.edgeToClientBytesPerRequest)} | ${usd(s.usdPerMonth)} |`);
  return lines.join("\n");
}
