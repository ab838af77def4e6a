import type { CorsPolicy } from "./cors-policy.ts";
import { addVaryOrigin } from "./vary.ts";

/**
 * Adds the CORS headers of an actual (non-preflight) response to `headers`, which must be mutable and
 * already free of the origin's own Access-Control-* headers. Only an allowed Origin learns anything;
 * under an allow-list every response varies by Origin, including those to requests without one. Of the
 * exposed names, an answer lists those it carries: an error without an ETag has no `etag` to expose.
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
  if (policy.exposeAll) {
    headers.set("Access-Control-Expose-Headers", "*");
    return;
  }
  let names = "";
  for (const name of policy.exposeNames) if (headers.has(name)) names = names === "" ? name : `${names},${name}`;
  if (names !== "") headers.set("Access-Control-Expose-Headers", names);
}
