import { classify } from "./classify.ts";
import type { CorsPolicy } from "./cors/cors-policy.ts";
import { decorateActualResponse } from "./cors/actual-response.ts";
import { headersOf, type EdgeAnswer } from "./http/edge-responses.ts";
import type { OriginUsage } from "./meter/origin-usage.ts";
import { cleanOriginHeaders } from "./proxy/clean-response.ts";

/**
 * Reads one item from wherever this deployment's origin is; failures come back as small edge answers.
 * When `usage` is given, the reader records what the origin sent (the meter stage reports it).
 */
export type ItemReader = (
  id: string,
  method: "GET" | "HEAD",
  request: Request,
  usage?: OriginUsage,
) => Promise<Response | EdgeAnswer>;

/**
 * The edge pipeline, shared by the Worker and the Snippet: classify → answer here or read the item →
 * clean the origin's headers → decorate with CORS for this request's Origin. Only `readItem` does I/O.
 */
export async function respond(
  cors: CorsPolicy,
  request: Request,
  readItem: ItemReader,
  usage?: OriginUsage,
): Promise<Response> {
  const route = classify(cors, request.method, request.url, request.headers);
  if (usage) usage.requestClass = route.kind;
  switch (route.kind) {
    case "preflight":
      return new Response(null, { status: route.status, headers: route.headers });
    case "refused-preflight":
      return bare(request, route.answer);
    case "edge-answer":
      return decorated(cors, request, route.answer);
    case "item-read": {
      const response = await readItem(route.id, route.method, request, usage);
      if (!(response instanceof Response)) {
        if (usage) usage.requestClass = "origin-error";
        return decorated(cors, request, response);
      }
      const headers = cleanOriginHeaders(response);
      decorateActualResponse(cors, request.headers.get("origin"), headers);
      return new Response(route.method === "HEAD" ? null : response.body, { status: response.status, headers });
    }
  }
}

/** An edge answer with the CORS treatment every actual response gets. */
function decorated(cors: CorsPolicy, request: Request, answer: EdgeAnswer): Response {
  const headers = headersOf(answer);
  decorateActualResponse(cors, request.headers.get("origin"), headers);
  return new Response(request.method === "HEAD" ? null : answer.body, { status: answer.status, headers });
}

/** An edge answer with no CORS headers at all: refused preflights and a refused configuration. */
export function bare(request: Request, answer: EdgeAnswer): Response {
  return new Response(request.method === "HEAD" ? null : answer.body, { status: answer.status, headers: headersOf(answer) });
}
