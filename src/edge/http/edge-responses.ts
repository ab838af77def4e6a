// Responses the edge makes itself. Bodies are bytes, not strings, so the runtime adds no
// `Content-Type: text/plain;charset=UTF-8` (40 bytes nobody reads); each says what was wrong in one line.
import { ITEM_ID_RULE } from "../../shared/item-id.ts";

const encoder = new TextEncoder();

export interface EdgeAnswer {
  status: number;
  body: Uint8Array | null;
  headers?: ReadonlyArray<readonly [string, string]>;
}

function answer(status: number, text: string, headers?: ReadonlyArray<readonly [string, string]>): EdgeAnswer {
  return headers ? { status, body: encoder.encode(text), headers } : { status, body: encoder.encode(text) };
}

export const BAD_ITEM_ID = answer(400, `bad item id: use ${ITEM_ID_RULE}\n`);
export const NOT_FOUND = answer(404, "not found\n");
export const METHOD_NOT_ALLOWED = answer(405, "method not allowed: use GET or HEAD\n", [["Allow", "GET, HEAD"]]);
export const PREFLIGHT_REFUSED: EdgeAnswer = { status: 403, body: null };
export const ORIGIN_UNREACHABLE = answer(502, "origin unreachable\n");
export const ORIGIN_TIMEOUT = answer(504, "origin timed out\n");
export const ORIGIN_INVALID = answer(502, "origin sent an invalid response\n");
export const MISCONFIGURED = answer(500, "edge misconfigured: see the worker log or run npm run check\n");

/** A fresh mutable Headers for an edge answer, ready for CORS decoration. */
export function headersOf(answer: EdgeAnswer): Headers {
  return new Headers(answer.headers as [string, string][] | undefined);
}
