// `--log FILE`: replay your own traffic instead of a generated mix. One request per line, either
//
//   METHOD PATH [key=value ...]                      e.g.  GET /items/42 origin=https://app.example.com inm=prev
//   {"method": "GET", "path": "/items/42", ...}      the same keys as JSON (one object per line)
//
// Keys (all optional):
//   origin=URL|-        the Origin header (browser clients); `-` or absent: none
//   client=NAME         who sent it: `inm=prev` uses the ETag this client received earlier for this path
//   inm=prev|ETAGS      If-None-Match: `prev` = the ETag this client got earlier (none yet: sent without);
//                       anything else is sent literally (`"v1"`, `W/"v1"`, `*`)
//   acrm=METHOD         Access-Control-Request-Method of an OPTIONS preflight (default GET when origin is set)
//   acrh=a,b            Access-Control-Request-Headers of a preflight
//   status=404          this id does not exist (it is not created before the replay)
//   size=BYTES          body size of this item (first mention wins; default: a 70-120 byte sample item)
// `PUT /items/ID [size=N]` and `DELETE /items/ID` are internal writes, sent straight to the origin.
// Blank lines and lines starting with `#` are skipped. Every problem is reported with its line number.

import { readFileSync } from "node:fs";
import { InputError } from "./input-error.ts";
import { itemBody, itemIdOf, type EdgeRequest, type RequestClass, type Traffic, type TrafficEvent } from "./traffic.ts";

const KEYS = ["method", "path", "origin", "client", "inm", "acrm", "acrh", "status", "size"] as const;
type Key = (typeof KEYS)[number];
type Line = Partial<Record<Key, string>> & { method: string; path: string; line: number };

const MAX_PROBLEMS = 20;

export interface LogOptions {
  warmupRequests: number;
  concurrency: number;
  ratePerSecond: number;
  workerVars: Record<string, string>;
}

export function loadAccessLog(path: string, options: LogOptions): Traffic {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new InputError(`log ${path}`, [`cannot read the file: ${(error as Error).message}`]);
  }
  return parseAccessLog(text, `log ${path}`, options);
}

export function parseAccessLog(text: string, source: string, options: LogOptions): Traffic {
  const problems: string[] = [];
  const lines: Line[] = [];
  const raw = text.split(/\r?\n/);
  for (let i = 0; i < raw.length && problems.length < MAX_PROBLEMS; i++) {
    const content = raw[i]!.trim();
    if (content === "" || content.startsWith("#")) continue;
    const parsed = content.startsWith("{") ? parseJsonLine(content, i + 1, problems) : parseTextLine(content, i + 1, problems);
    if (parsed !== undefined) lines.push(parsed);
  }
  if (problems.length === 0 && lines.length === 0) problems.push("no requests in the file (only blank lines or comments)");
  if (problems.length >= MAX_PROBLEMS) problems.push(`(stopped after ${MAX_PROBLEMS} problems)`);
  if (problems.length > 0) throw new InputError(source, problems);

  // Items that exist before the replay: every id a read mentions, unless marked status=404.
  const sizes = new Map<string, number | undefined>();
  const missing = new Set<string>();
  for (const l of lines) {
    const id = itemIdOf(l.path);
    if (id === undefined) continue;
    if (l.size !== undefined && !sizes.has(id)) sizes.set(id, Number(l.size));
    if (l.method === "PUT" || l.method === "DELETE") continue;
    if (l.status === "404") missing.add(id);
    else if (!sizes.has(id)) sizes.set(id, undefined);
  }
  const bodies = new Map<string, string>();
  for (const [id, size] of sizes) if (!missing.has(id) || size !== undefined) bodies.set(id, itemBody(id, 0, size));

  const events: TrafficEvent[] = [];
  const versions = new Map<string, number>();
  let requestIndex = 0;
  for (const l of lines) {
    const id = itemIdOf(l.path);
    const warmup = requestIndex < options.warmupRequests;
    if ((l.method === "PUT" || l.method === "DELETE") && id !== undefined) {
      const version = (versions.get(id) ?? 0) + 1;
      versions.set(id, version);
      const size = sizes.get(id);
      events.push({ kind: "write", method: l.method, id, body: l.method === "PUT" ? itemBody(id, version, size) : undefined, warmup });
      continue;
    }
    requestIndex++;
    const headers: Array<[string, string]> = [];
    if (l.origin !== undefined && l.origin !== "-") headers.push(["Origin", l.origin]);
    let cls: RequestClass;
    const isItemRead = id !== undefined && (l.method === "GET" || l.method === "HEAD");
    const acrm = l.acrm ?? (l.origin !== undefined && l.origin !== "-" ? "GET" : undefined);
    if (l.method === "OPTIONS" && headers.length > 0 && acrm !== undefined) {
      cls = "preflight";
      headers.push(["Access-Control-Request-Method", acrm]);
      if (l.acrh !== undefined) headers.push(["Access-Control-Request-Headers", l.acrh]);
    } else if (!isItemRead) {
      cls = "other";
    } else if (l.status === "404" || !bodies.has(id)) {
      cls = "missing";
    } else {
      cls = l.inm !== undefined ? "revalidate" : "read";
    }
    const request: EdgeRequest = {
      kind: "request",
      method: l.method,
      path: l.path,
      id,
      class: cls,
      client: l.client ?? "-",
      ifNoneMatch: l.inm === undefined ? undefined : l.inm === "prev" ? { prev: true } : { value: l.inm },
      headers,
      warmup,
    };
    events.push(request);
  }

  return {
    source,
    description: `${requestIndex} requests from an access log`,
    items: { kind: "explicit", bodies },
    events,
    concurrency: options.concurrency,
    ratePerSecond: options.ratePerSecond,
    workerVars: options.workerVars,
  };
}

