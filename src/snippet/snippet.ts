// The Cloudflare Snippet: the Worker's pipeline (src/edge/respond.ts) with its configuration baked in at
// build time (scripts/build-snippet.ts), since a Snippet has no env vars, secrets or bindings. Preflights,
// bad input and other paths are answered here; item reads continue to the zone's origin.
import { compileCorsPolicy } from "../edge/cors/cors-policy.ts";
import { bare, respond } from "../edge/respond.ts";
import { BAKED_CONFIG } from "./baked-config.ts";
import { continueToOrigin } from "./continue-to-origin.ts";

// Compiled once per isolate, at module load: per request only Set lookups remain.
const cors = compileCorsPolicy(BAKED_CONFIG.cors);
const readItem = continueToOrigin(BAKED_CONFIG.originToken);

export default {
  async fetch(request: Request): Promise<Response> {
    try {
      return await respond(cors, request, readItem);
    } catch {
      // As the Worker's onError: a small 500 with no CORS headers, not Cloudflare's 1206 error page.
      return bare(request, { status: 500, body: null });
    }
  },
};
