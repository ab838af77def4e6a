// The SVG chart of an egress report, written by hand (no dependency): origin bytes per edge request,
// before and after (and purge mode, when the report has it), overall and per request class, each bar split into
// status line, CORS headers, other headers and body, with each mode's staleness after writes in its card.
// Opens in any browser; the README embeds a copy of a default run, bench/egress/egress.svg.

import type { EgressReport, PerRequestSplit } from "./report.ts";

const WIDTH = 960;
const LEFT = 300;
const RIGHT = 140;
const PLOT = WIDTH - LEFT - RIGHT;
const FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif";

const PARTS = [
  { key: "statusLine", label: "status line", color: "#64748b" },
  { key: "cors", label: "Access-Control-* headers", color: "#f97316" },
  { key: "otherHeaders", label: "other headers", color: "#fbbf24" },
  { key: "body", label: "body", color: "#3b82f6" },
] as const;

function esc(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function segments(split: PerRequestSplit): number[] {
  return [split.statusLine, split.corsHeaders, split.headers - split.corsHeaders, split.body];
}

/** A round axis maximum and tick step for values up to `max`. */
export function niceScale(max: number): { max: number; step: number } {
  if (max <= 0) return { max: 100, step: 25 };
  const raw = max / 7;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  return { max: Math.ceil(max / step) * step, step };
}

/** One decimal; two below 1 B (a warm edge's purge mode sends a few hundredths of a byte per request). */
const fmtBytes = (x: number) => (x > 0 && x < 1 ? x.toFixed(2) : x.toFixed(1));
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

/** `850 ms`, `4.2 s`, `≥ 22 s` (the bound of a probe that gave up). */
function duration(x: number, atLeast: boolean): string {
  return `${atLeast ? "≥ " : ""}${x < 1000 ? `${Math.round(x)} ms` : `${(x / 1000).toFixed(1)} s`}`;
}

export function renderChart(report: EgressReport): string {
  const { before, after, purge, ttl } = report;
  const classRows = report.classes;
  let maxValue = Math.max(before.origin.total, after.origin.total);
  for (const c of classRows) maxValue = Math.max(maxValue, before.classes[c.class].origin.total, after.classes[c.class].origin.total);
  if (purge) for (const c of classRows) maxValue = Math.max(maxValue, purge.system.classes[c.class].origin.total);
  const scale = niceScale(maxValue);
  const x = (v: number) => LEFT + (v / scale.max) * PLOT;

  const parts: string[] = [];
  let y = 0;
  const text = (tx: number, ty: number, content: string, attrs = "") => parts.push(`<text x="${tx.toFixed(1)}" y="${ty.toFixed(1)}" ${attrs}>${esc(content)}</text>`);

  // Header.
  y = 40;
  text(32, y, "Origin egress per edge request", 'font-size="24" font-weight="700" fill="#0f172a"');
  y += 26;
  text(
    32,
    y,
    purge
      ? "before: the seed (ingress-nginx CORS at a Node origin)  ·  after: slim-edge, edge TTL  ·  purge: a day at the edge + purge on change"
      : "before: the seed system (ingress-nginx enable-cors at a Node origin)   ·   after: slim-edge (worker + edge cache + slim origin)",
    'font-size="13.5" fill="#475569"',
  );
  y += 20;
  text(32, y, `Same traffic, counted on the origin's socket: ${report.traffic.source}, ${report.traffic.requests.toLocaleString("en-US")} requests`, 'font-size="13.5" fill="#475569"');

  // Headline figures.
  y += 22;
  const usd = (x: number) => `$${Math.round(x).toLocaleString("en-US")}`;
  const stale = (m: NonNullable<typeof ttl>) => `stale p99 ${duration(m.stalenessMs.p99, m.staleness.p99AtLeast)}`;
  const cards = purge
    ? [
        { label: "before", value: `${before.originBytesPerRequest.toFixed(1)} B`, sub: `${usd(before.usdPerMonth)}/month`, color: "#0f172a" },
        {
          label: `after: TTL ${ttl?.edgeCacheTtl || "default"} s`,
          value: `${after.originBytesPerRequest.toFixed(1)} B`,
          sub: `${pct(report.ratio)}${ttl ? ` · ${stale(ttl)}` : " of before"}`,
          color: report.target.met ? "#15803d" : "#b91c1c",
        },
        {
          label: `purge on change${purge.edgeStart === "warm" ? " (warm)" : ""}`,
          value: `${fmtBytes(purge.originBytesPerRequest)} B`,
          sub: `${(purge.ratio * 100).toFixed(2)}% · ${stale(purge)}`,
          color: purge.target.met ? "#15803d" : "#b91c1c",
        },
        { label: "saved per month", value: usd(before.usdPerMonth - purge.usdPerMonth), sub: `purge mode; TTL mode ${usd(report.saving.usdPerMonth)}`, color: "#0f172a" },
      ]
    : [
    { label: "before", value: `${before.originBytesPerRequest.toFixed(1)} B`, sub: `$${Math.round(before.usdPerMonth).toLocaleString("en-US")}/month`, color: "#0f172a" },
    { label: "after", value: `${after.originBytesPerRequest.toFixed(1)} B`, sub: `$${Math.round(after.usdPerMonth).toLocaleString("en-US")}/month`, color: "#0f172a" },
    { label: "after / before", value: pct(report.ratio), sub: report.target.met ? `target ≤ ${Math.round(report.target.maxRatio * 100)}%: met` : `target ≤ ${Math.round(report.target.maxRatio * 100)}%: not met`, color: report.target.met ? "#15803d" : "#b91c1c" },
    { label: "saved per month", value: `$${Math.round(report.saving.usdPerMonth).toLocaleString("en-US")}`, sub: `at ${report.pricing.requestsPerDay.toExponential(0).replace("e+", "e")} req/day, $${report.pricing.usdPerGb}/GB`, color: "#0f172a" },
      ];
  const cardW = (WIDTH - 64 - 3 * 16) / 4;
  cards.forEach((card, i) => {
    const cx = 32 + i * (cardW + 16);
    parts.push(`<rect x="${cx}" y="${y}" width="${cardW}" height="78" rx="10" fill="#f8fafc" stroke="#e2e8f0"/>`);
    text(cx + 16, y + 22, card.label, 'font-size="12.5" fill="#64748b" font-weight="600" letter-spacing="0.3"');
    text(cx + 16, y + 52, card.value, `font-size="26" font-weight="700" fill="${card.color}"`);
    text(cx + 16, y + 69, card.sub, 'font-size="11.5" fill="#64748b"');
  });
  y += 78 + 34;

  // Legend.
  let lx = LEFT;
  for (const p of PARTS) {
    parts.push(`<rect x="${lx}" y="${y - 10}" width="12" height="12" rx="2" fill="${p.color}"/>`);
    text(lx + 18, y, p.label, 'font-size="12.5" fill="#334155"');
    lx += 18 + p.label.length * 7 + 26;
  }
  y += 18;

  // Plot area: overall block then one block per class.
  const barH = 18;
  const gap = 6;
  const blockGap = 16;
  const plotTop = y;
  type Bar = { label: string; split: PerRequestSplit; ratio: number | null };
  const ratioTo = (b: PerRequestSplit, x: PerRequestSplit) => (b.total === 0 ? null : x.total / b.total);
  const rows: Array<{ title: string; sub: string; sub2?: string | undefined; bars: Bar[]; bold: boolean }> = [
    {
      title: "all requests",
      sub: "100% of requests",
      bars: [
        { label: "before", split: before.origin, ratio: null },
        { label: purge ? "after (TTL)" : "after", split: after.origin, ratio: report.ratio },
        ...(purge ? [{ label: "purge", split: purge.system.origin, ratio: purge.ratio }] : []),
      ],
      bold: true,
    },
    ...classRows.map((c) => {
      const b = before.classes[c.class].origin;
      return {
        title: c.label,
        sub: `${pct(c.share)} of requests${purge ? "" : ` · ${pct(c.afterAnsweredAtEdgeShare)} at edge`}`,
        // Three bars leave room for a second line (a long first one would run into the bar labels).
        sub2: purge ? `at edge: ${pct(c.afterAnsweredAtEdgeShare)} TTL, ${pct(purge.system.classes[c.class].answeredAtEdgeShare)} purge` : undefined,
        bars: [
          { label: "before", split: b, ratio: null },
          { label: purge ? "after (TTL)" : "after", split: after.classes[c.class].origin, ratio: c.ratio },
          ...(purge ? [{ label: "purge", split: purge.system.classes[c.class].origin, ratio: ratioTo(b, purge.system.classes[c.class].origin) }] : []),
        ],
        bold: false,
      };
    }),
  ];
  const barsPer = purge ? 3 : 2;
  const plotHeight = rows.length * (barsPer * barH + (barsPer - 1) * gap + blockGap) + 4;

  // Grid and axis.
  for (let v = 0; v <= scale.max + 1e-9; v += scale.step) {
    const gx = x(v);
    parts.push(`<line x1="${gx.toFixed(1)}" y1="${plotTop}" x2="${gx.toFixed(1)}" y2="${plotTop + plotHeight}" stroke="${v === 0 ? "#94a3b8" : "#e2e8f0"}" stroke-width="1"/>`);
    text(gx, plotTop + plotHeight + 16, String(Math.round(v)), 'font-size="11.5" fill="#64748b" text-anchor="middle"');
  }
  text(LEFT + PLOT / 2, plotTop + plotHeight + 34, "bytes the origin sends per edge request", 'font-size="12" fill="#475569" text-anchor="middle"');

  y = plotTop + 8;
  rows.forEach((row, i) => {
    if (i === 1) {
      parts.push(`<line x1="32" y1="${y - blockGap / 2 - 2}" x2="${WIDTH - 32}" y2="${y - blockGap / 2 - 2}" stroke="#cbd5e1" stroke-dasharray="3 4"/>`);
    }
    text(32, y + barH - 3, row.title, `font-size="14" fill="#0f172a" ${row.bold ? 'font-weight="700"' : 'font-weight="600"'}`);
    text(32, y + 2 * barH + gap - 4, row.sub, 'font-size="11.5" fill="#64748b"');
    if (row.sub2 !== undefined) text(32, y + 3 * barH + 2 * gap - 5, row.sub2, 'font-size="11.5" fill="#64748b"');
    for (const [k, bar] of row.bars.entries()) {
      const split = bar.split;
      const by = y + k * (barH + gap);
      text(LEFT - 10, by + barH - 5, bar.label, `font-size="12" fill="${k === 0 ? "#64748b" : "#0f172a"}" text-anchor="end"`);
      let acc = 0;
      segments(split).forEach((value, si) => {
        if (value <= 0) return;
        const x0 = x(acc);
        const w = Math.max(0.75, x(acc + value) - x0);
        parts.push(`<rect x="${x0.toFixed(2)}" y="${by}" width="${w.toFixed(2)}" height="${barH}" fill="${PARTS[si]!.color}"/>`);
        acc += value;
      });
      let label =
        k === 0 ? `${fmtBytes(split.total)} B` : split.total === 0 ? "0 B: answered at the edge" : `${fmtBytes(split.total)} B  (${bar.ratio === null ? "-" : pct(bar.ratio)})`;
      // The overall slim-edge bars are too short to read their parts: spell them out.
      if (k >= 1 && row.bold && split.total > 0) {
        label += `   = ${fmtBytes(split.statusLine)} status line + ${fmtBytes(split.headers)} headers + ${fmtBytes(split.body)} body`;
      }
      text(x(split.total) + 8, by + barH - 5, label, `font-size="12.5" fill="#0f172a" ${k >= 1 ? 'font-weight="700"' : ""}`);
    }
    y += barsPer * barH + (barsPer - 1) * gap + blockGap;
  });

  y = plotTop + plotHeight + 62;
  const foot = 'font-size="11.5" fill="#64748b"';
  text(32, y, "HTTP/1.1 wire bytes the origin sent per request the edge received (status line + headers + body), counted on the socket by a relay.", foot);
  y += 17;
  text(
    32,
    y,
    `Parsed messages agree with the socket count: before ${(before.originAgreement.difference * 100).toFixed(3)}%, after ${(after.originAgreement.difference * 100).toFixed(3)}% apart. ` +
      `EDGE_CACHE_TTL ${report.traffic.workerVars["EDGE_CACHE_TTL"] ?? "default"} s; after replayed at ${Math.round(after.requestsPerSecond)} req/s` +
      (report.traffic.ratePerSecond > 0 ? ` (pace ${report.traffic.ratePerSecond}).` : "."),
    foot,
  );
  if (purge) {
    y += 17;
    const m = (x: NonNullable<typeof ttl>) =>
      `p50 ${duration(x.stalenessMs.p50, false)}, p99 ${duration(x.stalenessMs.p99, x.staleness.p99AtLeast)}, max ${duration(x.stalenessMs.max, x.staleness.maxAtLeast)}`;
    text(32, y, `Staleness, from a write's 204 until the edge serves it (${purge.staleness.probed} writes, each probed): ${ttl ? `TTL mode ${m(ttl)};` : ""}`, foot);
    y += 17;
    text(
      32,
      y,
      `purge mode ${m(purge)}; ${purge.plan} plan, ${Math.round(purge.api.callsPerThousandWrites).toLocaleString("en-US")} purge calls per 1,000 writes.` +
        (purge.edgeStart === "warm" ? "" : ` Without each id's first read (cold edge): purge ${purge.warm.originBytesPerRequest.toFixed(1)} B.`),
      foot,
    );
    if (purge.edgeStart === "warm") {
      y += 17;
      const cold = report.coldEdge;
      text(
        32,
        y,
        `Warm edge: every id the traffic reads was read once through each edge first (${(purge.prefill?.requests ?? 0).toLocaleString("en-US")} reads, not counted), as a day-old edge holds them.`,
        foot,
      );
      if (cold !== undefined) {
        y += 17;
        text(
          32,
          y,
          `The same events from a cold (empty) edge: TTL mode ${cold.ttl.originBytesPerRequest.toFixed(1)} B (${pct(cold.ttl.ratio)}), ` +
            `purge mode ${cold.purge.originBytesPerRequest.toFixed(1)} B (${(cold.purge.ratio * 100).toFixed(2)}%), stale p99 ${duration(cold.purge.stalenessMs.p99, cold.purge.staleness.p99AtLeast)}.`,
          foot,
        );
      }
    }
  }
  y += 17;
  text(32, y, `$/month = bytes/request × requests/day × 30 ÷ 1e9 × $/GB.  Generated ${report.generatedAt.slice(0, 10)} by npm run egress.`, foot);
  const height = y + 24;

  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="${FONT}">`,
    `<title>Origin egress per edge request: before ${fmtBytes(before.originBytesPerRequest)} B, after ${fmtBytes(after.originBytesPerRequest)} B (${pct(report.ratio)})</title>`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    ...parts,
    "</svg>",
    "",
  ].join("\n");
}