function parseTextLine(content: string, line: number, problems: string[]): Line | undefined {
  const tokens = content.split(/\s+/);
  const [method, path, ...rest] = tokens;
  const fields: Partial<Record<Key, string>> = { method, path };
  for (const token of rest) {
    const eq = token.indexOf("=");
    if (eq <= 0) {
      problems.push(`line ${line}: "${token}" is not key=value (keys: ${KEYS.slice(2).join(", ")})`);
      return undefined;
    }
    const key = token.slice(0, eq);
    if (!(KEYS as readonly string[]).includes(key) || key === "method" || key === "path") {
      problems.push(`line ${line}: unknown key "${key}" (keys: ${KEYS.slice(2).join(", ")})`);
      return undefined;
    }
    fields[key as Key] = token.slice(eq + 1);
  }
  return check(fields, line, problems);
}

function parseJsonLine(content: string, line: number, problems: string[]): Line | undefined {
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch (error) {
    problems.push(`line ${line}: not valid JSON (${(error as Error).message})`);
    return undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    problems.push(`line ${line}: a JSON line must be an object like {"method":"GET","path":"/items/1"}`);
    return undefined;
  }
  const fields: Partial<Record<Key, string>> = {};
  for (const [key, v] of Object.entries(value)) {
    if (!(KEYS as readonly string[]).includes(key)) {
      problems.push(`line ${line}: unknown key "${key}" (keys: ${KEYS.join(", ")})`);
      return undefined;
    }
    if (v === null) continue;
    if (typeof v !== "string" && typeof v !== "number") {
      problems.push(`line ${line}: "${key}" must be a string or a number`);
      return undefined;
    }
    fields[key as Key] = String(v);
  }
  return check(fields, line, problems);
}

function check(fields: Partial<Record<Key, string>>, line: number, problems: string[]): Line | undefined {
  const { method, path } = fields;
  const before = problems.length;
  if (method === undefined || !/^[A-Z]{3,10}$/.test(method)) {
    problems.push(`line ${line}: method ${JSON.stringify(method ?? "")} must be an upper-case HTTP method (GET, OPTIONS, PUT, ...)`);
  }
  if (path === undefined || !/^\/[\x21-\x7e]*$/.test(path)) {
    problems.push(`line ${line}: path ${JSON.stringify(path ?? "")} must start with "/" and contain no spaces`);
  }
  if (fields.origin !== undefined && fields.origin !== "-" && !/^https?:\/\/[^/\s]+$/.test(fields.origin)) {
    problems.push(`line ${line}: origin "${fields.origin}" must be scheme://host[:port] with no path, or -`);
  }
  if (fields.inm !== undefined && fields.inm !== "prev" && !/^(\*|(W\/)?"[\x21\x23-\x7e]*"(\s*,\s*(W\/)?"[\x21\x23-\x7e]*")*)$/.test(fields.inm)) {
    problems.push(`line ${line}: inm ${fields.inm} must be prev, * or entity-tags such as "v1" or W/"v1"`);
  }
  if (fields.acrm !== undefined && !/^[A-Z]+$/.test(fields.acrm)) problems.push(`line ${line}: acrm "${fields.acrm}" must be an upper-case method`);
  if (fields.acrm !== undefined && method !== "OPTIONS") problems.push(`line ${line}: acrm only makes sense on an OPTIONS line`);
  if (fields.acrh !== undefined && !/^[A-Za-z0-9!#$%&'*+.^_`|~-]+(,[A-Za-z0-9!#$%&'*+.^_`|~-]+)*$/.test(fields.acrh)) {
    problems.push(`line ${line}: acrh "${fields.acrh}" must be header names separated by commas, no spaces`);
  }
  if (fields.status !== undefined && !/^[1-5]\d\d$/.test(fields.status)) problems.push(`line ${line}: status "${fields.status}" must be a 3-digit status`);
  if (fields.size !== undefined && !/^\d{1,7}$/.test(fields.size)) problems.push(`line ${line}: size "${fields.size}" must be a byte count up to 9999999`);
  if ((method === "PUT" || method === "DELETE") && path !== undefined && itemIdOf(path) === undefined) {
    problems.push(`line ${line}: ${method} is a write and must target /items/ID (ID: 1-128 of A-Z a-z 0-9 _ -)`);
  }
  if (problems.length > before) return undefined;
  return { ...fields, method: method!, path: path!, line };
}
