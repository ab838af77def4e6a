import { ConfigError, type ConfigProblem } from "../../shared/config/config-error.ts";
import { readWholeNumber } from "../../shared/config/grammar.ts";
import { withEdgeDefaults, type EdgeRawVars, type EdgeVars } from "./edge-vars.ts";
import { type CorsSpec, parseCors } from "./parse-cors.ts";
import { type OriginSpec, parseOrigin } from "./parse-origin.ts";

export interface EdgeSpec {
  cors: CorsSpec;
  origin: OriginSpec;
  /** Seconds an edge-cached item is served without asking the origin; 0 revalidates every read. */
  edgeCacheTtlSeconds: number;
  /** Seconds an edge-cached 404 is served without asking the origin; 0 never caches a 404. */
  edgeCacheNotFoundTtlSeconds: number;
}

// A day bounds how stale an item (or a 404 for an id created since) can be when a change is not seen by the
// edge, for instance when a purge never arrived.
const MAX_EDGE_CACHE_TTL = 86400;

function parseEdgeCacheTtl(vars: EdgeRawVars, problems: ConfigProblem[]): number {
  return readWholeNumber("EDGE_CACHE_TTL", vars.EDGE_CACHE_TTL, { min: 0, max: MAX_EDGE_CACHE_TTL, unit: "seconds", example: "60" }, problems);
}

function parseEdgeCacheNotFoundTtl(vars: EdgeRawVars, problems: ConfigProblem[]): number {
  const rule = { min: 0, max: MAX_EDGE_CACHE_TTL, unit: "seconds", example: "0" };
  return readWholeNumber("EDGE_CACHE_NOT_FOUND_TTL", vars.EDGE_CACHE_NOT_FOUND_TTL, rule, problems);
}

/** Validates every var at once; throws a ConfigError listing all problems, each naming its var and the fix. */
export function parseEdgeConfig(vars: EdgeVars): EdgeSpec {
  const problems: ConfigProblem[] = [];
  const raw = withEdgeDefaults(vars);
  const spec = {
    cors: parseCors(raw, problems),
    origin: parseOrigin(raw, problems),
    edgeCacheTtlSeconds: parseEdgeCacheTtl(raw, problems),
    edgeCacheNotFoundTtlSeconds: parseEdgeCacheNotFoundTtl(raw, problems),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return spec;
}
