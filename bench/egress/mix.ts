// The traffic mix file: a small JSON document describing a browser-facing item API's traffic, turned into a
// deterministic list of events. Format and defaults: bench/egress/README.md; the default mix is
// bench/egress/mix.default.json. Every problem in a file is reported with the field's path, all at once.

import { readFileSync } from "node:fs";
import { permutation, prng, weighted, Zipf } from "../lib/random.ts";
import { itemBody, type EdgeRequest, type Traffic, type TrafficEvent } from "./traffic.ts";

export interface Mix {
  description: string;
  seed: number;
  requests: number;
  warmupRequests: number;
  concurrency: number;
  ratePerSecond: number;
  items: { count: number; zipfExponent: number };
  missingIds: { count: number; zipfExponent: number };
  clients: { count: number; revalidatingShare: number; revisitShare: number };
  shares: { preflight: number; missing: number; other: number };
  origins: Array<{ origin: string | null; weight: number }>;
  preflight: { requestMethod: string; requestHeaders: string };
  writes: { perThousandRequests: number };
  otherPaths: string[];
  worker: { vars: Record<string, string> };
}

export class InputError extends Error {
  readonly problems: readonly string[];
  constructor(source: string, problems: readonly string[]) {
    super(`${source}:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "InputError";
    this.problems = problems;
  }
}

/** Reads and validates a mix file; throws InputError naming the file and every bad field. */
export function loadMix(path: string): Mix {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new InputError(`mix ${path}`, [`cannot read the file: ${(error as Error).message}`]);
  }
  return parseMix(text, `mix ${path}`);
}

export function parseMix(text: string, source = "mix"): Mix {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    throw new InputError(source, [`not valid JSON: ${jsonErrorWhere(text, error as Error)}`]);
  }
  const problems: string[] = [];
  const mix = validate(doc, problems);
  if (problems.length > 0 || mix === undefined) throw new InputError(source, problems);
  return mix;
}

/** `line L, column C: message` for a JSON.parse error (Node 22 does not always give a position). */
function jsonErrorWhere(text: string, error: Error): string {
  const pos = jsonErrorOffset(text) ?? Number(/position (\d+)/.exec(error.message)?.[1] ?? NaN);
  const message = error.message.replace(/ in JSON at position \d+.*$/s, "").replace(/, ".*" is not valid JSON$/s, "");
  if (!Number.isFinite(pos)) return message;
  const before = text.slice(0, pos);
  const line = before.split("\n").length;
  const column = pos - before.lastIndexOf("\n");
  return `line ${line}, column ${column}: ${message}`;
}

/** Offset of the first syntax error in `text` (a small recursive-descent JSON checker), or undefined. */
export function jsonErrorOffset(text: string): number | undefined {
  let i = 0;
  const n = text.length;
  class At extends Error {}
  const fail = (): never => {
    throw new At();
  };
  const ws = () => {
    while (i < n && " \t\r\n".includes(text[i]!)) i++;
  };
  const literal = (word: string) => {
    if (text.startsWith(word, i)) i += word.length;
    else fail();
  };
  const string = () => {
    i++; // opening quote
    while (i < n && text[i] !== '"') {
      if (text.charCodeAt(i) < 0x20) fail();
      if (text[i] === "\\") {
        i++;
        if (text[i] === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) fail();
          i += 4;
        } else if (!'"\\/bfnrt'.includes(text[i] ?? "")) fail();
      }
      i++;
    }
    if (i >= n) fail();
    i++;
  };
  const number = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m || m[0] === "" || m[0] === "-") fail();
    i += m![0].length;
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      ws();
      if (text[i] === "}") {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail();
        string();
        ws();
        if (text[i] !== ":") fail();
        i++;
        value();
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") {
          i++;
          return;
        }
        fail();
      }
    } else if (c === "[") {
      i++;
      ws();
      if (text[i] === "]") {
        i++;
        return;
      }
      for (;;) {
        value();
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") {
          i++;
          return;
        }
        fail();
      }
    } else if (c === '"') string();
    else if (c === "t") literal("true");
    else if (c === "f") literal("false");
    else if (c === "n") literal("null");
    else number();
  };
  try {
    value();
    ws();
    if (i < n) fail();
    return undefined;
  } catch (error) {
    if (error instanceof At) return Math.min(i, n);
    throw error;
  }
}

type Obj = Record<string, unknown>;

const WORKER_VAR = /^[A-Z][A-Z0-9_]*$/;
const SET_BY_METER = new Set(["ORIGIN_URL", "ORIGIN_TOKEN"]);

function validate(doc: unknown, problems: string[]): Mix | undefined {
  if (!isObj(doc)) {
    problems.push("the top level must be a JSON object");
    return undefined;
  }
  const top = fields(doc, "", problems, [
    "description",
    "seed",
    "requests",
    "warmupRequests",
    "concurrency",
    "ratePerSecond",
    "items",
    "missingIds",
    "clients",
    "shares",
    "origins",
    "preflight",
    "writes",
    "otherPaths",
    "worker",
  ]);
  const description = str(top, "description", "", problems, "");
  const seed = int(top, "seed", "", problems, 0, 2 ** 32 - 1, 1);
  const requests = int(top, "requests", "", problems, 1, 10_000_000, 30_000);
  const warmupRequests = int(top, "warmupRequests", "", problems, 0, 10_000_000, 0);
  const concurrency = int(top, "concurrency", "", problems, 1, 1024, 16);
  const ratePerSecond = num(top, "ratePerSecond", "", problems, 0, 1_000_000, 250);

  const itemsObj = obj(top, "items", problems);
  const items = {
    count: int(fields(itemsObj, "items.", problems, ["count", "zipfExponent"]), "count", "items.", problems, 1, 5_000_000, 10_000),
    zipfExponent: num(itemsObj, "zipfExponent", "items.", problems, 0, 5, 0.99),
  };
  const missingObj = obj(top, "missingIds", problems);
  fields(missingObj, "missingIds.", problems, ["count", "zipfExponent"]);
  const missingIds = {
    count: int(missingObj, "count", "missingIds.", problems, 1, 5_000_000, 1000),
    zipfExponent: num(missingObj, "zipfExponent", "missingIds.", problems, 0, 5, 0.8),
  };
  const clientsObj = obj(top, "clients", problems);
  fields(clientsObj, "clients.", problems, ["count", "revalidatingShare", "revisitShare"]);
  const clients = {
    count: int(clientsObj, "count", "clients.", problems, 1, 10_000_000, 2000),
    revalidatingShare: num(clientsObj, "revalidatingShare", "clients.", problems, 0, 1, 0.5),
    revisitShare: num(clientsObj, "revisitShare", "clients.", problems, 0, 1, 0.3),
  };
  const sharesObj = obj(top, "shares", problems);
  fields(sharesObj, "shares.", problems, ["preflight", "missing", "other"]);
  const shares = {
    preflight: num(sharesObj, "preflight", "shares.", problems, 0, 1, 0.15),
    missing: num(sharesObj, "missing", "shares.", problems, 0, 1, 0.02),
    other: num(sharesObj, "other", "shares.", problems, 0, 1, 0.01),
  };
  if (shares.preflight + shares.missing + shares.other > 1) {
    problems.push(
      `shares: preflight + missing + other = ${Number((shares.preflight + shares.missing + shares.other).toFixed(6))} is more than 1 ` +
        "(item reads get the rest: keep the sum at most 1)",
    );
  }

  const origins: Mix["origins"] = [];
  const rawOrigins = top["origins"];
  if (rawOrigins === undefined) {
    origins.push({ origin: "https://app.example.com", weight: 1 });
  } else if (!Array.isArray(rawOrigins) || rawOrigins.length === 0) {
    problems.push('origins must be a non-empty array of { "origin": "https://…" or null, "weight": number }');
  } else {
    rawOrigins.forEach((entry: unknown, i) => {
      const where = `origins[${i}].`;
      if (!isObj(entry)) {
        problems.push(`origins[${i}] must be an object like { "origin": "https://app.example.com", "weight": 80 }`);
        return;
      }
      fields(entry, where, problems, ["origin", "weight"]);
      const origin = entry["origin"];
      if (origin !== null && (typeof origin !== "string" || !/^https?:\/\/[^/\s]+$/.test(origin))) {
        problems.push(`${where}origin must be a scheme://host[:port] origin with no path, or null (a client that sends no Origin)`);
      }
      const weight = num(entry, "weight", where, problems, 0, 1e9, 1);
      origins.push({ origin: typeof origin === "string" ? origin : null, weight });
    });
    if (origins.every((o) => o.weight === 0)) problems.push("origins: at least one weight must be above 0");
  }

  const preflightObj = obj(top, "preflight", problems);
  fields(preflightObj, "preflight.", problems, ["requestMethod", "requestHeaders"]);
  const preflight = {
    requestMethod: str(preflightObj, "requestMethod", "preflight.", problems, "GET"),
    requestHeaders: str(preflightObj, "requestHeaders", "preflight.", problems, ""),
  };
  if (!/^[A-Z]+$/.test(preflight.requestMethod)) problems.push("preflight.requestMethod must be an upper-case method such as GET");
  if (shares.preflight > 0 && origins.every((o) => o.origin === null || o.weight === 0)) {
    problems.push("shares.preflight is above 0 but no origin sends an Origin header: preflights come from browsers (add an origin)");
  }

  const writesObj = obj(top, "writes", problems);
  fields(writesObj, "writes.", problems, ["perThousandRequests"]);
  const writes = { perThousandRequests: num(writesObj, "perThousandRequests", "writes.", problems, 0, 1000, 2) };

  const otherPaths: string[] = [];
  const rawOther = top["otherPaths"];
  if (rawOther === undefined) {
    otherPaths.push("/", "/favicon.ico");
  } else if (!Array.isArray(rawOther) || rawOther.length === 0 || !rawOther.every((p) => typeof p === "string" && p.startsWith("/"))) {
    problems.push('otherPaths must be a non-empty array of paths starting with "/"');
  } else {
    otherPaths.push(...(rawOther as string[]));
  }

  const workerObj = obj(top, "worker", problems);
  fields(workerObj, "worker.", problems, ["vars"]);
  const vars: Record<string, string> = {};
  const rawVars = workerObj["vars"];
  if (rawVars !== undefined) {
    if (!isObj(rawVars)) {
      problems.push("worker.vars must be an object of NAME: \"string value\"");
    } else {
      for (const [name, value] of Object.entries(rawVars)) {
        if (name.startsWith("$")) continue;
        if (!WORKER_VAR.test(name)) problems.push(`worker.vars.${name}: var names are UPPER_SNAKE_CASE`);
        else if (SET_BY_METER.has(name)) problems.push(`worker.vars.${name}: the meter sets ${name} itself (the relay and a run token); remove it`);
        else if (typeof value !== "string") problems.push(`worker.vars.${name} must be a string (wrangler vars are strings): write "${String(value)}"`);
        else vars[name] = value;
      }
    }
  }

  return {
    description,
    seed,
    requests,
    warmupRequests,
    concurrency,
    ratePerSecond,
    items,
    missingIds,
    clients,
    shares,
    origins,
    preflight,
    writes,
    otherPaths,
    worker: { vars },
  };
}

