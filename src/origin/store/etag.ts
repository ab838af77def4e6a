// ETags: the write epoch of the store session that wrote the item (2 random characters, see the stores),
// then its per-item version in base 64, digits first: epoch "Xa", version 1 → "Xa1", 64 → "Xa10".
// The epoch tells content written after a lost, recreated or restored database from what an older copy
// served under the same version (equal by chance with p = 1/4096). Versions 1-63 give a 5-character ETag
// (304 = 42 bytes), up to 4095 a 6-character one (43 bytes). Every instance computes the same ETag from the
// same row, so the edge can revalidate against whichever instance its request reaches.

import { randomInt } from "node:crypto";

const DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_";

export const EPOCH = /^[0-9A-Za-z_-]{2}$/;

/** 2 random base64url characters: 12 bits, so two independent epochs are equal with p = 1/4096. */
export function randomEpoch(): string {
  const n = randomInt(4096);
  return DIGITS[n >> 6]! + DIGITS[n & 63]!;
}

/**
 * The epoch and version `etag` was made from by `etagFor`, or undefined for a tag `etagFor` never makes
 * (a weak tag, another alphabet, a leading zero digit): read back and checked by writing it again.
 */
export function parseEtag(etag: string): { epoch: string; version: number } | undefined {
  if (etag.length < 5 || etag.length > 16 || etag[0] !== '"' || etag[etag.length - 1] !== '"') return undefined;
  const epoch = etag.slice(1, 3);
  let version = 0;
  for (let i = 3; i < etag.length - 1; i++) {
    const digit = DIGITS.indexOf(etag[i]!);
    if (digit === -1) return undefined;
    version = version * 64 + digit;
  }
  if (!EPOCH.test(epoch) || !Number.isSafeInteger(version) || etagFor(epoch, version) !== etag) return undefined;
  return { epoch, version };
}

export function etagFor(epoch: string, version: number): string {
  if (!Number.isSafeInteger(version) || version < 0) throw new RangeError(`bad version ${version}`);
  // Fixed length, so epoch + version reads back one way only; the alphabet keeps the tag a valid etagc run.
  if (!EPOCH.test(epoch)) throw new RangeError(`bad epoch ${JSON.stringify(epoch)}`);
  let digits = "";
  do {
    digits = DIGITS[version % 64]! + digits;
    version = Math.floor(version / 64);
  } while (version > 0);
  return `"${epoch}${digits}"`;
}

