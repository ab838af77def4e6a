// Hit ratio and staleness of N instances' caches under the two ways of keeping them fresh, by replaying the
// benchmark's traffic (trace.ts, the same seeded streams and rates as the live run) through the origin's
// own cache (ReadyCache: W-TinyLFU, byte bound, TTL) on a simulated clock:
//
//   feed  CACHE_TTL_SECONDS=86400; every committed write drops the id from every instance `lagMs` after
//         its commit, except the writer's own entry: the feed's report of its own write keeps what that write
//         cached, unless it wrote the id again meanwhile (src/origin/reads/item-loader.ts);
//   ttl   the old behaviour: CACHE_TTL_SECONDS=300 and no feed. The writer caches what it wrote (its own
//         writes are its feed, as with SQLite); the other instances keep serving what they hold until it
//         expires.
//
// Why a replay: the origin has no switch that turns the change feed off with PostgreSQL, and a 300 s TTL
// never expires in a run of a minute, so the live run cannot show the TTL mode's steady state. The replay
// runs `seconds` of simulated traffic (several TTLs) in a few seconds. Like the live run, every instance
// starts with every item cached.
//
// The live traffic sends, for read slot k (at (k+1)/rate s), one read to each instance in turn, and write j
// at (j+1)/writeRate s through instance j mod N; the replay walks the same slots in time order.

import { ReadyCache } from "../../src/origin/cache/ready-cache.ts";
import { TraceSource, type TraceSpec } from "./trace.ts";

export interface ReplayOptions extends TraceSpec {
  instances: number;
  readsPerSecond: number;
  writesPerSecond: number;
  seconds: number;
  mode: "feed" | "ttl";
  ttlSeconds: number;
  /** feed: commit → the id dropped on every instance, ms. */
  lagMs: number;
  /** Staleness ages above this count as beyond the bound, ms. */
  boundMs: number;
  cacheMaxBytes: number;
  /** What one entry counts against cacheMaxBytes. */
  entryBytes: number;
  /** Also count reads within these spans (ms from the start) apart: the live run's plain windows. */
  spansMs?: readonly (readonly [number, number])[];
}

export interface ReplayInstance {
  reads: number;
  hits: number;
  misses: number;
  /** Hits that served an older version than the last committed write. */
  stale: number;
  /** Of those, older than the bound. */
  beyondBound: number;
  maxStaleAgeMs: number;
}

export interface ReplayResult {
  mode: "feed" | "ttl";
  seconds: number;
  writes: number;
  instances: ReplayInstance[];
  /** Per instance, the reads within `spansMs` only (a like-for-like check of the replay against the live run). */
  inSpans: { reads: number; hits: number }[];
}

export function replay(options: ReplayOptions): ReplayResult {
  let now = 0;
  const clock = () => now;
  const caches = Array.from(
    { length: options.instances },
    () => new ReadyCache<number>({ maxBytes: options.cacheMaxBytes, ttlMs: options.ttlSeconds * 1000, now: clock }),
  );
  const trace = new TraceSource(options);
  const version = new Int32Array(options.items + 1).fill(1);
  /** Per id, when each write committed: commits[id][v - 2] is when version v was committed. */
  const commits = new Map<number, number[]>();
  const stats: ReplayInstance[] = caches.map(() => ({ reads: 0, hits: 0, misses: 0, stale: 0, beyondBound: 0, maxStaleAgeMs: 0 }));
  const inSpans = caches.map(() => ({ reads: 0, hits: 0 }));
  const spans = options.spansMs ?? [];
  const inSpan = (t: number) => spans.some(([from, to]) => t >= from && t < to);
  // Pending feed invalidations, in commit order (a constant lag keeps them sorted).
  const dropAt: number[] = [];
  const dropId: number[] = [];
  const dropVersion: number[] = [];
  let dropHead = 0;
  /** Per instance, id → the version its own last write cached, until the feed reports a change to the id. */
  const awaited = caches.map(() => new Map<number, number>());

  for (const cache of caches) for (let id = 1; id <= options.items; id++) cache.set(String(id), 1, options.entryBytes);

  const endMs = options.seconds * 1000;
  const readGap = 1000 / options.readsPerSecond;
  const writeGap = options.writesPerSecond > 0 ? 1000 / options.writesPerSecond : Number.POSITIVE_INFINITY;
  let nextRead = readGap;
  let nextWrite = writeGap;
  let writes = 0;

  while (Math.min(nextRead, nextWrite) <= endMs) {
    now = Math.min(nextRead, nextWrite);
    while (dropHead < dropAt.length && dropAt[dropHead]! <= now) {
      const id = dropId[dropHead]!;
      for (let i = 0; i < caches.length; i++) {
        const own = awaited[i]!.get(id);
        awaited[i]!.delete(id);
        if (own !== dropVersion[dropHead]) caches[i]!.delete(String(id));
      }
      dropHead++;
    }
    if (nextWrite <= nextRead) {
      const writer = writes % options.instances;
      writes++;
      nextWrite += writeGap;
      const id = trace.writeId();
      if (id === undefined) continue;
      version[id]!++;
      let times = commits.get(id);
      if (times === undefined) commits.set(id, (times = []));
      times.push(now);
      caches[writer]!.set(String(id), version[id]!, options.entryBytes);
      if (options.mode === "feed") {
        awaited[writer]!.set(id, version[id]!);
        dropAt.push(now + options.lagMs);
        dropId.push(id);
        dropVersion.push(version[id]!);
      }
      continue;
    }
    nextRead += readGap;
    const counted = spans.length > 0 && inSpan(now);
    for (let i = 0; i < caches.length; i++) {
      const id = trace.readId();
      const key = String(id);
      const s = stats[i]!;
      s.reads++;
      if (counted) inSpans[i]!.reads++;
      const cached = caches[i]!.get(key);
      if (cached === undefined) {
        s.misses++;
        caches[i]!.set(key, version[id]!, options.entryBytes);
        continue;
      }
      s.hits++;
      if (counted) inSpans[i]!.hits++;
      if (cached < version[id]!) {
        // Stale since the write that made version cached + 1.
        const age = now - commits.get(id)![cached - 1]!;
        s.stale++;
        if (age > options.boundMs) s.beyondBound++;
        if (age > s.maxStaleAgeMs) s.maxStaleAgeMs = age;
      }
    }
  }
  return { mode: options.mode, seconds: options.seconds, writes, instances: stats, inSpans };
}
