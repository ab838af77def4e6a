/** The worker's `[vars]` (wrangler.toml) and its one secret. Every value is a string, as wrangler delivers them. */
export interface EdgeVars {
  ORIGIN_URL?: string;
  ORIGIN_TIMEOUT_MS?: string;
  ORIGIN_TOKEN?: string;
  CORS_ALLOW_ORIGINS?: string;
  CORS_ALLOW_METHODS?: string;
  CORS_ALLOW_HEADERS?: string;
  CORS_EXPOSE_HEADERS?: string;
  CORS_ALLOW_CREDENTIALS?: string;
  CORS_MAX_AGE?: string;
  CORS_ALLOW_PRIVATE_NETWORK?: string;
  EDGE_CACHE_TTL?: string;
}

export const EDGE_DEFAULTS = {
  ORIGIN_URL: "http://127.0.0.1:8788",
  ORIGIN_TIMEOUT_MS: "5000",
  CORS_ALLOW_METHODS: "GET,HEAD",
  EDGE_CACHE_TTL: "60",
} as const;
