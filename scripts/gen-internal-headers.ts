// Compiles src/edge/internal-headers.txt into src/edge/headers/internal-headers.generated.ts: one lookup
// function per direction, specialised for the list (switch on the first character; the families through a
// small trie and one startsWith; the exact names by length, then on the character positions that best split
// each group, then one full comparison). See "Code generation" below for the shape.
// workerd refuses `new Function`/eval, so the specialisation happens here, at build time.
//
//   node scripts/gen-internal-headers.ts            write the generated module (only if its bytes change)
//   node scripts/gen-internal-headers.ts --check    exit 1 if the generated module is stale (CI)
//   node scripts/gen-internal-headers.ts --list FILE --out FILE   another list / output (tests)
//
// The output is a pure function of the list's text: no timestamps, stable ordering.

import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export type Direction = "request" | "response";
export type Section = "both" | Direction;

export interface Entry {
  /** The name, or for a family the prefix without its `*`. Lowercase. */
  readonly name: string;
  readonly family: boolean;
  readonly section: Section;
  /** 1-based line in the list file; 0 for built-in entries. */
  readonly line: number;
  /** The comment on the entry's line, if any. */
  readonly reason: string;
}

export interface DirectionList {
  /** Exact names, sorted. */
  readonly names: readonly Entry[];
  /** Families (prefixes without `*`), sorted. */
  readonly prefixes: readonly Entry[];
}

export interface ParsedList {
  readonly file: string;
  readonly request: DirectionList;
  readonly response: DirectionList;
}

export class ListError extends Error {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(problems.join("\n"));
    this.name = "ListError";
    this.problems = problems;
  }
}

/** The header the worker authenticates to the origin with: clients must never be able to send it. */
export const ORIGIN_TOKEN_HEADER = "x-origin-token";

/** Always stripped from origin responses, whatever the list says: the edge's CORS is the only CORS. */
export const BUILT_IN: Readonly<Record<Direction, readonly Entry[]>> = {
  request: [],
  response: [
    {
      name: "access-control-",
      family: true,
      section: "response",
      line: 0,
      reason: "built in: the origin's own CORS headers; the edge's CORS policy must be the only CORS a browser sees",
    },
  ],
};

/**
 * Names the system needs in each direction; a listed name or family that would strip one is an error.
 * A trailing `*` marks a family.
 */
export const PROTECTED: Readonly<Record<Direction, ReadonlyArray<readonly [string, string]>>> = {
  request: [
    ["cf-*", "Cloudflare's own headers (cf-connecting-ip, cf-ray, cf-ipcountry, cf-visitor, cf-worker)"],
    ["cdn-loop", "Cloudflare's loop detection"],
    ["host", "routing"],
    ["if-none-match", "the worker forwards conditional requests so the origin can answer 304"],
    ["if-modified-since", "the worker forwards conditional requests so the origin can answer 304"],
    ["if-match", "conditional writes"],
    ["if-unmodified-since", "conditional writes"],
    ["if-range", "range requests"],
    ["range", "range requests"],
    ["origin", "the worker's CORS logic reads it"],
    ["access-control-request-*", "the worker's CORS logic reads preflights"],
    ["accept", "content negotiation"],
    ["accept-encoding", "compression negotiation"],
    ["content-type", "request bodies"],
    ["content-length", "request bodies"],
  ],
  response: [
    ["cf-*", "Cloudflare's own headers"],
    ["etag", "validators: 304s depend on it"],
    ["last-modified", "validators"],
    ["content-length", "framing"],
    ["content-type", "representation"],
    ["content-encoding", "representation"],
    ["content-range", "range responses"],
    ["accept-ranges", "range responses"],
    ["cache-control", "edge cache and browser freshness"],
    ["cdn-cache-control", "edge cache freshness"],
    ["cloudflare-cdn-cache-control", "edge cache freshness"],
    ["cache-tag", "Cloudflare purge by tag"],
    ["expires", "freshness"],
    ["age", "freshness"],
    ["date", "caches compute Age from it"],
    ["vary", "cache keys"],
    ["location", "redirects"],
    ["set-cookie", "cookies"],
    ["www-authenticate", "authentication challenges"],
    ["retry-after", "back-off"],
    ["strict-transport-security", "security policy"],
    ["content-security-policy*", "security policy"],
    ["x-content-type-options", "security policy"],
    ["x-frame-options", "security policy"],
    ["referrer-policy", "security policy"],
    ["permissions-policy", "security policy"],
    ["cross-origin-*", "security policy (CORP, COOP, COEP)"],
  ],
};

