import { Hono } from "hono";
import { cachedItemReader } from "./cache/cached-item-reader.ts";
import { ConfigError } from "../shared/config/config-error.ts";
import type { EdgeVars } from "./config/edge-vars.ts";
import { edgeConfigFor } from "./edge-config.ts";
import { MISCONFIGURED } from "./http/edge-responses.ts";
import { recordUsage } from "./meter/analytics.ts";
import { newOriginUsage } from "./meter/origin-usage.ts";
import { bare, respond } from "./respond.ts";

type Bindings = EdgeVars & {
  /** Optional Workers Analytics Engine dataset (see wrangler.toml): one data point per request when bound. */
  EGRESS?: AnalyticsEngineDataset;
};

const app = new Hono<{ Bindings: Bindings }>();

// One handler for every path and method: routing by path and method happens in the pipeline's classify
// stage (src/edge/respond.ts), which the Snippet shares, so both deployments classify identically. One
// handler and no middleware also keeps Hono's per-request dispatch to a single call.
app.all("*", async (c) => {
  const config = edgeConfigFor(c.env);
  // A refused configuration gets no CORS headers: serving a policy nobody wrote is worse than failing.
  if (config instanceof ConfigError) return bare(c.req.raw, MISCONFIGURED);

  const { cors, origin } = config;
  const waitUntil = (promise: Promise<unknown>) => c.executionCtx.waitUntil(promise);
  const lifetimes = { itemSeconds: config.edgeCacheTtlSeconds, notFoundSeconds: config.edgeCacheNotFoundTtlSeconds };
  const readItem = cachedItemReader({ cache: caches.default, origin, lifetimes, waitUntil });
  const usage = c.env.EGRESS ? newOriginUsage("unclassified") : undefined;
  const response = await respond(cors, c.req.raw, readItem, usage);
  if (usage) recordUsage(c.env.EGRESS!, usage, waitUntil);
  return response;
});

app.onError((error, c) => {
  console.error(error);
  return bare(c.req.raw, { status: 500, body: null });
});

export default app;
