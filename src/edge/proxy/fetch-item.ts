import type { OriginSpec } from "../config/parse-origin.ts";
import { ORIGIN_INVALID, ORIGIN_TIMEOUT, ORIGIN_UNREACHABLE, type EdgeAnswer } from "../http/edge-responses.ts";
import { stripRequestHeaders } from "../headers/strip.ts";
import { ORIGIN_TOKEN_HEADER } from "../../shared/origin-token.ts";
import { originHeadTooLarge } from "./origin-head.ts";

const CONDITIONAL_HEADERS = ["if-none-match", "if-modified-since", "if-match", "if-unmodified-since", "if-range", "range"];

/**
 * How the client's conditional headers travel: as they are (`"client"`), dropped so the origin answers with
 * the whole item (`null`, to fill the edge cache), or replaced by the edge's own `If-None-Match`.
 */
export type Conditional = "client" | null | { ifNoneMatch: string };

/**
 * Fetches one item from the origin: the client's headers minus internal ones, the conditional headers as
 * `conditional` says, plus the origin token; at most one copy of the headers is made. Failures become small
 * edge answers that reveal nothing internal: unreachable 502, slow 504, a head over 32 KB 502. Redirects are
 * passed on, never followed.
 */
export async function fetchItem(
  origin: OriginSpec,
  id: string,
  method: "GET" | "HEAD",
  clientHeaders: Headers,
  conditional: Conditional = "client",
): Promise<Response | EdgeAnswer> {
  let headers = stripRequestHeaders(clientHeaders);
  if (origin.token !== "" || conditional !== "client") {
    if (headers === clientHeaders) headers = new Headers(clientHeaders);
    if (origin.token !== "") headers.set(ORIGIN_TOKEN_HEADER, origin.token);
    if (conditional !== "client") {
      for (const name of CONDITIONAL_HEADERS) headers.delete(name);
      if (conditional !== null) headers.set("if-none-match", conditional.ifNoneMatch);
    }
  }
  let response: Response;
  try {
    response = await fetch(`${origin.url}/items/${id}`, {
      method,
      headers,
      redirect: "manual",
      signal: AbortSignal.timeout(origin.timeoutMs),
    });
  } catch (error) {
    return error instanceof Error && error.name === "TimeoutError" ? ORIGIN_TIMEOUT : ORIGIN_UNREACHABLE;
  }
  if (!originHeadTooLarge(response.headers)) return response;
  await response.body?.cancel();
  return ORIGIN_INVALID;
}
