import { Hono, type Context } from "hono";
import { ConfigError } from "./config/config-error.ts";
import type { EdgeVars } from "./config/edge-vars.ts";
import { decorateActualResponse } from "./cors/actual-response.ts";
import { answerPreflight, isPreflight } from "./cors/preflight.ts";
import { edgeConfigFor, type EdgeConfig } from "./edge-config.ts";
import {
  BAD_ITEM_ID,
  headersOf,
  METHOD_NOT_ALLOWED,
  MISCONFIGURED,
  NOT_FOUND,
  PREFLIGHT_REFUSED,
  type EdgeAnswer,
} from "./http/edge-responses.ts";
import { parseItemPath, rawPathOf } from "./http/item-path.ts";
import { cleanOriginHeaders } from "./proxy/clean-response.ts";
import { fetchItem } from "./proxy/fetch-item.ts";

// Each request flows one way: classify (the routes below) → answer at the edge or forward → clean the
// origin's response → decorate with CORS for this request's Origin.
type Edge = { Bindings: EdgeVars; Variables: { edge: EdgeConfig } };
type EdgeContext = Context<Edge>;

const app = new Hono<Edge>();

app.use(async (c, next) => {
  const config = edgeConfigFor(c.env);
  // A refused configuration gets no CORS headers: serving a policy nobody wrote is worse than failing.
  if (config instanceof ConfigError) return bare(c, MISCONFIGURED);
  c.set("edge", config);
  await next();
});

app.options("*", async (c, next) => {
  const request = c.req.raw;
  if (!isPreflight(request.method, request.headers)) return next();
  const answer = answerPreflight(c.var.edge.cors, request.headers);
  if (!answer.allowed) return bare(c, PREFLIGHT_REFUSED);
  return new Response(null, { status: 204, headers: answer.headers as [string, string][] });
});

app.on(["GET", "HEAD"], "/items/*", async (c) => {
  const item = parseItemPath(rawPathOf(c.req.url));
  if (item.kind === "other") return decorated(c, NOT_FOUND);
  if (item.kind === "bad-id") return decorated(c, BAD_ITEM_ID);

  const request = c.req.raw;
  const method = request.method === "HEAD" ? "HEAD" : "GET";
  const response = await fetchItem(c.var.edge.origin, item.id, method, request.headers);
  if (!(response instanceof Response)) return decorated(c, response);

  const headers = cleanOriginHeaders(response);
  decorateActualResponse(c.var.edge.cors, request.headers.get("origin"), headers);
  return new Response(method === "HEAD" ? null : response.body, { status: response.status, headers });
});

app.all("/items/*", (c) =>
  decorated(c, parseItemPath(rawPathOf(c.req.url)).kind === "other" ? NOT_FOUND : METHOD_NOT_ALLOWED),
);

app.notFound((c) => decorated(c as EdgeContext, NOT_FOUND));

app.onError((error, c) => {
  console.error(error);
  return bare(c as EdgeContext, { status: 500, body: null });
});

/** An edge answer with the CORS treatment every actual response gets. */
function decorated(c: EdgeContext, answer: EdgeAnswer): Response {
  const headers = headersOf(answer);
  decorateActualResponse(c.var.edge.cors, c.req.raw.headers.get("origin"), headers);
  return new Response(c.req.raw.method === "HEAD" ? null : answer.body, { status: answer.status, headers });
}

/** An edge answer with no CORS headers at all. */
function bare(c: EdgeContext, answer: EdgeAnswer): Response {
  return new Response(c.req.raw.method === "HEAD" ? null : answer.body, {
    status: answer.status,
    headers: headersOf(answer),
  });
}

export default app;
