// The generated module's text, from the model: the banner, the case-folding helpers, the optional
// prefilter table, one lookup per direction (its body from emit-lookup.ts) and the entry arrays. A pure
// function of (model, source, options): no timestamps, stable ordering, no state between calls.
import { createHash } from "node:crypto";
import type { Direction } from "./list-file.ts";
import type { DirectionList, Entry, ParsedList } from "./model.ts";
import { type Dialect, dialect, emitLookupBody, lit } from "./emit-lookup.ts";

/** The generator's path, as the banner names it. */
const GENERATOR = "scripts/gen-internal-headers.ts";

export interface GenerateOptions {
  /**
   * "inline" (the default, what ships): case-insensitive, see emit-lookup.ts. "none": a lookup for
   * lowercase input only, used by the benchmark to measure the alternative (lowercase, then retry).
   */
  readonly fold?: "inline" | "none";
  /**
   * Put a 4 KB first/third-character × length table in front of the full lookup (default false). Measured
   * by the benchmark as an alternative: it rejects ~90% of misses in a few instructions, but the lookup is
   * dominated by branch mispredictions either way and it bought nothing measurable, so it does not ship.
   */
  readonly prefilter?: boolean;
}

/**
 * The prefilter: a 32×32 table indexed by the first and third characters (`code & 31`, which folds case and
 * maps a missing character to 0), each entry a mask of the name lengths that can match (bit L for length
 * L, bit 31 for 31 and more; a family sets every bit from its prefix's length up). A name whose bit is clear
 * cannot be internal: most misses end here, in a few instructions, without calling the full lookup.
 */
function filterEntries(list: DirectionList): [number, number][] {
  const table = new Map<number, number>();
  const index = (s: string) => ((s.charCodeAt(0) & 31) << 5) | (s.charCodeAt(2) & 31);
  const bit = (len: number) => 2 ** Math.min(len, 31);
  for (const e of list.names) table.set(index(e.name), ((table.get(index(e.name)) ?? 0) | bit(e.name.length)) >>> 0);
  for (const e of list.prefixes) {
    let m = 0;
    for (let len = e.name.length; len <= 31; len++) m = (m | bit(len)) >>> 0;
    // `|` on numbers past 2^31 goes through int32: keep the mask unsigned
    table.set(index(e.name), ((table.get(index(e.name)) ?? 0) | m) >>> 0);
  }
  return [...table].sort((a, b) => a[0] - b[0]);
}

function emitLookup(d: Dialect, prefilter: boolean, fnName: string, dir: Direction, list: DirectionList, out: string[]): void {
  const table = `${dir.toUpperCase()}_FILTER`;
  const full = `${dir}Lookup`;
  if (prefilter) {
    const entries = filterEntries(list);
    out.push(`// ${entries.length} of the 1024 first/third-character pairs can start a ${dir} internal header.`);
    out.push(`const ${table} = filterTable([`);
    for (let i = 0; i < entries.length; i += 6) {
      out.push(`  ${entries.slice(i, i + 6).map(([k, m]) => `[${k}, 0x${m.toString(16)}]`).join(", ")},`);
    }
    out.push(`]);`, ``);
  }
  const doc = `/** True if \`name\` is an internal header in the ${dir} direction${d.foldCase ? " (ASCII case-insensitive)" : ""}. */`;
  out.push(doc, `export function ${fnName}(name: string): boolean {`);
  if (prefilter) {
    out.push(`  const n = name.length;`);
    out.push(`  const lengths = ${table}[((name.charCodeAt(0) & 31) << 5) | (name.charCodeAt(2) & 31)] as number;`);
    out.push(`  return ((lengths >>> (n < 31 ? n : 31)) & 1) === 1 && ${full}(name);`);
    out.push(`}`, ``, `function ${full}(name: string): boolean {`);
  }
  emitLookupBody(d, list.names.map((e) => e.name), list.prefixes.map((e) => e.name), out);
  out.push(`}`);
}

function responseDigest(list: DirectionList): string {
  const text = [...list.names.map((e) => e.name), ...list.prefixes.map((e) => `${e.name}*`)].join("\n");
  return createHash("sha256").update(text).digest("hex").slice(0, 12);
}

function emitArray(constName: string, entries: readonly Entry[], out: string[]): void {
  out.push(`export const ${constName}: readonly string[] = [`);
  for (const e of entries) {
    const origin = e.line === 0 ? "" : `[${e.section}] line ${e.line}`;
    const why = e.reason === "" ? "" : origin === "" ? e.reason : `: ${e.reason}`;
    out.push(`  ${lit(e.name)}, // ${origin}${why}`.replace(/\s*(\/\/)?\s*$/, ""));
  }
  out.push(`];`);
}

