/**
 * If-None-Match against one ETag with the weak comparison RFC 9110 §13.1.2 prescribes: `*` matches any,
 * otherwise any listed entity-tag whose opaque part equals the ETag's, `W/` ignored on both sides. Parsed
 * by scanning, since an entity-tag may itself contain a comma.
 */
export function etagMatches(ifNoneMatch: string, etag: string): boolean {
  if (ifNoneMatch.trim() === "*") return true;
  const wanted = opaque(etag);
  let i = 0;
  while (i < ifNoneMatch.length) {
    const start = ifNoneMatch.indexOf('"', i);
    if (start === -1) return false;
    const end = ifNoneMatch.indexOf('"', start + 1);
    if (end === -1) return false;
    if (ifNoneMatch.slice(start, end + 1) === wanted) return true;
    i = end + 1;
  }
  return false;
}

function opaque(etag: string): string {
  return etag.startsWith("W/") ? etag.slice(2) : etag;
}
