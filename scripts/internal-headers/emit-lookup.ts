// The body of one generated lookup: the decision tree for one direction's names and families, written as
// TypeScript source lines. What it tests and in which order is decided here; the module around it (banner,
// helpers, prefilter, arrays) is emit-module.ts's.
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

/** How the generated code reads characters and compares: case-folding ("inline") or lowercase-only. */
export interface Dialect {
  readonly foldCase: boolean;
  /** The character code as the generated switch sees it. */
  fold(code: number): number;
  /** The switch expression for position `p`. */
  charAt(p: number): string;
  /** The same, as an operand of `===`. */
  guardAt(p: number): string;
  /** The full comparison with an exact name. */
  equals(name: string): string;
  /** The full comparison with a family's prefix. */
  startsWith(prefix: string): string;
}

export function dialect(foldCase: boolean): Dialect {
  return {
    foldCase,
    fold: (c) => (foldCase ? c | 32 : c),
    charAt: (p) => (foldCase ? `name.charCodeAt(${p}) | 32` : `name.charCodeAt(${p})`),
    guardAt: (p) => (foldCase ? `(name.charCodeAt(${p}) | 32)` : `name.charCodeAt(${p})`),
    equals: (s) => (foldCase ? `eqFold(name, ${lit(s)})` : `name === ${lit(s)}`),
    startsWith: (s) => (foldCase ? `startsWithFold(name, ${lit(s)})` : `name.startsWith(${lit(s)})`),
  };
}

export function lit(s: string): string {
  return JSON.stringify(s);
}

