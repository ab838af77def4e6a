// The measured loops, shared by Node and the workerd bench worker. Each kernel runs `reps` passes over the
// data set and returns a checksum (so nothing is optimised away). Every kernel calls its implementation
// directly (no function passed as a parameter) so each call site stays monomorphic, as in the worker.

import {
  INTERNAL_REQUEST_NAMES,
  INTERNAL_REQUEST_PREFIXES,
  INTERNAL_RESPONSE_NAMES,
  INTERNAL_RESPONSE_PREFIXES,
  isInternalRequestHeader,
  isInternalResponseHeader,
  stripRequestHeaders,
  stripResponseHeaders,
} from "../../src/edge/headers/strip.ts";
import type { DataSet } from "./data.ts";

export type Lookup = (name: string) => boolean;

/** A generated lookup module (the same list, compiled with other generator options). */
export interface LookupModule {
  readonly isInternalRequestHeader: Lookup;
  readonly isInternalResponseHeader: Lookup;
}

/** The alternatives measured against the shipped lookup. */
export interface Alternatives {
  /** fold "none" (lowercase input only), for "lowercase, then retry on uppercase". */
  readonly lower: LookupModule;
  /** The shipped lookup with the first/third-character × length prefilter in front (generator option). */
  readonly withPrefilter: LookupModule;
}

interface Msg {
  readonly h: Headers;
  /** For each name in `h.keys()` order: internal? (the oracle floor's precomputed answers) */
  readonly drop: Uint8Array;
}

// --- implementations -------------------------------------------------------------------------------------

/** Naive: copy, then delete() every listed name; families need a walk of the copy anyway. */
export function naiveStrip(h: Headers, names: readonly string[], prefixes: readonly string[]): Headers {
  const out = new Headers(h);
  for (let i = 0; i < names.length; i++) out.delete(names[i] as string);
  let doomed: string[] | undefined;
  for (const name of out.keys()) {
    for (let i = 0; i < prefixes.length; i++) {
      if (name.startsWith(prefixes[i] as string)) {
        (doomed ??= []).push(name);
        break;
      }
    }
  }
  if (doomed !== undefined) for (const name of doomed) out.delete(name);
  return out;
}

/** Naive lookup: compare with every listed entry in turn. */
export function naiveLookup(name: string, names: readonly string[], prefixes: readonly string[]): boolean {
  for (let i = 0; i < names.length; i++) if (name === names[i]) return true;
  for (let i = 0; i < prefixes.length; i++) if (name.startsWith(prefixes[i] as string)) return true;
  return false;
}

/** Set lookup: one hash probe, then the families with startsWith. */
export function setLookup(name: string, set: ReadonlySet<string>, prefixes: readonly string[]): boolean {
  if (set.has(name)) return true;
  for (let i = 0; i < prefixes.length; i++) if (name.startsWith(prefixes[i] as string)) return true;
  return false;
}

/** Inverted + Set: the same walk and copy-on-write as the shipped strip, with the Set lookup. */
export function setStrip(h: Headers, set: ReadonlySet<string>, prefixes: readonly string[]): Headers {
  let out: Headers | undefined;
  for (const name of h.keys()) {
    if (setLookup(name, set, prefixes)) {
      if (out === undefined) out = new Headers(h);
      out.delete(name);
    }
  }
  return out ?? h;
}

/** Strip floor: the same walk and copy-on-write, with the answers precomputed (a free lookup). */
export function oracleStrip(m: Msg): Headers {
  let out: Headers | undefined;
  let i = 0;
  for (const name of m.h.keys()) {
    if (m.drop[i++] === 1) {
      if (out === undefined) out = new Headers(m.h);
      out.delete(name);
    }
  }
  return out ?? m.h;
}

/** Scan floor: walk the headers, look nothing up. */
export function scan(h: Headers): number {
  let n = 0;
  for (const name of h.keys()) n += name.length;
  return n;
}

export function hasUpper(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 65 && c <= 90) return true;
  }
  return false;
}

// --- state ----------------------------------------------------------------------------------------------

let reqMsgs: Msg[] = [];
let resMsgs: Msg[] = [];
let reqNames: string[] = [];
let resNames: string[] = [];
let reqMixed: string[] = [];
const REQ_SET: ReadonlySet<string> = new Set(INTERNAL_REQUEST_NAMES);
const RES_SET: ReadonlySet<string> = new Set(INTERNAL_RESPONSE_NAMES);
let lowerReq: Lookup = () => false;
let lowerRes: Lookup = () => false;
let prefReq: Lookup = () => false;
let prefRes: Lookup = () => false;

const retryReq = (n: string) => lowerReq(n) || (hasUpper(n) && lowerReq(n.toLowerCase()));
const retryRes = (n: string) => lowerRes(n) || (hasUpper(n) && lowerRes(n.toLowerCase()));

