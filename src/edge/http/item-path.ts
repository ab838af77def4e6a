import { isItemId, ITEMS_PREFIX } from "../../shared/item-id.ts";

export type ItemPath = { kind: "item"; id: string } | { kind: "bad-id" } | { kind: "other" };

/**
 * Reads the raw (still percent-encoded) path: an id is 1-128 of `A-Z a-z 0-9 _ -`, so an encoded slash,
 * dot, NUL or any other escape is a bad id, never decoded into something the origin might resolve.
 */
export function parseItemPath(path: string): ItemPath {
  if (!path.startsWith(ITEMS_PREFIX)) return { kind: "other" };
  const id = path.slice(ITEMS_PREFIX.length);
  return isItemId(id) ? { kind: "item", id } : { kind: "bad-id" };
}

/** The path of an absolute URL without parsing the whole URL (this runs on every request). */
export function rawPathOf(url: string): string {
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  if (pathStart === -1) return "/";
  const queryStart = url.indexOf("?", pathStart);
  const hashStart = url.indexOf("#", pathStart);
  const end = Math.min(queryStart === -1 ? url.length : queryStart, hashStart === -1 ? url.length : hashStart);
  return url.slice(pathStart, end);
}
