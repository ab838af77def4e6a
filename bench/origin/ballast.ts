// Memory no cache holds, for bench/origin/random-reads.ts: lines of 64 bytes, each holding (in its first
// Int32) the index of the next line of one random cycle through all of them. Following it, every read's
// address is the value the previous one read: dependent, unpredictable, and never the same line twice
// until the whole cycle has been walked.

import { prng } from "../lib/random.ts";

/** Int32s per 64-byte line. */
export const LINE = 16;

/** `lines` lines, linked into one random cycle (a seeded shuffle: the same cycle on every run). */
export function ballastCycle(lines: number, seed = 7): Int32Array {
  const ballast = new Int32Array(lines * LINE);
  const order = new Int32Array(lines);
  for (let i = 0; i < lines; i++) order[i] = i;
  const random = prng(seed);
  for (let i = lines - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const t = order[i]!;
    order[i] = order[j]!;
    order[j] = t;
  }
  for (let i = 0; i < lines; i++) ballast[order[i]! * LINE] = order[(i + 1) % lines]!;
  return ballast;
}