function titleCase(s: string): string {
  return s.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
}

/** The oracle's answers come from the plain Set + prefix rules, not from the compiled lookup under test. */
function toMsgs(specs: DataSet["requests"], isInternal: Lookup): Msg[] {
  return specs.map((s) => {
    const h = new Headers(s.pairs.map(([n, v]) => [n, v] as [string, string]));
    const keys = [...h.keys()];
    return { h, drop: Uint8Array.from(keys, (k) => (isInternal(k) ? 1 : 0)) };
  });
}

/** Builds the Headers objects (once) and installs the alternative lookups. */
export function setup(data: DataSet, alternatives: Alternatives): void {
  reqMsgs = toMsgs(data.requests, (n) => setLookup(n, REQ_SET, INTERNAL_REQUEST_PREFIXES));
  resMsgs = toMsgs(data.responses, (n) => setLookup(n, RES_SET, INTERNAL_RESPONSE_PREFIXES));
  reqNames = reqMsgs.flatMap((m) => [...m.h.keys()]);
  resNames = resMsgs.flatMap((m) => [...m.h.keys()]);
  reqMixed = reqNames.map(titleCase);
  lowerReq = alternatives.lower.isInternalRequestHeader;
  lowerRes = alternatives.lower.isInternalResponseHeader;
  prefReq = alternatives.withPrefilter.isInternalRequestHeader;
  prefRes = alternatives.withPrefilter.isInternalResponseHeader;
}

export function units(): { reqMessages: number; resMessages: number; reqNames: number; resNames: number } {
  return { reqMessages: reqMsgs.length, resMessages: resMsgs.length, reqNames: reqNames.length, resNames: resNames.length };
}

// --- kernels --------------------------------------------------------------------------------------------

function kept(out: Headers, h: Headers): number {
  return out === h ? 1 : 2;
}

export type KernelName = keyof typeof KERNELS;

export const KERNELS = {
  // per message, requests
  "strip.req.naive": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (const m of reqMsgs) x += kept(naiveStrip(m.h, INTERNAL_REQUEST_NAMES, INTERNAL_REQUEST_PREFIXES), m.h);
    return x;
  },
  "strip.req.set": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (const m of reqMsgs) x += kept(setStrip(m.h, REQ_SET, INTERNAL_REQUEST_PREFIXES), m.h);
    return x;
  },
  "strip.req.compiled": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (const m of reqMsgs) x += kept(stripRequestHeaders(m.h), m.h);
    return x;
  },
  "strip.req.oracle": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (const m of reqMsgs) x += kept(oracleStrip(m), m.h);
    return x;
  },
  "strip.req.scan": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (const m of reqMsgs) x += scan(m.h);
    return x;
  },
  "decide.req.set": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (const m of reqMsgs) for (const n of m.h.keys()) if (setLookup(n, REQ_SET, INTERNAL_REQUEST_PREFIXES)) x++;
    return x;
  },
  "decide.req.compiled": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (const m of reqMsgs) for (const n of m.h.keys()) if (isInternalRequestHeader(n)) x++;
    return x;
  },
  "decide.req.prefilter": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (const m of reqMsgs) for (const n of m.h.keys()) if (prefReq(n)) x++;
    return x;
  },
  // per message, responses
  "strip.res.naive": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (const m of resMsgs) x += kept(naiveStrip(m.h, INTERNAL_RESPONSE_NAMES, INTERNAL_RESPONSE_PREFIXES), m.h);
    return x;
  },
  "strip.res.set": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (const m of resMsgs) x += kept(setStrip(m.h, RES_SET, INTERNAL_RESPONSE_PREFIXES), m.h);
    return x;
  },
  "strip.res.compiled": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (const m of resMsgs) x += kept(stripResponseHeaders(m.h), m.h);
    return x;
  },
  "strip.res.oracle": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (const m of resMsgs) x += kept(oracleStrip(m), m.h);
    return x;
  },
  "strip.res.scan": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (const m of resMsgs) x += scan(m.h);
    return x;
  },
  "decide.res.set": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (const m of resMsgs) for (const n of m.h.keys()) if (setLookup(n, RES_SET, INTERNAL_RESPONSE_PREFIXES)) x++;
    return x;
  },
  "decide.res.compiled": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (const m of resMsgs) for (const n of m.h.keys()) if (isInternalResponseHeader(n)) x++;
    return x;
  },
  "decide.res.prefilter": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (const m of resMsgs) for (const n of m.h.keys()) if (prefRes(n)) x++;
    return x;
  },
  // per lookup, names as they arrive (lowercase)
  "lookup.req.naive": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (let i = 0; i < reqNames.length; i++) if (naiveLookup(reqNames[i] as string, INTERNAL_REQUEST_NAMES, INTERNAL_REQUEST_PREFIXES)) x++;
    return x;
  },
  "lookup.req.set": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (let i = 0; i < reqNames.length; i++) if (setLookup(reqNames[i] as string, REQ_SET, INTERNAL_REQUEST_PREFIXES)) x++;
    return x;
  },
  "lookup.req.compiled": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (let i = 0; i < reqNames.length; i++) if (isInternalRequestHeader(reqNames[i] as string)) x++;
    return x;
  },
  "lookup.req.prefilter": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (let i = 0; i < reqNames.length; i++) if (prefReq(reqNames[i] as string)) x++;
    return x;
  },
  "lookup.req.retry": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (let i = 0; i < reqNames.length; i++) if (retryReq(reqNames[i] as string)) x++;
    return x;
  },
  "lookup.req.noop": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (let i = 0; i < reqNames.length; i++) x += (reqNames[i] as string).length & 1;
    return x;
  },
  "lookup.res.naive": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (let i = 0; i < resNames.length; i++) if (naiveLookup(resNames[i] as string, INTERNAL_RESPONSE_NAMES, INTERNAL_RESPONSE_PREFIXES)) x++;
    return x;
  },
  "lookup.res.set": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (let i = 0; i < resNames.length; i++) if (setLookup(resNames[i] as string, RES_SET, INTERNAL_RESPONSE_PREFIXES)) x++;
    return x;
  },
  "lookup.res.compiled": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (let i = 0; i < resNames.length; i++) if (isInternalResponseHeader(resNames[i] as string)) x++;
    return x;
  },
  "lookup.res.prefilter": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (let i = 0; i < resNames.length; i++) if (prefRes(resNames[i] as string)) x++;
    return x;
  },
  "lookup.res.retry": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (let i = 0; i < resNames.length; i++) if (retryRes(resNames[i] as string)) x++;
    return x;
  },
  "lookup.res.noop": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (let i = 0; i < resNames.length; i++) x += (resNames[i] as string).length & 1;
    return x;
  },
  // per lookup, Title-Case names (hand-built names; never from the Headers iterator)
  "mixed.req.set": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (let i = 0; i < reqMixed.length; i++) if (setLookup((reqMixed[i] as string).toLowerCase(), REQ_SET, INTERNAL_REQUEST_PREFIXES)) x++;
    return x;
  },
  "mixed.req.compiled": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (let i = 0; i < reqMixed.length; i++) if (isInternalRequestHeader(reqMixed[i] as string)) x++;
    return x;
  },
  "mixed.req.retry": (reps: number) => {
    let x = 0;
    for (let r = 0; r < reps; r++) for (let i = 0; i < reqMixed.length; i++) if (retryReq(reqMixed[i] as string)) x++;
    return x;
  },
} satisfies Record<string, (reps: number) => number>;