/**
 * Frequent header names, used only to choose which character positions the generated lookup tests first
 * (so common misses fail early). Changing this list changes the code shape, never the behaviour.
 */
const COMMON_NAMES: readonly string[] = [
  "accept", "accept-encoding", "accept-language", "accept-ranges", "age", "authorization", "cache-control",
  "cdn-loop", "cf-connecting-ip", "cf-ipcountry", "cf-ray", "cf-visitor", "connection", "content-encoding",
  "content-length", "content-type", "cookie", "date", "dnt", "etag", "expires", "host", "if-modified-since",
  "if-none-match", "last-modified", "location", "origin", "pragma", "priority", "referer", "sec-ch-ua",
  "sec-ch-ua-mobile", "sec-ch-ua-platform", "sec-fetch-dest", "sec-fetch-mode", "sec-fetch-site",
  "sec-fetch-user", "set-cookie", "strict-transport-security", "upgrade-insecure-requests", "user-agent",
  "vary", "x-content-type-options", "x-csrf-token", "x-frame-options", "x-requested-with", "x-api-key",
  "x-forwarded-for", "x-forwarded-proto", "x-real-ip", "content-security-policy", "referrer-policy",
  "permissions-policy", "cross-origin-resource-policy", "x-xss-protection", "link", "keep-alive",
  "transfer-encoding", "access-control-allow-origin", "access-control-request-method", "if-match", "range",
];

const TCHAR = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const MIN_FAMILY_PREFIX = 3;

function where(file: string, line: number): string {
  return line === 0 ? "built in" : `${file}:${line}`;
}

function display(entry: Entry): string {
  return entry.family ? `${entry.name}*` : entry.name;
}

function directionsOf(section: Section): Direction[] {
  return section === "both" ? ["request", "response"] : [section];
}

function protectedHit(entry: Entry, dir: Direction): readonly [string, string] | undefined {
  for (const p of PROTECTED[dir]) {
    const [spec] = p;
    const pFamily = spec.endsWith("*");
    const pName = pFamily ? spec.slice(0, -1) : spec;
    if (entry.family) {
      if (pName.startsWith(entry.name) || (pFamily && entry.name.startsWith(pName))) return p;
    } else if (pFamily ? entry.name.startsWith(pName) : entry.name === pName) {
      return p;
    }
  }
  return undefined;
}

