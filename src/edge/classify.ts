import { answerPreflight, readPreflight, type HeaderSource } from "./cors/preflight.ts";
import type { CorsPolicy } from "./cors/cors-policy.ts";
import { BAD_ITEM_ID, METHOD_NOT_ALLOWED, NOT_FOUND, PREFLIGHT_REFUSED, type EdgeAnswer } from "./http/edge-responses.ts";
import { parseItemPath, rawPathOf } from "./http/item-path.ts";

/** What the edge does with a request: answer it here (preflights and bad input), or read an item. */
export type Route =
  | { kind: "preflight"; status: 204; headers: Readonly<Record<string, string>> }
  | { kind: "refused-preflight"; answer: EdgeAnswer }
  | { kind: "edge-answer"; answer: EdgeAnswer }
  | { kind: "item-read"; id: string; method: "GET" | "HEAD" };

/**
 * The first stage for every request, shared by the Worker and the Snippet. Pure: the same method, URL and
 * headers always give the same route. A preflight for any path is answered here; only `GET`/`HEAD
 * /items/:id` with a valid id goes on to the origin.
 */
export function classify(cors: CorsPolicy, method: string, url: string, headers: HeaderSource): Route {
  const preflight = readPreflight(method, headers);
  if (preflight) {
    const answer = answerPreflight(cors, headers, preflight);
    return answer.allowed
      ? { kind: "preflight", status: 204, headers: answer.headers }
      : { kind: "refused-preflight", answer: PREFLIGHT_REFUSED };
  }
  const item = parseItemPath(rawPathOf(url));
  if (item.kind === "other") return { kind: "edge-answer", answer: NOT_FOUND };
  if (method !== "GET" && method !== "HEAD") return { kind: "edge-answer", answer: METHOD_NOT_ALLOWED };
  if (item.kind === "bad-id") return { kind: "edge-answer", answer: BAD_ITEM_ID };
  return { kind: "item-read", id: item.id, method };
}
