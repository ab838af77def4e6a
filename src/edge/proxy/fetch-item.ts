import type { OriginSpec } from "../config/parse-origin.ts";
import { ORIGIN_INVALID, ORIGIN_TIMEOUT, ORIGIN_UNREACHABLE, type EdgeAnswer } from "../http/edge-responses.ts";
import { stripRequestHeaders } from "../headers/strip.ts";
import { originHeadTooLarge } from "./origin-head.ts";

export const ORIGIN_TOKEN_HEADER = "x-origin-token";

/**
 * Fetches one item from the origin: the client's headers minus internal ones (conditional headers pass
 * through), plus the origin token. Failures become small edge answers that reveal nothing internal.
 */
export async function fetchItem(
  origin: OriginSpec,
  id: string,
  method: "GET" | "HEAD",
  clientHeaders: Headers,
): Promise<Response | EdgeAnswer> {
  let headers = stripRequestHeaders(clientHeaders);
  if (origin.token !== "") {
    if (headers === clientHeaders) headers = new Headers(clientHeaders);
    headers.set(ORIGIN_TOKEN_HEADER, origin.token);
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
