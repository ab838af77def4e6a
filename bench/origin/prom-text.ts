// Reading the origin's /metrics (Prometheus text format 0.0.4) for bench:origin: every sample by its
// series (`name{label="value",…}` exactly as printed), and sums over a metric's series.

export type Samples = ReadonlyMap<string, number>;

/** Every sample line (comments and blank lines skipped): series → value. NaN/±Inf parse as numbers. */
export function parsePromText(text: string): Map<string, number> {
  const values = new Map<string, number>();
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line.startsWith("#") || line === "") continue;
    // A label value may hold spaces: the value starts after the closing brace, if there is one.
    const close = line.lastIndexOf("}");
    const rest = close === -1 ? line : line.slice(close + 1);
    const parts = rest.trim().split(/\s+/);
    const series = close === -1 ? parts.shift()! : line.slice(0, close + 1);
    const value = parts[0];
    if (value === undefined || series === "") continue;
    values.set(series, value === "+Inf" ? Infinity : value === "-Inf" ? -Infinity : Number(value));
  }
  return values;
}

/** The metric's name in a series key (`a_total{x="1"}` → `a_total`). */
export function metricName(series: string): string {
  const brace = series.indexOf("{");
  return brace === -1 ? series : series.slice(0, brace);
}

/** The sum over every series of `name` (all label combinations); 0 when there is none. */
export function sumOf(samples: Samples, name: string): number {
  let total = 0;
  for (const [series, value] of samples) if (metricName(series) === name) total += value;
  return total;
}

/** Fetches and parses a /metrics URL. */
export async function scrape(url: string): Promise<Map<string, number>> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: ${response.status}`);
  return parsePromText(await response.text());
}
