import type { CorsPolicy } from "./cors-policy.ts";
import { addVaryOrigin } from "./vary.ts";

/**
 * Adds the CORS headers of an actual (non-preflight) response to `headers`, which must be mutable and
 * already free of the origin's own Access-Control-* headers. Only an allowed Origin learns anything;
 * under an allow-list every response varies by Origin, including those to requests without one. An answer
 * without an ETag (an error) does not list `etag`; every other exposed name is always listed, since Cloudflare
 * or the zone's rules may add the header after the edge (`cf-ray`, `server-timing`, a Transform Rule's).
 */
export function decorateActualResponse(policy: CorsPolicy, origin: string | null, headers: Headers): void {
  if (policy.off) return;
  if (policy.anyOrigin) {
    headers.set("Access-Control-Allow-Origin", "*");
    expose(policy, headers);
    return;
  }
  addVaryOrigin(headers);
  if (origin === null || !policy.allowsOrigin(origin)) return;
  headers.set("Access-Control-Allow-Origin", origin);
  if (policy.credentials) headers.set("Access-Control-Allow-Credentials", "true");
  expose(policy, headers);
}

function expose(policy: CorsPolicy, headers: Headers): void {
  const names = headers.has("etag") ? policy.exposeHeaders : policy.exposeWithoutEtag;
  if (names !== "") headers.set("Access-Control-Expose-Headers", names);
}
