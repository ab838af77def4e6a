// One grammar for every variable of every deployable (worker vars, Snippet build, origin environment), so a
// value means the same thing wherever it is written: booleans are `true`/`false`, lists are comma-separated,
// sizes are bytes with an optional binary unit (B, KiB, MiB, GiB, TiB; any case), and an empty value means
// "the default". Each reader appends a problem (naming the variable and the fix) instead of throwing, so one
// run reports every mistake.

import type { ConfigProblem } from "./config-error.ts";

/** Unset and empty (or only spaces) both mean "use the default". */
export function isUnset(raw: string | undefined): raw is undefined | "" {
  return raw === undefined || raw.trim() === "";
}

/** `true` or `false`, exactly (as wrangler.toml and JSON write them); anything else is refused, never guessed. */
export function readBoolean(variable: string, raw: string, problems: ConfigProblem[]): boolean {
  const value = raw.trim();
  if (value === "true") return true;
  if (value === "false") return false;
  problems.push({ variable, message: `"${raw}" is not a boolean; write "true" or "false".` });
  return false;
}

/** A comma-separated list of trimmed items; empty items (`a,,b`, a trailing comma) and duplicates are refused. */
export function readList(variable: string, raw: string | undefined, problems: ConfigProblem[]): string[] {
  if (isUnset(raw)) return [];
  const items = raw.split(",").map((item) => item.trim());
  if (items.some((item) => item === "")) {
    problems.push({ variable, message: `"${raw}" has an empty item; remove the stray comma.` });
  }
  const seen = new Set<string>();
  for (const item of items) {
    if (item !== "" && seen.has(item)) problems.push({ variable, message: `"${item}" is listed twice; list it once.` });
    seen.add(item);
  }
  return items.filter((item) => item !== "");
}

export interface NumberRule {
  min: number;
  max: number;
  /** What the number counts, for the message: "seconds", "milliseconds", "items"… */
  unit: string;
  /** An example of a good value. */
  example: string;
}

/** A whole number within [min, max]. */
export function readWholeNumber(variable: string, raw: string, rule: NumberRule, problems: ConfigProblem[]): number {
  const value = raw.trim();
  if (/^\d{1,15}$/.test(value)) {
    const n = Number(value);
    if (n >= rule.min && n <= rule.max) return n;
  }
  problems.push({
    variable,
    message: `"${raw}" is not a whole number of ${rule.unit} from ${rule.min} to ${rule.max}; write e.g. "${rule.example}".`,
  });
  return rule.min;
}

/** A number of seconds with up to three decimals (millisecond precision) within [min, max]. */
export function readSeconds(variable: string, raw: string, rule: Omit<NumberRule, "unit">, problems: ConfigProblem[]): number {
  const value = raw.trim();
  if (/^\d{1,9}(\.\d{1,3})?$/.test(value)) {
    const n = Number(value);
    if (n >= rule.min && n <= rule.max) return n;
  }
  problems.push({
    variable,
    message: `"${raw}" is not a duration in seconds from ${rule.min} to ${rule.max}; write e.g. "${rule.example}".`,
  });
  return rule.min;
}

const BYTE_UNITS: Readonly<Record<string, number>> = { "": 1, b: 1, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40 };

/** A size in bytes, optionally with a binary unit (`64KiB`, `1 GiB`), within [min, max]. */
export function readBytes(variable: string, raw: string, rule: { min: number; max: number; example: string }, problems: ConfigProblem[]): number {
  const match = /^(\d{1,15})\s*([a-z]*)$/i.exec(raw.trim());
  const unit = match ? BYTE_UNITS[match[2]!.toLowerCase()] : undefined;
  if (match && unit !== undefined) {
    const n = Number(match[1]) * unit;
    if (n >= rule.min && n <= rule.max) return n;
    problems.push({ variable, message: `"${raw}" is out of range; set between ${formatBytes(rule.min)} and ${formatBytes(rule.max)}.` });
    return rule.min;
  }
  problems.push({
    variable,
    message: `"${raw}" is not a size; write a whole number of bytes, optionally with B, KiB, MiB, GiB or TiB (e.g. "${rule.example}").`,
  });
  return rule.min;
}

/** `67108864` → `64 MiB`, `25163472896` → `23.4 GiB`: sizes in messages the way people write them. */
export function formatBytes(n: number): string {
  for (const [unit, size] of [["TiB", 2 ** 40], ["GiB", 2 ** 30], ["MiB", 2 ** 20], ["KiB", 2 ** 10]] as const) {
    if (n >= size) return n % size === 0 ? `${n / size} ${unit}` : `${(n / size).toFixed(1)} ${unit}`;
  }
  return `${n} bytes`;
}

/** One of a fixed set of words. */
export function readChoice<T extends string>(variable: string, raw: string, choices: readonly T[], problems: ConfigProblem[]): T {
  const value = raw.trim() as T;
  if (choices.includes(value)) return value;
  problems.push({ variable, message: `"${raw}" is not one of ${choices.map((c) => `"${c}"`).join(", ")}.` });
  return choices[0]!;
}
