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

