import type { ConfigProblem } from "./config-error.ts";
import { ConfigError } from "./config-error.ts";
import { EDGE_DEFAULTS, type EdgeVars } from "./edge-vars.ts";
import { type CorsSpec, parseCors } from "./parse-cors.ts";
import { type OriginSpec, parseOrigin } from "./parse-origin.ts";

export interface EdgeSpec {
  cors: CorsSpec;
  origin: OriginSpec;
  /** Seconds an edge-cached item is served without asking the origin; 0 revalidates every read. */
  edgeCacheTtlSeconds: number;
}

// A day bounds how stale an item can be when an origin write is not seen by the edge.
const MAX_EDGE_CACHE_TTL = 86400;

function parseEdgeCacheTtl(vars: EdgeVars, problems: ConfigProblem[]): number {
  const raw = vars.EDGE_CACHE_TTL || EDGE_DEFAULTS.EDGE_CACHE_TTL;
  if (!/^\d+$/.test(raw) || Number(raw) > MAX_EDGE_CACHE_TTL) {
    problems.push({
      variable: "EDGE_CACHE_TTL",
      message: `"${raw}" is not a whole number of seconds from 0 to ${MAX_EDGE_CACHE_TTL}; write e.g. "60" (0 revalidates every read).`,
    });
  }
  return Number(raw);
}

/** Validates every var at once; throws a ConfigError listing all problems, each naming its var and the fix. */
export function parseEdgeConfig(vars: EdgeVars): EdgeSpec {
  const problems: ConfigProblem[] = [];
  const spec = {
    cors: parseCors(vars, problems),
    origin: parseOrigin(vars, problems),
    edgeCacheTtlSeconds: parseEdgeCacheTtl(vars, problems),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return spec;
}
