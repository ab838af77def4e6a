import { Hono } from "hono";
import { ConfigError } from "./config/config-error.ts";
import type { EdgeVars } from "./config/edge-vars.ts";
import { edgeConfigFor, type EdgeConfig } from "./edge-config.ts";
import { MISCONFIGURED } from "./http/edge-responses.ts";
import { fetchItem } from "./proxy/fetch-item.ts";
import { bare, respond } from "./respond.ts";

type Edge = { Bindings: EdgeVars; Variables: { edge: EdgeConfig } };

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
app.all("*", (c) => {
  const { cors, origin } = c.var.edge;
  return respond(cors, c.req.raw, (id, method, request) => fetchItem(origin, id, method, request.headers));
});

app.onError((error, c) => {
  console.error(error);
  return bare(c.req.raw, { status: 500, body: null });
});

export default app;
