import type { AnchorTable } from "./anchors.ts";

export interface MeasuredRow {
  name: string;
  /** Hit ratio in % per capacity (same order as the capacities). */
  ratios: number[];
}

const OURS = "slim-edge";

/**
 * A markdown table: measured rows, then the README anchors for this trace (when known), the bar
 * (the better of W-TinyLFU and best other) and our margin over it.
 */
export function formatTable(
  title: string,
  capacities: number[],
  measured: MeasuredRow[],
  anchors: AnchorTable | undefined,
): string {
  const lines: string[] = [];
  const row = (name: string, cells: string[]) => lines.push(`| ${name} | ${cells.join(" | ")} |`);
  lines.push(`**${title}**`, "");
  row("capacity", capacities.map((c) => c.toLocaleString("en-US")));
  row("---", capacities.map(() => "---:"));
  for (const { name, ratios } of measured) row(name, ratios.map((r) => r.toFixed(2)));
  if (anchors) {
    const anchor = (name: string) => capacities.map((c) => anchors.rows.get(name)?.get(c));
    for (const name of anchors.rows.keys()) {
      row(`${name} (README)`, anchor(name).map((v) => (v === undefined ? "–" : v.toFixed(2))));
    }
    const tinyLfu = anchor("W-TinyLFU");
    const other = anchor("best other");
    const bar = capacities.map((_, i) =>
      tinyLfu[i] === undefined || other[i] === undefined ? undefined : Math.max(tinyLfu[i]!, other[i]!),
    );
    const ours = measured.find((m) => m.name === OURS)?.ratios;
    row("bar = max(W-TinyLFU, best other)", bar.map((v) => (v === undefined ? "–" : v.toFixed(2))));
    if (ours) {
      row(
        `${OURS} − bar`,
        // The anchors have two decimals: compare our figure as printed.
        bar.map((v, i) => (v === undefined ? "–" : signed(Number(ours[i]!.toFixed(2)) - v))),
      );
    }
  }
  return lines.join("\n");
}

export function signed(value: number): string {
  const rounded = value.toFixed(2);
  return rounded.startsWith("-") && rounded !== "-0.00" ? rounded : `+${rounded.replace("-", "")}`;
}
