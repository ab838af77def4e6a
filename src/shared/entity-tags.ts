// Entity-tag lists (RFC 9110 §8.8.3, §13.1.1-2), read one way by the edge and the origin: the character
// classes, and If-Match (strong comparison) beside If-None-Match (weak comparison, if-none-match.ts).

import { isOws } from "./http-token.ts";

/**
 * An If-Match or If-None-Match value: `*`, or its entity-tags split into strong ones and the opaque tags
 * (quotes included) of all of them; undefined when malformed.
 */
export type EntityTagList = "*" | { readonly strong: string[]; readonly opaque: string[] };

/**
 * Parses `"*" / #entity-tag` (RFC 9110 §13.1.1; repeated fields already joined with ", "). `*` only stands
 * alone (starAlone); empty lists and list elements are allowed (§5.6.1): an empty If-Match matches nothing, an empty
 * If-None-Match holds. Anything else is malformed (undefined): the callers
 * refuse a write whose condition they cannot read, and an If-Match they cannot read matches nothing.
 */
export function parseEntityTags(header: string): EntityTagList | undefined {
  const n = header.length;
  const strong: string[] = [];
  const opaque: string[] = [];
  let i = 0;
  for (;;) {
    while (i < n && isListSpace(header.charCodeAt(i))) i++;
    if (i >= n) return { strong, opaque }; // possibly empty: `#entity-tag` allows no elements (§5.6.1)
    if (header.charCodeAt(i) === 0x2a /* * */) return starAlone(header, i) ? "*" : undefined;
    const weak = header.charCodeAt(i) === 0x57 /* W */ && header.charCodeAt(i + 1) === 0x2f; /* / */
    const start = weak ? i + 2 : i;
    if (header.charCodeAt(start) !== 0x22) return undefined;
    let end = start + 1;
    while (end < n && header.charCodeAt(end) !== 0x22) {
      if (!isEtagc(header.charCodeAt(end))) return undefined;
      end++;
    }
    if (end >= n) return undefined;
    const tag = header.slice(start, end + 1);
    opaque.push(tag);
    if (!weak) strong.push(tag);
    i = end + 1;
    while (i < n && isOws(header.charCodeAt(i))) i++;
    if (i < n && header.charCodeAt(i) !== 0x2c) return undefined;
  }
}

/**
 * If-Match against the current ETag (undefined: no current representation), strong comparison (RFC 9110
 * §8.8.3.2): `*` matches any current representation, a list matches when a strong tag in it is `etag`,
 * character for character, and `etag` is strong. Malformed matches nothing.
 */
export function ifMatchMatches(header: string, etag: string | undefined): boolean {
  if (etag === undefined) return false;
  if (header === etag) return !etag.startsWith("W/"); // the usual case: exactly what was sent
  const tags = parseEntityTags(header);
  if (tags === undefined) return false;
  return tags === "*" || (!etag.startsWith("W/") && tags.strong.includes(etag));
}

/**
 * Whether the `*` at `at` is the whole field value, OWS aside: `"*" / #entity-tag` makes `*` no list element,
 * so `*,`, `, *` and `"a", *` are malformed (read alike by If-Match and If-None-Match, edge and origin).
 */
export function starAlone(header: string, at: number): boolean {
  for (let i = 0; i < at; i++) if (!isOws(header.charCodeAt(i))) return false;
  for (let i = at + 1; i < header.length; i++) if (!isOws(header.charCodeAt(i))) return false;
  return true;
}

/** What may stand between list elements: OWS and empty elements (RFC 9110 §5.6.1). */
export function isListSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x2c;
}
/** etagc = %x21 / %x23-7E / obs-text */
export function isEtagc(c: number): boolean {
  return c === 0x21 || (c >= 0x23 && c <= 0x7e) || (c >= 0x80 && c <= 0xff);
}