const FOLD_HELPERS: readonly string[] = [
  `/** \`name\` equals \`lower\` (lowercase), ignoring ASCII case. */`,
  `function eqFold(name: string, lower: string): boolean {`,
  `  return name.length === lower.length && startsWithFold(name, lower);`,
  `}`,
  ``,
  `/** \`name\` starts with \`lower\` (lowercase), ignoring ASCII case. */`,
  `function startsWithFold(name: string, lower: string): boolean {`,
  `  if (name.startsWith(lower)) return true;`,
  `  if (name.length < lower.length) return false;`,
  `  for (let i = 0; i < lower.length; i++) {`,
  `    let c = name.charCodeAt(i);`,
  `    if (c >= 65 && c <= 90) c |= 32;`,
  `    if (c !== lower.charCodeAt(i)) return false;`,
  `  }`,
  `  return true;`,
  `}`,
  ``,
];

const FILTER_TABLE_HELPER: readonly string[] = [
  `function filterTable(entries: readonly (readonly [number, number])[]): Uint32Array {`,
  `  const table = new Uint32Array(1024);`,
  `  for (const [index, lengths] of entries) table[index] = lengths;`,
  `  return table;`,
  `}`,
  ``,
];

/** The generated module's text. `source` is the list's path as shown in the banner. */
export function generateModule(list: ParsedList, source: string, options: GenerateOptions = {}): string {
  const d = dialect((options.fold ?? "inline") === "inline");
  const prefilter = options.prefilter ?? false;
  const out: string[] = [];
  const count = (l: DirectionList) => `${l.names.length} names, ${l.prefixes.length} families`;
  out.push(
    `// generated by ${GENERATOR} from ${source} — do not edit.`,
    `// Edit the list and run \`npm run gen\`; CI runs \`npm run gen:check\` and fails if this file is stale.`,
    `//`,
    `// request:  ${count(list.request)} (x-origin-token built in)`,
    `// response: ${count(list.response)} (access-control-* built in)`,
    `//`,
    `// Each lookup switches on the first character (most misses end there), walks a small trie over the`,
    `// families starting with it and makes one startsWith, then switches on the length, on the character`,
    `// position that best splits each same-length group, and makes one full comparison.`,
  );
  if (prefilter) {
    out.push(
      `// Before all that, a 4 KB table indexed by the first and third characters says which lengths can match:`,
      `// most misses end there without a call (prefilter: benchmark alternative).`,
    );
  }
  if (d.foldCase) {
    out.push(
      `// Characters are tested as \`code | 32\` (A-Z folds onto a-z), so upper/mixed-case names take the same`,
      `// path; the comparisons try the exact lowercase form first and fold case only when it fails.`,
      ``,
      ...FOLD_HELPERS,
    );
  } else {
    out.push(`// fold "none": this variant expects lowercase names (benchmark only).`, ``);
  }
  if (prefilter) out.push(...FILTER_TABLE_HELPER);
  emitLookup(d, prefilter, "isInternalRequestHeader", "request", list.request, out);
  out.push(``);
  emitLookup(d, prefilter, "isInternalResponseHeader", "response", list.response, out);
  out.push(``, `/** Exact names stripped from client requests before they are forwarded to the origin. */`);
  emitArray("INTERNAL_REQUEST_NAMES", list.request.names, out);
  out.push(``, `/** Families (prefixes, without the \`*\`) stripped from client requests. */`);
  emitArray("INTERNAL_REQUEST_PREFIXES", list.request.prefixes, out);
  out.push(``, `/** Exact names stripped from origin responses before they reach the client. */`);
  emitArray("INTERNAL_RESPONSE_NAMES", list.response.names, out);
  out.push(``, `/** Families (prefixes, without the \`*\`) stripped from origin responses, access-control-* included. */`);
  emitArray("INTERNAL_RESPONSE_PREFIXES", list.response.prefixes, out);
  out.push(
    ``,
    `/**`,
    ` * Which response list this is (its names and families, hashed): the edge cache files every entry under it,`,
    ` * so an entry whose headers were stripped with another list is a miss and is replaced, never served.`,
    ` */`,
    `export const INTERNAL_RESPONSE_LIST_DIGEST = ${lit(responseDigest(list.response))};`,
    ``,
  );
  return out.join("\n");
}
