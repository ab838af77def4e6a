// The two requests of the per-request CPU benchmark (bench/worker-cpu.ts), as a browser sends them through
// Cloudflare to the worker:
//   GET /items/1   an API call from the allowed web app: one message of the stripping benchmark's data set
//                  (bench/strip/data.ts, seeded), chosen for being typical: 18-26 headers, 2-5 of them internal
//   OPTIONS        the preflight of the byte budget's first case (scripts/lib/cors-budget-cases.ts: PUT with
//                  two requested headers from https://app.example.com) with the headers a browser sends along
import { BUDGET_CASES } from "../../scripts/lib/cors-budget-cases.ts";
import {
  INTERNAL_REQUEST_NAMES,
  INTERNAL_REQUEST_PREFIXES,
  INTERNAL_RESPONSE_NAMES,
  INTERNAL_RESPONSE_PREFIXES,
  isInternalRequestHeader,
} from "../../src/edge/headers/strip.ts";
import { makeDataSet } from "../strip/data.ts";

export const ALLOWED_ORIGIN = "https://app.example.com";

export interface BenchRequest {
  readonly method: "GET" | "OPTIONS";
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Names in the headers that are on the inbound internal list. */
  readonly internal: readonly string[];
}

function withInternal(method: BenchRequest["method"], path: string, pairs: readonly (readonly [string, string])[]): BenchRequest {
  const headers: Record<string, string> = {};
  for (const [name, value] of pairs) headers[name] = value;
  return { method, path, headers, internal: Object.keys(headers).filter(isInternalRequestHeader) };
}

/** The GET: the first API call in the data set from the allowed origin with 18-26 headers, 2-5 internal. */
export function itemGet(path = "/items/1"): BenchRequest {
  const { requests } = makeDataSet({
    requestNames: INTERNAL_REQUEST_NAMES,
    requestPrefixes: INTERNAL_REQUEST_PREFIXES,
    responseNames: INTERNAL_RESPONSE_NAMES,
    responsePrefixes: INTERNAL_RESPONSE_PREFIXES,
  });
  for (const m of requests) {
    if (m.kind !== "api") continue;
    const names = m.pairs.map(([n]) => n);
    const internal = names.filter(isInternalRequestHeader).length;
    const fromApp = m.pairs.some(([n, v]) => n === "origin" && v === ALLOWED_ORIGIN);
    // Node sets Content-Length itself; a GET carries none
    if (fromApp && names.length >= 18 && names.length <= 26 && internal >= 2 && internal <= 5 && !names.includes("content-length")) {
      return withInternal("GET", path, m.pairs);
    }
  }
  throw new Error("bench/worker-cpu/requests.ts: no typical API call in the data set (bench/strip/data.ts changed?)");
}

/** The allowed preflight of the byte budget, with what Chrome and Cloudflare put around it. */
export function preflight(path = "/items/1"): BenchRequest {
  const budget = BUDGET_CASES[0];
  if (budget === undefined || budget.method !== "OPTIONS") throw new Error("BUDGET_CASES[0] is no longer the allowed preflight");
  return withInternal("OPTIONS", path, [
    ["host", "api.example.com"],
    ["accept", "*/*"],
    ...Object.entries(budget.headers),
    ["origin", ALLOWED_ORIGIN],
    ["user-agent", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"],
    ["sec-fetch-mode", "cors"],
    ["sec-fetch-site", "same-site"],
    ["sec-fetch-dest", "empty"],
    ["referer", `${ALLOWED_ORIGIN}/items`],
    ["accept-encoding", "gzip, deflate, br, zstd"],
    ["accept-language", "en-GB,en;q=0.9"],
    ["priority", "u=1, i"],
    ["cf-connecting-ip", "198.51.100.7"],
    ["cf-ipcountry", "DE"],
    ["cf-ray", "8f2c1a9b3d4e5f60-FRA"],
    ["cf-visitor", '{"scheme":"https"}'],
    ["x-forwarded-for", "198.51.100.7"],
    ["x-forwarded-proto", "https"],
    ["cdn-loop", "cloudflare"],
  ]);
}
