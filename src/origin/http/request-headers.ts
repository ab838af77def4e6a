import { ORIGIN_TOKEN_HEADER } from "../../shared/origin-token.ts";

/**
 * The request's token and If-None-Match values read straight from `rawHeaders` (one pass, no header
 * object built). A repeated `x-origin-token` makes the token `null` (ambiguous: refused).
 */
export interface RequestHeaderPick {
  token: string | undefined | null;
  ifNoneMatch: string | undefined;
  contentType: string | undefined;
}

export function pickHeaders(raw: readonly string[], out: RequestHeaderPick): RequestHeaderPick {
  out.token = undefined;
  out.ifNoneMatch = undefined;
  out.contentType = undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    switch (name.length) {
      case 14:
        if (name.toLowerCase() === ORIGIN_TOKEN_HEADER) out.token = out.token === undefined ? raw[i + 1]! : null;
        break;
      case 13:
        if (name.toLowerCase() === "if-none-match") {
          // Repeated fields are one comma-separated list (RFC 9110 §5.3).
          out.ifNoneMatch = out.ifNoneMatch === undefined ? raw[i + 1]! : `${out.ifNoneMatch}, ${raw[i + 1]!}`;
        }
        break;
      case 12:
        if (name.toLowerCase() === "content-type") out.contentType = raw[i + 1]!;
        break;
    }
  }
  return out;
}
