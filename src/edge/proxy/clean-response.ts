import { stripResponseHeaders } from "../headers/strip.ts";

/**
 * An item read's answer before CORS decoration: `headers` are mutable and clean (no internal headers, no
 * Access-Control-*), so the decorate stage adds to them and builds the one Response the client gets.
 */
export interface ItemAnswer {
  status: number;
  headers: Headers;
  body: ReadableStream | ArrayBuffer | null;
}

/**
 * The origin's headers as the edge will serve them: internal headers and the origin's own Access-Control-*
 * removed, and `Content-Type` restored on 200s and on the 206s a zone's cache cuts from them for a `Range`
 * (the origin leaves it out because it is the same on every item). Returns mutable headers: exactly one copy of the immutable fetch() headers is made.
 */
export function cleanOriginHeaders(response: Response): Headers {
  let headers = stripResponseHeaders(response.headers);
  if (headers === response.headers) headers = new Headers(headers);
  if ((response.status === 200 || response.status === 206) && !headers.has("content-type")) headers.set("Content-Type", "application/json");
  return headers;
}
