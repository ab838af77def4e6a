import { isHttpToken, withoutOws } from "../../shared/http-token.ts";
import type { CorsPolicy } from "./cors-policy.ts";

/** Read access to request headers; a `Headers` fits, and so does any plain lookup in tests and benchmarks. */
export interface HeaderSource {
  get(name: string): string | null;
}

export type PreflightAnswer =
  // A plain object, not pairs: workerd builds a Response's headers from an object several µs faster.
  | { readonly allowed: true; readonly headers: Readonly<Record<string, string>> }
  | { readonly allowed: false; readonly reason: string };

// https://fetch.spec.whatwg.org/#cors-safelisted-method: byte-exact, so `get` is not safelisted.
const SAFELISTED_METHODS = new Set(["GET", "HEAD", "POST"]);

/** What identifies a preflight: the Origin it comes from and the method it asks for. */
export interface Preflight {
  readonly origin: string;
  readonly method: string;
}

/**
 * A CORS preflight is exactly OPTIONS + Origin + Access-Control-Request-Method
 * (https://fetch.spec.whatwg.org/#cors-preflight-request); any other OPTIONS is an ordinary request. Returns
 * the two values (read once, and handed to answerPreflight) or undefined.
 */
export function readPreflight(method: string, headers: HeaderSource): Preflight | undefined {
  if (method !== "OPTIONS") return undefined;
  const origin = headers.get("origin");
  if (origin === null) return undefined;
  const requested = headers.get("access-control-request-method");
  return requested === null ? undefined : { origin, method: requested };
}

/**
 * Answers a preflight from the policy and the request's headers alone (a pure function of both). Allowed:
 * only the headers this browser needs to proceed. Refused: a reason for logs and tests; the response then
 * carries no CORS header at all, so nothing about the policy leaks.
 */
export function answerPreflight(
  policy: CorsPolicy,
  request: HeaderSource,
  { origin, method }: Preflight = readPreflight("OPTIONS", request) ?? { origin: "", method: "" },
): PreflightAnswer {
  if (policy.off || !policy.allowsOrigin(origin)) return { allowed: false, reason: `origin ${origin} is not allowed` };

  if (!isHttpToken(method)) return { allowed: false, reason: "the requested method is not a token" };
  // A safelisted method needs no permission in Fetch: refusing it would only break requests that carry a
  // custom header, while the same request without one succeeds.
  if (!SAFELISTED_METHODS.has(method) && !policy.anyMethod && !policy.methods.has(method)) {
    return { allowed: false, reason: `method ${method} is not allowed` };
  }

  const allowHeaders = allowedRequestHeaders(policy, request.get("access-control-request-headers"));
  if (allowHeaders === undefined) return { allowed: false, reason: "a requested header is not allowed" };

  const wantsPrivateNetwork = request.get("access-control-request-private-network") === "true";
  if (wantsPrivateNetwork && !policy.privateNetwork) {
    return { allowed: false, reason: "private network access is not allowed" };
  }

  const headers: Record<string, string> = { "Access-Control-Allow-Origin": policy.anyOrigin ? "*" : origin };
  if (policy.credentials) headers["Access-Control-Allow-Credentials"] = "true";
  if (!SAFELISTED_METHODS.has(method)) headers["Access-Control-Allow-Methods"] = method;
  if (allowHeaders !== "") headers["Access-Control-Allow-Headers"] = allowHeaders;
  if (policy.maxAge !== "") headers["Access-Control-Max-Age"] = policy.maxAge;
  if (wantsPrivateNetwork) headers["Access-Control-Allow-Private-Network"] = "true";
  return { allowed: true, headers };
}

/**
 * The `Access-Control-Allow-Headers` value for the requested names: "" when none were requested, undefined
 * when any is refused. One pass over the list, each name one Set lookup, so a hostile 64 KB list costs
 * linear time. Under a `*` policy a lone `*` (one byte) covers every name except `authorization`. Empty
 * members are skipped (RFC 9110 §5.6.1.2), and only spaces and tabs are whitespace around a name (OWS).
 */
function allowedRequestHeaders(policy: CorsPolicy, requested: string | null): string | undefined {
  if (requested === null) return "";
  const names = new Set<string>();
  for (const item of requested.split(",")) {
    const name = withoutOws(item).toLowerCase();
    if (name === "") continue;
    if (!isHttpToken(name)) return undefined;
    if (!policy.headers.has(name) && !(policy.anyHeader && name !== "authorization")) return undefined;
    names.add(name);
  }
  if (names.size === 0) return "";
  if (policy.anyHeader && !names.has("authorization")) return "*";
  return [...names].join(",");
}