/** Parses and validates a list file's text. Throws ListError with every problem found, each as file:line. */
export function parseList(text: string, file: string): ParsedList {
  const problems: string[] = [];
  const byDir: Record<Direction, Entry[]> = { request: [...BUILT_IN.request], response: [...BUILT_IN.response] };
  const seen: Record<Direction, Map<string, Entry>> = { request: new Map(), response: new Map() };
  for (const dir of ["request", "response"] as const) {
    for (const e of BUILT_IN[dir]) seen[dir].set(display(e), e);
  }
  let section: Section | undefined;

  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    const at = `${file}:${lineNo}`;
    const line = (lines[i] ?? "").replace(/\r$/, "");
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    const m = /^(\S+)(?:\s+(.*))?$/.exec(trimmed);
    const token = m?.[1] ?? "";
    const rest = (m?.[2] ?? "").trim();
    if (rest !== "" && !rest.startsWith("#")) {
      problems.push(`${at}: unexpected text after "${token}": one name per line; a comment starts with '#' after whitespace`);
      continue;
    }
    const reason = rest.replace(/^#+\s*/, "");

    if (token.startsWith("[")) {
      const s = /^\[([^\]]*)\]$/.exec(token)?.[1];
      if (s === "both" || s === "request" || s === "response") section = s;
      else problems.push(`${at}: unknown section ${token}: expected [both], [request] or [response]`);
      continue;
    }
    if (section === undefined) {
      problems.push(`${at}: "${token}" comes before any section marker: start the list with [both], [request] or [response]`);
      continue;
    }

    const family = token.endsWith("*");
    const name = family ? token.slice(0, -1) : token;
    if (name.includes("*")) {
      problems.push(`${at}: "${token}": '*' is only allowed once, at the end of a family (prefix*)`);
      continue;
    }
    if (name.includes("#")) {
      problems.push(`${at}: "${token}": '#' is reserved for comments in this file (put whitespace before a comment)`);
      continue;
    }
    if (name === "" || !TCHAR.test(name)) {
      const bad = [...name].find((c) => !TCHAR.test(c));
      problems.push(
        `${at}: "${token}" is not a valid header name` +
          (bad === undefined ? "" : `: ${JSON.stringify(bad)} is not an RFC 9110 token character`),
      );
      continue;
    }
    if (name !== name.toLowerCase()) {
      problems.push(`${at}: "${token}" must be lowercase: write "${token.toLowerCase()}"`);
      continue;
    }
    if (family && name.length < MIN_FAMILY_PREFIX) {
      problems.push(`${at}: family "${token}" is too broad: a prefix needs at least ${MIN_FAMILY_PREFIX} characters`);
      continue;
    }

    const entry: Entry = { name, family, section, line: lineNo, reason };
    for (const dir of directionsOf(section)) {
      const key = display(entry);
      const dup = seen[dir].get(key);
      if (dup !== undefined) {
        problems.push(`${at}: "${key}" is listed twice for the ${dir} direction (first at ${where(file, dup.line)})`);
        continue;
      }
      const guard = protectedHit(entry, dir);
      if (guard !== undefined) {
        problems.push(
          `${at}: "${key}" would strip ${guard[0]} from ${dir === "request" ? "requests" : "responses"}, which the system needs (${guard[1]})`,
        );
        continue;
      }
      seen[dir].set(key, entry);
      byDir[dir].push(entry);
    }
  }

  // Shadowing: a name or family already covered by a (different) family of the same direction.
  for (const dir of ["request", "response"] as const) {
    const families = byDir[dir].filter((e) => e.family);
    for (const e of byDir[dir]) {
      for (const f of families) {
        if (f === e || !e.name.startsWith(f.name)) continue;
        if (e.family && e.name === f.name) continue; // reported as a duplicate
        const [later, earlier] = e.line === 0 ? [f, e] : [e, f];
        const verb = later === e ? "is already covered by" : "covers";
        const other = later === e ? f : e;
        problems.push(
          `${where(file, later.line)}: "${display(later)}" ${verb} the family "${display(other)}" (${where(file, earlier.line)}) ` +
            `in the ${dir} direction` +
            (other.line === 0 ? ": every access-control-* is always stripped from responses" : ": remove one of them"),
        );
      }
    }
  }

  const inbound = byDir.request;
  const tokenCovered = inbound.some((e) => (e.family ? ORIGIN_TOKEN_HEADER.startsWith(e.name) : e.name === ORIGIN_TOKEN_HEADER));
  if (!tokenCovered) {
    problems.push(
      `${file}: the request direction must contain ${ORIGIN_TOKEN_HEADER} (the header the worker authenticates to the origin ` +
        `with), so that a client can never supply it: add "${ORIGIN_TOKEN_HEADER}" under [request] or [both]`,
    );
  }

  if (problems.length > 0) throw new ListError(problems);
  const finish = (entries: Entry[]): DirectionList => {
    const byName = (a: Entry, b: Entry) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    return {
      names: entries.filter((e) => !e.family).sort(byName),
      prefixes: entries.filter((e) => e.family).sort(byName),
    };
  };
  return { file, request: finish(byDir.request), response: finish(byDir.response) };
}

