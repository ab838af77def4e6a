// The item id rule, the one fact every part of slim-edge checks: the edge validates the raw path against it,
// the origin's routes and fast path accept only it, and the origin's store never sees anything else.

/** Where item resources live: `/items/<id>`. */
export const ITEMS_PREFIX = "/items/";

/** The longest id, in characters. */
export const MAX_ITEM_ID_LENGTH = 128;

/** 1-128 characters of `A-Z a-z 0-9 _ -`: nothing to decode, escape or normalise, on any side. */
export const ITEM_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** The rule in words, for error messages that tell the caller what to send instead. */
export const ITEM_ID_RULE = "1-128 characters of A-Z a-z 0-9 _ -";

export function isItemId(id: string): boolean {
  return ITEM_ID.test(id);
}

/** True for a byte (char code) of the id alphabet; parsers that walk bytes use this instead of the regex. */
export function isItemIdByte(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x2d || c === 0x5f;
}