function charComment(code: number): string {
  const c = String.fromCharCode(code);
  return code > 32 && code < 127 ? ` // ${c}` : "";
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
function reaching(d: Dialect, target: string, tested: ReadonlySet<number>, sameLength: boolean): string[] {
  return COMMON_NAMES.filter(
    (c) =>
      (!sameLength || c.length === target.length) &&
      !(c.length === target.length && c === target) &&
      [...tested].every((p) => d.fold(c.charCodeAt(p)) === d.fold(target.charCodeAt(p))),
  );
}

/**
 * The one character a leaf tests before its comparison, if common names can reach it: the untested
 * position that rejects most of them (leftmost on ties).
 */
function bestGuard(d: Dialect, target: string, tested: ReadonlySet<number>, sameLength: boolean): number | undefined {
  const reach = reaching(d, target, tested, sameLength);
  if (reach.length === 0) return undefined;
  let best: number | undefined;
  let bestPassing = Infinity;
  for (let p = 0; p < target.length; p++) {
    if (tested.has(p)) continue;
    const code = d.fold(target.charCodeAt(p));
    const passing = reach.filter((c) => d.fold(c.charCodeAt(p)) === code).length;
    if (passing < bestPassing) {
      best = p;
      bestPassing = passing;
    }
  }
  return best;
}

function guarded(d: Dialect, target: string, g: number | undefined, test: string): string {
  return g === undefined ? test : `${d.guardAt(g)} === ${d.fold(target.charCodeAt(g))} && ${test}`;
}

/** The position that best splits same-length names: most groups, then smallest largest group, then fewest common names let through, then leftmost. */
function bestSplit(d: Dialect, group: readonly string[], length: number, used: ReadonlySet<number>): [number, [number, string[]][]] | undefined {
  let best: [number, [number, string[]][]] | undefined;
  let bestKey: number[] = [];
  for (let p = 0; p < length; p++) {
    if (used.has(p)) continue;
    const buckets = groupBy(group, (s) => d.fold(s.charCodeAt(p)));
    if (buckets.length < 2) continue;
    const codes = new Set(buckets.map(([k]) => k));
    const through = COMMON_NAMES.filter((c) => c.length === length && codes.has(d.fold(c.charCodeAt(p)))).length;
    const key = [-buckets.length, Math.max(...buckets.map(([, b]) => b.length)), through, p];
    if (best === undefined || lexLess(key, bestKey)) {
      best = [p, buckets];
      bestKey = key;
    }
  }
  return best;
}

function emitExactGroup(d: Dialect, group: readonly string[], length: number, used: ReadonlySet<number>, ind: string, out: string[]): void {
  if (group.length === 1) {
    const only = group[0] as string;
    out.push(`${ind}return ${guarded(d, only, bestGuard(d, only, used, true), d.equals(only))};`);
    return;
  }
  const split = bestSplit(d, group, length, used);
  if (split === undefined) {
    // Names equal under the admissive fold (they differ only in '^' and '~'): compare each in turn.
    out.push(`${ind}return ${group.map(d.equals).join(" || ")};`);
    return;
  }
  const [p, buckets] = split;
  const nextUsed = new Set(used).add(p);
  out.push(`${ind}switch (${d.charAt(p)}) {`);
  for (const [code, bucket] of buckets) {
    out.push(`${ind}  case ${code}:${charComment(code)}`);
    emitExactGroup(d, bucket, length, nextUsed, `${ind}    `, out);
  }
  out.push(`${ind}}`);
  out.push(`${ind}return false;`);
}

/** The exact names of one first-character group, by length; position 0 has been tested already. */
function emitExact(d: Dialect, names: readonly string[], ind: string, out: string[]): void {
  if (names.length > 0) {
    out.push(`${ind}switch (name.length) {`);
    for (const [length, group] of groupBy(names, (n) => n.length)) {
      out.push(`${ind}  case ${length}: // ${group.join(" ")}`);
      emitExactGroup(d, group, length, new Set([0]), `${ind}    `, out);
    }
    out.push(`${ind}}`);
  }
  out.push(`${ind}return false;`);
}

function emitFamilyNode(d: Dialect, prefixes: readonly string[], depth: number, tested: ReadonlySet<number>, ind: string, out: string[]): void {
  if (prefixes.length === 1) {
    const p = prefixes[0] as string;
    out.push(`${ind}if (${guarded(d, p, bestGuard(d, p, tested, false), d.startsWith(p))}) return true;`);
    out.push(`${ind}break families;`);
    return;
  }
  // The first position where the families differ. Positions they all share are not tested here: the final
  // startsWith verifies the whole prefix.
  let at = depth;
  while (!prefixes.some((p) => p.length <= at) && new Set(prefixes.map((p) => d.fold(p.charCodeAt(at)))).size === 1) at++;
  if (prefixes.some((p) => p.length <= at)) {
    // Only with families equal under the admissive fold up to here ('^' vs '~'): test each in turn.
    out.push(`${ind}if (${prefixes.map(d.startsWith).join(" || ")}) return true;`);
    out.push(`${ind}break families;`);
    return;
  }
  out.push(`${ind}switch (${d.charAt(at)}) {`);
  for (const [code, bucket] of groupBy(prefixes, (p) => d.fold(p.charCodeAt(at)))) {
    const c = String.fromCharCode(code);
    const shownChar = code > 32 && code < 127 ? `${c} ` : "";
    out.push(`${ind}  case ${code}: // ${shownChar}${bucket.map((p) => `${p}*`).join(" ")}`);
    emitFamilyNode(d, bucket, at + 1, new Set(tested).add(at), `${ind}    `, out);
  }
  out.push(`${ind}}`);
  out.push(`${ind}break families;`);
}

/** The switch on the first character and everything below it, for the lowercase `names` and `prefixes`. */
export function emitLookupBody(d: Dialect, names: readonly string[], prefixes: readonly string[], out: string[]): void {
  const firsts = [...new Set([...names, ...prefixes].map((n) => d.fold(n.charCodeAt(0))))].sort((a, b) => a - b);
  out.push(`  switch (${d.charAt(0)}) {`);
  for (const first of firsts) {
    const groupNames = names.filter((n) => d.fold(n.charCodeAt(0)) === first);
    const groupPrefixes = prefixes.filter((p) => d.fold(p.charCodeAt(0)) === first);
    const c = String.fromCharCode(first);
    const shownChar = first > 32 && first < 127 ? `${c}: ` : "";
    out.push(`    case ${first}: // ${shownChar}${groupNames.length} names, ${groupPrefixes.length} families`);
    if (groupPrefixes.length > 0) {
      out.push(`      families: {`);
      emitFamilyNode(d, groupPrefixes, 1, new Set([0]), "        ", out);
      out.push(`      }`);
    }
    emitExact(d, groupNames, "      ", out);
  }
  out.push(`  }`);
  out.push(`  return false;`);
}