/** Work units one rep of a kernel performs (messages or names), for per-unit figures. */
export function unitsPerRep(kernel: KernelName): number {
  const u = units();
  const [kind, dir] = kernel.split(".") as [string, string];
  if (kind === "strip" || kind === "decide") return dir === "req" ? u.reqMessages : u.resMessages;
  return dir === "req" ? u.reqNames : u.resNames;
}

/** Cross-check: every strip variant must produce the same headers on every message. */
export function verify(): string[] {
  const problems: string[] = [];
  const dump = (h: Headers) => JSON.stringify([...h]);
  const check = (label: string, msgs: Msg[], lookup: Lookup, names: readonly string[], prefixes: readonly string[], set: ReadonlySet<string>, strip: (h: Headers) => Headers, retry: Lookup, plain: Lookup) => {
    for (const m of msgs) {
      const want = dump(oracleStrip(m));
      if (dump(strip(m.h)) !== want) problems.push(`${label} compiled`);
      if (dump(setStrip(m.h, set, prefixes)) !== want) problems.push(`${label} set`);
      if (dump(naiveStrip(m.h, names, prefixes)) !== want) problems.push(`${label} naive`);
      for (const n of m.h.keys()) {
        if (retry(n) !== lookup(n) || retry(titleCase(n)) !== lookup(n) || lookup(titleCase(n)) !== lookup(n)) {
          problems.push(`${label} retry/compiled disagree on ${n}`);
        }
        if (plain(n) !== lookup(n) || plain(titleCase(n)) !== lookup(n)) problems.push(`${label} the prefilter changes the answer for ${n}`);
      }
    }
  };
  check("request", reqMsgs, isInternalRequestHeader, INTERNAL_REQUEST_NAMES, INTERNAL_REQUEST_PREFIXES, REQ_SET, stripRequestHeaders, retryReq, prefReq);
  check("response", resMsgs, isInternalResponseHeader, INTERNAL_RESPONSE_NAMES, INTERNAL_RESPONSE_PREFIXES, RES_SET, stripResponseHeaders, retryRes, prefRes);
  return [...new Set(problems)];
}
