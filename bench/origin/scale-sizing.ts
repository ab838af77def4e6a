// How big CACHE_MAX_BYTES must be for the origin to hold N sample items (bench:origin --scale), computed
// with the origin's own code rather than a copy of its arithmetic: a sample of the items is put into the
// very cache the origin uses (reads/ready-items.ts over the slab cache), whose `stats.bytes` is what its
// policy charges them, slab-budget.ts turns N such entries into the bound the slabs need, and hot-tier.ts
// adds the heap tier's share.

import { maxBytesForMaximum } from "../../src/origin/cache/slab-budget.ts";
import { Wire } from "../../src/origin/http/wire.ts";
import { maxBytesWithHotTier } from "../../src/origin/reads/hot-tier.ts";
import { readyItems } from "../../src/origin/reads/ready-items.ts";
import { etagFor } from "../../src/origin/store/etag.ts";
import { sampleItem } from "../../src/origin/store/sample-items.ts";
import { prng } from "../lib/random.ts";

/** Items sampled to estimate the mean charge per entry (the error of the mean is well under 0.1%). */
const SAMPLE = 20_000;
/** Room beyond the estimate, so every one of the N items fits. */
export const SIZING_MARGIN = 1.02;

export interface CacheSizing {
  entries: number;
  /** Mean bytes the cache charges per entry (record + its share of the per-slot structures). */
  chargedBytesPerEntry: number;
  /** CACHE_MAX_BYTES for `entries` × SIZING_MARGIN such entries. */
  cacheMaxBytes: number;
}

/**
 * CACHE_MAX_BYTES for sample items 1…`entries` cached, with a TTL (CACHE_TTL_SECONDS on, the default)
 * and the origin's default wire format (no Date, reason phrases on). ETags are version 1 of a 2-character
 * epoch (the same length whatever the epoch).
 */
export function cacheSizing(entries: number, seed = 7): CacheSizing {
  const sample = Math.min(entries, SAMPLE);
  const cache = readyItems({ maxBytes: 1 << 30, ttlMs: 86_400_000 });
  const wire = new Wire({ sendDate: false, reasonPhrase: true });
  const random = prng(seed);
  const encoder = new TextEncoder();
  const etag = etagFor("Xa", 1);
  // One entry at a time: what the cache charges for it is then the whole of `stats.bytes`.
  let charged = 0;
  for (let i = 0; i < sample; i++) {
    // All of a small range; a uniform sample of a large one (ids of every length in their proportion).
    const n = sample === entries ? i + 1 : 1 + Math.floor(random() * entries);
    const id = String(n);
    cache.set(id, wire.entry({ etag, body: encoder.encode(sampleItem(n)) }));
    if (cache.stats.entries !== 1) throw new Error(`sizing: the sample cache declined item ${id}`);
    charged += cache.stats.bytes;
    cache.delete(id);
  }
  const chargedBytesPerEntry = charged / sample;
  const room = Math.ceil(entries * SIZING_MARGIN);
  const slabMaxBytes = maxBytesForMaximum(Math.ceil(room * chargedBytesPerEntry), room);
  return { entries, chargedBytesPerEntry, cacheMaxBytes: maxBytesWithHotTier(slabMaxBytes) };
}
