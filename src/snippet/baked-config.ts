import type { CorsSpec } from "../edge/config/parse-cors.ts";

/** What scripts/build-snippet.ts bakes into the Snippet: plain, validated data (a Snippet has no env vars). */
export interface BakedConfig {
  /** The CORS policy from the CORS_* vars, validated at build time by parseEdgeConfig (in Node). */
  cors: CorsSpec;
  /** Sent in `x-origin-token` when not empty; baked only on request (`--bake-origin-token`). */
  originToken: string;
}

/**
 * Placeholder for type-checking only: the build replaces this module with the baked configuration
 * (scripts/lib/snippet-bundle.ts), so validation code and tldts never reach the 32 KB bundle. Importing the
 * unbuilt module is a mistake, and fails loudly rather than serving a policy nobody wrote.
 */
export const BAKED_CONFIG: BakedConfig = unbaked();

function unbaked(): never {
  throw new Error("src/snippet/baked-config.ts is replaced at build time: run npm run build:snippet");
}
