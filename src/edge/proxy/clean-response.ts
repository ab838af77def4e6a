import { stripResponseHeaders } from "../headers/strip.ts";

/**
 * The origin's response as the edge will serve it: internal headers and the origin's own Access-Control-*
 * removed, and `Content-Type` restored on 200s (the origin leaves it out because it is the same on every
 * item). Returns mutable headers: at most one copy of the immutable fetch() headers is made.
 */
export function cleanOriginHeaders(response: Response): Headers {
  let headers = stripResponseHeaders(response.headers);
  if (headers === response.headers) headers = new Headers(headers);
  if (response.status === 200 && !headers.has("content-type")) headers.set("Content-Type", "application/json");
  return headers;
}
