// RFC 9110 §13.1.2 If-None-Match, evaluated the same way by the edge (against its cached copy) and the origin
// (against its current version), so a client gets the same 304-or-200 whichever of them answers.

import { isEtagc, isListSpace, starAlone } from "./entity-tags.ts";
import { isOws } from "./http-token.ts";

/**
 * True when `header` (an If-None-Match field value, repeated fields joined with ", ") matches `etag` under
 * the weak comparison function: `*` matches any current representation; otherwise a comma-separated list
 * of entity-tags, each optionally `W/`-prefixed, matches when one has the same opaque-tag as `etag` (whose
 * own `W/` is ignored too). A malformed header matches nothing, even if it contains the tag: the full
 * response is always a safe answer. An entity-tag may itself contain a comma, so the list is scanned, not
 * split.
 */
export function ifNoneMatchMatches(header: string, etag: string): boolean {
  if (header === etag) return true; // the usual case: exactly what was sent
  const tagStart = etag.startsWith("W/") ? 2 : 0;
  const tagLength = etag.length - tagStart;
  const n = header.length;
  let i = 0;
  let matched = false;
  for (;;) {
    while (i < n && isListSpace(header.charCodeAt(i))) i++;
    if (i >= n) return matched;
    if (header.charCodeAt(i) === 0x2a /* * */) return starAlone(header, i);
    let start = i;
    if (header.charCodeAt(i) === 0x57 /* W */ && header.charCodeAt(i + 1) === 0x2f /* / */) start = i + 2;
    if (header.charCodeAt(start) !== 0x22) return false;
    let end = start + 1;
    while (end < n && header.charCodeAt(end) !== 0x22) {
      if (!isEtagc(header.charCodeAt(end))) return false;
      end++;
    }
    if (end >= n) return false;
    if (end + 1 - start === tagLength && header.startsWith(etag.slice(tagStart), start)) matched = true;
    i = end + 1;
    while (i < n && isOws(header.charCodeAt(i))) i++;
    if (i < n && header.charCodeAt(i) !== 0x2c) return false;
  }
}
