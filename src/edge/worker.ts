import { Hono } from "hono";
import { cachedItemReader } from "./cache/cached-item-reader.ts";
import { ConfigError } from "./config/config-error.ts";
import type { EdgeVars } from "./config/edge-vars.ts";
import { edgeConfigFor, type EdgeConfig } from "./edge-config.ts";
import { MISCONFIGURED } from "./http/edge-responses.ts";
import { recordUsage } from "./meter/analytics.ts";
import { newOriginUsage } from "./meter/origin-usage.ts";
import { bare, respond } from "./respond.ts";

type Bindings = EdgeVars & {
  /** Optional Workers Analytics Engine dataset (see wrangler.toml): one data point per request when bound. */
  EGRESS?: AnalyticsEngineDataset;
};
type Edge = { Bindings: Bindings; Variables: { edge: EdgeConfig } };

const app = new Hono<Edge>();

app.use(async (c, next) => {
  const config = edgeConfigFor(c.env);
  // A refused configuration gets no CORS headers: serving a policy nobody wrote is worse than failing.
  if (config instanceof ConfigError) return bare(c.req.raw, MISCONFIGURED);
  c.set("edge", config);
  await next();
});

// Every path and method goes through one pipeline (src/edge/respond.ts), which the Snippet shares; routing
// by path and method happens in its classify stage so that both deployments classify identically.
app.all("*", async (c) => {
  const { cors, origin, edgeCacheTtlSeconds } = c.var.edge;
  const waitUntil = (promise: Promise<unknown>) => c.executionCtx.waitUntil(promise);
  const readItem = cachedItemReader({ cache: caches.default, origin, ttlSeconds: edgeCacheTtlSeconds, waitUntil });
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