// ---------------------------------------------------------------------------------------------------------
// Code generation
//
// Shape of a generated lookup (fold "inline"):
//
//   export function isInternalRequestHeader(name: string): boolean {
//     switch (name.charCodeAt(0) | 32) {                 // first character: many misses end here
//       case 120: // x: 40 names, 31 families
//         families: {                                     // a small trie over the families' characters
//           switch (name.charCodeAt(2) | 32) {           // only the positions where families differ
//             case 98: // b x-b3-*
//               if (startsWithFold(name, "x-b3-")) return true;
//               break families;
//             ...
//           }
//           break families;
//         }
//         switch (name.length) {                         // then the exact names, by length
//           case 14: // x-origin-token x-request-id ...
//             switch (name.charCodeAt(3) | 32) {         // the position that best splits the group
//               case 114: // r
//                 return eqFold(name, "x-origin-token"); // one full comparison
//               ...
//             }
//             return false;
//         }
//         return false;
//     }
//     return false;
//   }
//
// `code | 32` maps A-Z onto a-z, so upper/mixed-case input takes the same path as lowercase. It also maps
// '^' onto '~' and '_' onto DEL: switches are admissive filters, and the final comparison decides.
// eqFold/startsWithFold try the exact (lowercase) comparison first and fold case only when it fails.
// A leaf that common header names can reach (see COMMON_NAMES) first tests one more character, the one
// that rejects most of them, so frequent misses do not reach the comparison.

