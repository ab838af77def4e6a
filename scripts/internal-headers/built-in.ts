// What the list cannot change: the entries every list gets (the origin token inbound, the origin's CORS
// outbound) and the names the system needs in each direction, which no list entry may strip.
import { ORIGIN_TOKEN_HEADER } from "../../src/shared/origin-token.ts";
import type { Direction } from "./list-file.ts";
import type { Entry } from "./model.ts";

/**
 * Always stripped, whatever the list says. The list may name one of these again only where it adds
 * nothing new: naming x-origin-token is fine (lists used to have to); naming access-control-* is an error.
 */
export const BUILT_IN: Readonly<Record<Direction, readonly Entry[]>> = {
  request: [
    {
      name: ORIGIN_TOKEN_HEADER,
      family: false,
      section: "request",
      line: 0,
      reason: "built in: the worker's credential to the origin; a client must never be able to supply it",
    },
  ],
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

/** Built-in entries the list may also name (or cover with a family): the listed entry then stands for it. */
export const MAY_BE_LISTED: ReadonlySet<string> = new Set([ORIGIN_TOKEN_HEADER]);

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

/** The protected name or family that `entry` would strip in `dir`, if any. */
export function protectedHit(entry: Entry, dir: Direction): readonly [string, string] | undefined {
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
