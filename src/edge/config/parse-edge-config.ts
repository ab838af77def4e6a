import type { ConfigProblem } from "./config-error.ts";
import { ConfigError } from "./config-error.ts";
import type { EdgeVars } from "./edge-vars.ts";
import { type CorsSpec, parseCors } from "./parse-cors.ts";
import { type OriginSpec, parseOrigin } from "./parse-origin.ts";

export interface EdgeSpec {
  cors: CorsSpec;
  origin: OriginSpec;
}

/** Validates every var at once; throws a ConfigError listing all problems, each naming its var and the fix. */
export function parseEdgeConfig(vars: EdgeVars): EdgeSpec {
  const problems: ConfigProblem[] = [];
  const spec = { cors: parseCors(vars, problems), origin: parseOrigin(vars, problems) };
  if (problems.length > 0) throw new ConfigError(problems);
  return spec;
}