function isObj(value: unknown): value is Obj {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Reports keys that are not in `known` (typos); keys starting with `$` are comments. */
function fields(o: Obj, where: string, problems: string[], known: string[]): Obj {
  for (const key of Object.keys(o)) {
    if (key.startsWith("$") || known.includes(key)) continue;
    const near = known.find((k) => k.toLowerCase() === key.toLowerCase());
    problems.push(`${where}${key} is not a known field${near ? ` (did you mean ${near}?)` : ""}; known: ${known.join(", ")}`);
  }
  return o;
}

function obj(parent: Obj, key: string, problems: string[]): Obj {
  const value = parent[key];
  if (value === undefined) return {};
  if (isObj(value)) return value;
  problems.push(`${key} must be an object`);
  return {};
}

function num(o: Obj, key: string, where: string, problems: string[], min: number, max: number, fallback: number): number {
  const value = o[key];
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value < min || value > max) {
    problems.push(`${where}${key} must be a number from ${min} to ${max}, got ${JSON.stringify(value)}`);
    return fallback;
  }
  return value;
}

function int(o: Obj, key: string, where: string, problems: string[], min: number, max: number, fallback: number): number {
  const value = o[key];
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    problems.push(`${where}${key} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
    return fallback;
  }
  return value;
}

function str(o: Obj, key: string, where: string, problems: string[], fallback: string): string {
  const value = o[key];
  if (value === undefined) return fallback;
  if (typeof value !== "string") {
    problems.push(`${where}${key} must be a string`);
    return fallback;
  }
  return value;
}

// ---------------------------------------------------------------------------------------------------

/** Items a client remembers for revisits. */
const HISTORY = 16;

export interface GenerateOverrides {
  requests?: number;
  warmupRequests?: number;
  concurrency?: number;
  ratePerSecond?: number;
  seed?: number;
}

/**
 * The events of a mix: `warmupRequests` edge requests flagged warm-up, then `requests` measured ones, with
 * writes interleaved at `writes.perThousandRequests`. Deterministic in (mix, seed).
 */
export function generateTraffic(mix: Mix, source: string, overrides: GenerateOverrides = {}): Traffic {
  const seed = overrides.seed ?? mix.seed;
  const requests = overrides.requests ?? mix.requests;
  const warmup = overrides.warmupRequests ?? mix.warmupRequests;
  const random = prng(seed);
  const itemZipf = new Zipf(mix.items.count, mix.items.zipfExponent);
  const itemOrder = permutation(mix.items.count, prng(seed ^ 0x5eed1));
  const missingZipf = new Zipf(mix.missingIds.count, mix.missingIds.zipfExponent);
  const originChoices = mix.origins.map((o) => ({ value: o.origin, weight: o.weight }));
  const browserChoices = originChoices.filter((o) => o.value !== null);

  // Each simulated client has one Origin (the page it runs on, or none) and either keeps an HTTP cache
  // (sends If-None-Match for what it has seen) or not.
  const clientOrigin: Array<string | null> = [];
  const clientRevalidates: boolean[] = [];
  const clientRandom = prng(seed ^ 0xc11e7);
  for (let c = 0; c < mix.clients.count; c++) {
    clientOrigin.push(weighted(originChoices, clientRandom()));
    clientRevalidates.push(clientRandom() < mix.clients.revalidatingShare);
  }
  const browserClients: number[] = [];
  for (let c = 0; c < mix.clients.count; c++) if (clientOrigin[c] !== null) browserClients.push(c);

  const itemId = (rank: number) => String(itemOrder[rank]! + 1);
  const versions = new Map<string, number>();
  const seen = new Set<string>();
  /** Each client's most recently read items (a revisit picks one of them). */
  const history = new Map<number, string[]>();
  const writeRate = mix.writes.perThousandRequests / 1000;
  const events: TrafficEvent[] = [];

  const originHeader = (c: number): Array<[string, string]> => {
    const origin = clientOrigin[c];
    return origin === null || origin === undefined ? [] : [["Origin", origin]];
  };

  for (let i = 0; i < warmup + requests; i++) {
    const isWarmup = i < warmup;
    // Writes arrive as a Poisson-like stream between requests.
    let w = writeRate;
    while (w > 0 && random() < Math.min(w, 1)) {
      const id = itemId(itemZipf.sample(random()));
      const version = (versions.get(id) ?? 0) + 1;
      versions.set(id, version);
      events.push({ kind: "write", method: "PUT", id, body: itemBody(id, version), warmup: isWarmup });
      w -= 1;
    }
    const u = random();
    let request: EdgeRequest;
    if (u < mix.shares.preflight) {
      const c = browserClients[Math.floor(random() * browserClients.length)] ?? 0;
      const id = itemId(itemZipf.sample(random()));
      const headers: Array<[string, string]> = [...originHeader(c), ["Access-Control-Request-Method", mix.preflight.requestMethod]];
      if (mix.preflight.requestHeaders !== "") headers.push(["Access-Control-Request-Headers", mix.preflight.requestHeaders]);
      request = { kind: "request", method: "OPTIONS", path: `/items/${id}`, id, class: "preflight", client: `c${c}`, ifNoneMatch: undefined, headers, warmup: isWarmup };
    } else if (u < mix.shares.preflight + mix.shares.missing) {
      const c = Math.floor(random() * mix.clients.count);
      const id = String(mix.items.count + 1 + missingZipf.sample(random()));
      request = { kind: "request", method: "GET", path: `/items/${id}`, id, class: "missing", client: `c${c}`, ifNoneMatch: undefined, headers: originHeader(c), warmup: isWarmup };
    } else if (u < mix.shares.preflight + mix.shares.missing + mix.shares.other) {
      const c = Math.floor(random() * mix.clients.count);
      const path = mix.otherPaths[Math.floor(random() * mix.otherPaths.length)]!;
      request = { kind: "request", method: "GET", path, id: undefined, class: "other", client: `c${c}`, ifNoneMatch: undefined, headers: originHeader(c), warmup: isWarmup };
    } else {
      const c = Math.floor(random() * mix.clients.count);
      let recent = history.get(c);
      if (recent === undefined) history.set(c, (recent = []));
      const revisit = recent.length > 0 && random() < mix.clients.revisitShare;
      const id = revisit ? recent[Math.floor(random() * recent.length)]! : itemId(itemZipf.sample(random()));
      if (!recent.includes(id)) {
        recent.push(id);
        if (recent.length > HISTORY) recent.shift();
      }
      const key = `${c}:${id}`;
      const revalidate = clientRevalidates[c]! && seen.has(key);
      seen.add(key);
      request = {
        kind: "request",
        method: "GET",
        path: `/items/${id}`,
        id,
        class: revalidate ? "revalidate" : "read",
        client: `c${c}`,
        ifNoneMatch: revalidate ? { prev: true } : undefined,
        headers: originHeader(c),
        warmup: isWarmup,
      };
    }
    events.push(request);
  }

  return {
    source,
    description: mix.description,
    items: { kind: "sample", count: mix.items.count },
    events,
    concurrency: overrides.concurrency ?? mix.concurrency,
    ratePerSecond: overrides.ratePerSecond ?? mix.ratePerSecond,
    workerVars: mix.worker.vars,
  };
}