export interface GenerateOptions {
  /**
   * "inline" (the default, what ships): case-insensitive as described above. "none": a lookup for
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

// Set by generateModule for the duration of one (synchronous) generation.
let FOLD = true;
let PREFILTER = false;
const fold = (c: number) => (FOLD ? c | 32 : c);
const charAt = (p: number) => (FOLD ? `name.charCodeAt(${p}) | 32` : `name.charCodeAt(${p})`);
const guardAt = (p: number) => (FOLD ? `(name.charCodeAt(${p}) | 32)` : `name.charCodeAt(${p})`);
const equals = (s: string) => (FOLD ? `eqFold(name, ${lit(s)})` : `name === ${lit(s)}`);
const startsWith = (s: string) => (FOLD ? `startsWithFold(name, ${lit(s)})` : `name.startsWith(${lit(s)})`);

function charComment(code: number): string {
  const c = String.fromCharCode(code);
  return code > 32 && code < 127 ? ` // ${c}` : "";
}

function lit(s: string): string {
  return JSON.stringify(s);
}

function groupBy(items: readonly string[], key: (s: string) => number): [number, string[]][] {
  const m = new Map<number, string[]>();
  for (const s of items) {
    const k = key(s);
    const b = m.get(k);
    if (b === undefined) m.set(k, [s]);
    else b.push(s);
  }
  return [...m].sort((x, y) => x[0] - y[0]);
}

function lexLess(a: readonly number[], b: readonly number[]): boolean {
  for (let i = 0; i < a.length; i++) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) < (b[i] ?? 0);
  }
  return false;
}

/** Common names that agree with `target` on every tested position (and its length, for an exact name). */
function reaching(target: string, tested: ReadonlySet<number>, sameLength: boolean): string[] {
  return COMMON_NAMES.filter(
    (c) =>
      (!sameLength || c.length === target.length) &&
      !(c.length === target.length && c === target) &&
      [...tested].every((p) => fold(c.charCodeAt(p)) === fold(target.charCodeAt(p))),
  );
}

/**
 * The one character a leaf tests before its comparison, if common names can reach it: the untested
 * position that rejects most of them (leftmost on ties).
 */
function bestGuard(target: string, tested: ReadonlySet<number>, sameLength: boolean): number | undefined {
  const reach = reaching(target, tested, sameLength);
  if (reach.length === 0) return undefined;
  let best: number | undefined;
  let bestPassing = Infinity;
  for (let p = 0; p < target.length; p++) {
    if (tested.has(p)) continue;
    const code = fold(target.charCodeAt(p));
    const passing = reach.filter((c) => fold(c.charCodeAt(p)) === code).length;
    if (passing < bestPassing) {
      best = p;
      bestPassing = passing;
    }
  }
  return best;
}

function guarded(target: string, g: number | undefined, test: string): string {
  return g === undefined ? test : `${guardAt(g)} === ${fold(target.charCodeAt(g))} && ${test}`;
}

/** The position that best splits same-length names: most groups, then smallest largest group, then fewest common names let through, then leftmost. */
function bestSplit(group: readonly string[], length: number, used: ReadonlySet<number>): [number, [number, string[]][]] | undefined {
  let best: [number, [number, string[]][]] | undefined;
  let bestKey: number[] = [];
  for (let p = 0; p < length; p++) {
    if (used.has(p)) continue;
    const buckets = groupBy(group, (s) => fold(s.charCodeAt(p)));
    if (buckets.length < 2) continue;
    const codes = new Set(buckets.map(([k]) => k));
    const through = COMMON_NAMES.filter((c) => c.length === length && codes.has(fold(c.charCodeAt(p)))).length;
    const key = [-buckets.length, Math.max(...buckets.map(([, b]) => b.length)), through, p];
    if (best === undefined || lexLess(key, bestKey)) {
      best = [p, buckets];
      bestKey = key;
    }
  }
  return best;
}

function emitExactGroup(group: readonly string[], length: number, used: ReadonlySet<number>, ind: string, out: string[]): void {
  if (group.length === 1) {
    const only = group[0] as string;
    out.push(`${ind}return ${guarded(only, bestGuard(only, used, true), equals(only))};`);
    return;
  }
  const split = bestSplit(group, length, used);
  if (split === undefined) {
    // Names equal under the admissive fold (they differ only in '^' and '~'): compare each in turn.
    out.push(`${ind}return ${group.map(equals).join(" || ")};`);
    return;
  }
  const [p, buckets] = split;
  const nextUsed = new Set(used).add(p);
  out.push(`${ind}switch (${charAt(p)}) {`);
  for (const [code, bucket] of buckets) {
    out.push(`${ind}  case ${code}:${charComment(code)}`);
    emitExactGroup(bucket, length, nextUsed, `${ind}    `, out);
  }
  out.push(`${ind}}`);
  out.push(`${ind}return false;`);
}

/** The exact names of one first-character group, by length; position 0 has been tested already. */
function emitExact(names: readonly string[], ind: string, out: string[]): void {
  if (names.length > 0) {
    out.push(`${ind}switch (name.length) {`);
    for (const [length, group] of groupBy(names, (n) => n.length)) {
      out.push(`${ind}  case ${length}: // ${group.join(" ")}`);
      emitExactGroup(group, length, new Set([0]), `${ind}    `, out);
    }
    out.push(`${ind}}`);
  }
  out.push(`${ind}return false;`);
}

function emitFamilyNode(prefixes: readonly string[], depth: number, tested: ReadonlySet<number>, ind: string, out: string[]): void {
  if (prefixes.length === 1) {
    const p = prefixes[0] as string;
    out.push(`${ind}if (${guarded(p, bestGuard(p, tested, false), startsWith(p))}) return true;`);
    out.push(`${ind}break families;`);
    return;
  }
  // The first position where the families differ. Positions they all share are not tested here: the final
  // startsWith verifies the whole prefix.
  let d = depth;
  while (!prefixes.some((p) => p.length <= d) && new Set(prefixes.map((p) => fold(p.charCodeAt(d)))).size === 1) d++;
  if (prefixes.some((p) => p.length <= d)) {
    // Only with families equal under the admissive fold up to here ('^' vs '~'): test each in turn.
    out.push(`${ind}if (${prefixes.map(startsWith).join(" || ")}) return true;`);
    out.push(`${ind}break families;`);
    return;
  }
  out.push(`${ind}switch (${charAt(d)}) {`);
  for (const [code, bucket] of groupBy(prefixes, (p) => fold(p.charCodeAt(d)))) {
    const c = String.fromCharCode(code);
    const shownChar = code > 32 && code < 127 ? `${c} ` : "";
    out.push(`${ind}  case ${code}: // ${shownChar}${bucket.map((p) => `${p}*`).join(" ")}`);
    emitFamilyNode(bucket, d + 1, new Set(tested).add(d), `${ind}    `, out);
  }
  out.push(`${ind}}`);
  out.push(`${ind}break families;`);
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

function emitLookup(fnName: string, dir: Direction, list: DirectionList, out: string[]): void {
  const names = list.names.map((e) => e.name);
  const prefixes = list.prefixes.map((e) => e.name);
  const firsts = [...new Set([...names, ...prefixes].map((n) => fold(n.charCodeAt(0))))].sort((a, b) => a - b);
  const table = `${dir.toUpperCase()}_FILTER`;
  const full = `${dir}Lookup`;
  if (PREFILTER) {
    const entries = filterEntries(list);
    out.push(`// ${entries.length} of the 1024 first/third-character pairs can start a ${dir} internal header.`);
    out.push(`const ${table} = filterTable([`);
    for (let i = 0; i < entries.length; i += 6) {
      out.push(`  ${entries.slice(i, i + 6).map(([k, m]) => `[${k}, 0x${m.toString(16)}]`).join(", ")},`);
    }
    out.push(`]);`, ``);
  }
  const doc = `/** True if \`name\` is an internal header in the ${dir} direction${FOLD ? " (ASCII case-insensitive)" : ""}. */`;
  if (PREFILTER) {
    out.push(doc, `export function ${fnName}(name: string): boolean {`);
    out.push(`  const n = name.length;`);
    out.push(`  const lengths = ${table}[((name.charCodeAt(0) & 31) << 5) | (name.charCodeAt(2) & 31)] as number;`);
    out.push(`  return ((lengths >>> (n < 31 ? n : 31)) & 1) === 1 && ${full}(name);`);
    out.push(`}`, ``, `function ${full}(name: string): boolean {`);
  } else {
    out.push(doc, `export function ${fnName}(name: string): boolean {`);
  }
  out.push(`  switch (${charAt(0)}) {`);
  for (const first of firsts) {
    const groupNames = names.filter((n) => fold(n.charCodeAt(0)) === first);
    const groupPrefixes = prefixes.filter((p) => fold(p.charCodeAt(0)) === first);
    const c = String.fromCharCode(first);
    const shownChar = first > 32 && first < 127 ? `${c}: ` : "";
    out.push(`    case ${first}: // ${shownChar}${groupNames.length} names, ${groupPrefixes.length} families`);
    if (groupPrefixes.length > 0) {
      out.push(`      families: {`);
      emitFamilyNode(groupPrefixes, 1, new Set([0]), "        ", out);
      out.push(`      }`);
    }
    emitExact(groupNames, "      ", out);
  }
  out.push(`  }`);
  out.push(`  return false;`);
  out.push(`}`);
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

function emitFoldHelpers(out: string[]): void {
  out.push(
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
  );
}

/** The generated module's text. `source` is the list's path as shown in the banner. */
export function generateModule(list: ParsedList, source: string, options: GenerateOptions = {}): string {
  FOLD = (options.fold ?? "inline") === "inline";
  PREFILTER = options.prefilter ?? false;
  try {
    return emitModule(list, source);
  } finally {
    FOLD = true;
    PREFILTER = false;
  }
}

function emitModule(list: ParsedList, source: string): string {
  const out: string[] = [];
  const count = (d: DirectionList) => `${d.names.length} names, ${d.prefixes.length} families`;
  out.push(
    `// generated by scripts/gen-internal-headers.ts from ${source} — do not edit.`,
    `// Edit the list and run \`npm run gen\`; CI runs \`npm run gen:check\` and fails if this file is stale.`,
    `//`,
    `// request:  ${count(list.request)}`,
    `// response: ${count(list.response)} (access-control-* built in)`,
    `//`,
    `// Each lookup switches on the first character (most misses end there), walks a small trie over the`,
    `// families starting with it and makes one startsWith, then switches on the length, on the character`,
    `// position that best splits each same-length group, and makes one full comparison.`,
  );
  if (PREFILTER) {
    out.push(
      `// Before all that, a 4 KB table indexed by the first and third characters says which lengths can match:`,
      `// most misses end there without a call (prefilter: benchmark alternative).`,
    );
  }
  if (FOLD) {
    out.push(
      `// Characters are tested as \`code | 32\` (A-Z folds onto a-z), so upper/mixed-case names take the same`,
      `// path; the comparisons try the exact lowercase form first and fold case only when it fails.`,
      ``,
    );
    emitFoldHelpers(out);
  } else {
    out.push(`// fold "none": this variant expects lowercase names (benchmark only).`, ``);
  }
  if (PREFILTER) {
    out.push(
      `function filterTable(entries: readonly (readonly [number, number])[]): Uint32Array {`,
      `  const table = new Uint32Array(1024);`,
      `  for (const [index, lengths] of entries) table[index] = lengths;`,
      `  return table;`,
      `}`,
      ``,
    );
  }
  emitLookup("isInternalRequestHeader", "request", list.request, out);
  out.push(``);
  emitLookup("isInternalResponseHeader", "response", list.response, out);
  out.push(
    ``,
    `/** Exact names stripped from client requests before they are forwarded to the origin. */`,
  );
  emitArray("INTERNAL_REQUEST_NAMES", list.request.names, out);
  out.push(``, `/** Families (prefixes, without the \`*\`) stripped from client requests. */`);
  emitArray("INTERNAL_REQUEST_PREFIXES", list.request.prefixes, out);
  out.push(``, `/** Exact names stripped from origin responses before they reach the client. */`);
  emitArray("INTERNAL_RESPONSE_NAMES", list.response.names, out);
  out.push(``, `/** Families (prefixes, without the \`*\`) stripped from origin responses, access-control-* included. */`);
  emitArray("INTERNAL_RESPONSE_PREFIXES", list.response.prefixes, out);
  out.push(``);
  return out.join("\n");
}

// ---------------------------------------------------------------------------------------------------------
// CLI

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const DEFAULT_LIST = resolve(REPO_ROOT, "src/edge/internal-headers.txt");
export const DEFAULT_OUT = resolve(REPO_ROOT, "src/edge/headers/internal-headers.generated.ts");

function shown(path: string): string {
  const rel = relative(REPO_ROOT, path);
  const inside = rel !== "" && !rel.startsWith("..") && !isAbsolute(rel);
  return (inside ? rel : path).split(sep).join("/");
}

/** Reads, validates and compiles `listPath`; returns the module text. Throws ListError. */
export function compileFile(listPath: string): string {
  const file = shown(listPath);
  return generateModule(parseList(readFileSync(listPath, "utf8"), file), file);
}

/** Runs the CLI; returns the exit code. */
export function main(argv: readonly string[]): number {
  let check = false;
  let listPath = DEFAULT_LIST;
  let outPath = DEFAULT_OUT;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--check") check = true;
    else if (a === "--list" && argv[i + 1] !== undefined) listPath = resolve(argv[++i] as string);
    else if (a === "--out" && argv[i + 1] !== undefined) outPath = resolve(argv[++i] as string);
    else if (a === "--help" || a === "-h") {
      console.log("usage: node scripts/gen-internal-headers.ts [--check] [--list FILE] [--out FILE]");
      return 0;
    } else {
      console.error(`gen-internal-headers: unknown argument ${JSON.stringify(a)} (usage: [--check] [--list FILE] [--out FILE])`);
      return 2;
    }
  }

  let text: string;
  try {
    text = compileFile(listPath);
  } catch (err) {
    if (err instanceof ListError) {
      console.error(`gen-internal-headers: ${shown(listPath)} is invalid:`);
      for (const p of err.problems) console.error(`  ${p}`);
      return 1;
    }
    throw err;
  }

  const current = existsSync(outPath) ? readFileSync(outPath, "utf8") : undefined;
  if (check) {
    if (current === text) return 0;
    console.error(
      `gen-internal-headers: ${shown(outPath)} is ${current === undefined ? "missing" : "stale"} ` +
        `(it does not match ${shown(listPath)}): run \`npm run gen\` and commit the result`,
    );
    return 1;
  }
  if (current !== text) {
    mkdirSync(dirname(outPath), { recursive: true });
    writeFileSync(outPath, text);
    console.log(`gen-internal-headers: wrote ${shown(outPath)}`);
  }
  return 0;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = main(process.argv.slice(2));
}
