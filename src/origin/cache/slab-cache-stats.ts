// What the off-heap cache reports about itself (SlabCache's `stats` and `diagnostics`), for metrics
// and benchmarks: their own file so the cache's file is its behaviour.

export interface SlabCacheStats {
  hits: number;
  misses: number;
  /** Entries dropped to stay within `maxBytes` (by the policy, or declined on arrival). */
  evictions: number;
  /** Entries dropped because their TTL ran out. */
  expirations: number;
  entries: number;
  /** What the policy counts: each entry's record plus its share of the per-entry structures. */
  bytes: number;
  /** Every ArrayBuffer the cache holds (slabs, dedicated buffers, index, policy, sketch, ghosts). */
  allocatedBytes: number;
}

/** Where the memory is and what compaction cost, for benchmarks and metrics. */
export interface SlabCacheDiagnostics {
  slabBytes: number;
  structureBytes: number;
  compactedBytes: number;
  /** Slabs and dedicated buffers allocated so far. */
  bufferAllocations: number;
  /** Entries evicted because memory ran out before the policy's weights said so. */
  pressureEvictions: number;
  policyMaximum: number;
}
