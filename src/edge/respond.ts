import { classify } from "./classify.ts";
import type { CorsPolicy } from "./cors/cors-policy.ts";
import { decorateActualResponse } from "./cors/actual-response.ts";
import { headersOf, type EdgeAnswer } from "./http/edge-responses.ts";
import type { OriginUsage } from "./meter/origin-usage.ts";
import type { ItemAnswer } from "./proxy/clean-response.ts";

/**
 * Reads one item from wherever this deployment's origin is and cleans what came back (the clean stage
 * belongs to the reader because an edge cache must store the clean form); failures come back as small
 * edge answers. When `usage` is given, the reader records what the origin sent for the meter stage.
 */
export type ItemReader = (
  id: string,
  method: "GET" | "HEAD",
  request: Request,
  usage?: OriginUsage,
) => Promise<ItemAnswer | EdgeAnswer>;

/**
 * The edge pipeline, shared by the Worker and the Snippet: classify → answer here or read the item (and
 * clean it) → decorate with CORS for this request's Origin. Only `readItem` does I/O.
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
      const answer = await readItem(route.id, route.method, request, usage);
      if (isEdgeAnswer(answer)) {
        if (usage) usage.requestClass = "origin-error";
        return decorated(cors, request, answer);
      }
      decorateActualResponse(cors, request.headers.get("origin"), answer.headers);
      return new Response(route.method === "HEAD" ? null : answer.body, { status: answer.status, headers: answer.headers });
    }
  }
}

function isEdgeAnswer(answer: ItemAnswer | EdgeAnswer): answer is EdgeAnswer {
  return !(answer.headers instanceof Headers);
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
