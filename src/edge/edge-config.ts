import { ConfigError } from "../shared/config/config-error.ts";
import type { EdgeVars } from "./config/edge-vars.ts";
import type { OriginSpec } from "./config/parse-origin.ts";
import { parseEdgeConfig } from "./config/parse-edge-config.ts";
import { compileCorsPolicy, type CorsPolicy } from "./cors/cors-policy.ts";

export interface EdgeConfig {
  cors: CorsPolicy;
  origin: OriginSpec;
  edgeCacheTtlSeconds: number;
  edgeCacheNotFoundTtlSeconds: number;
}

let compiled: { vars: EdgeVars; config: EdgeConfig | ConfigError } | undefined;

/**
 * The compiled configuration for these vars, built once per isolate (workerd hands every request the same
 * env object). A refused configuration is returned, not thrown, so the caller can answer 500 without
 * serving a policy nobody wrote; it is logged once, when first compiled.
 */
export function edgeConfigFor(vars: EdgeVars): EdgeConfig | ConfigError {
  if (compiled?.vars === vars) return compiled.config;
  let config: EdgeConfig | ConfigError;
  try {
    const spec = parseEdgeConfig(vars);
    config = {
      cors: compileCorsPolicy(spec.cors),
      origin: spec.origin,
      edgeCacheTtlSeconds: spec.edgeCacheTtlSeconds,
      edgeCacheNotFoundTtlSeconds: spec.edgeCacheNotFoundTtlSeconds,
    };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    config = error;
  }
  compiled = { vars, config };
  return config;
}
