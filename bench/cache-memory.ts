/**
 * Does the off-heap cache hold what it says, and keep the heap flat? Three measurements:
 *
 *   accuracy  fill a SlabCache of --max-bytes with a realistic mix of value sizes, then churn it
 *             (random sets, replaces and deletes over twice as many keys as fit); after each phase
 *             compare stats.allocatedBytes with the growth of process.memoryUsage().arrayBuffers
 *             and of RSS, and report how full of real records the bound is and what compaction cost
 *   heap      fill with 10,000 and then 1,000,000 small entries: heapUsed, V8 heap objects (from a
 *             heap snapshot) and the pause of a full GC, beside ReadyCache holding the same entries
 *   hot tier  fill the ready items' heap tier (src/origin/reads/hot-tier.ts) with sample items: heapUsed
 *             growth per entry beside what the tier charges it (HOT_ENTRY_OVERHEAD_BYTES + characters)
 *
 *   node --expose-gc bench/cache-memory.ts [--max-bytes 256MiB] [--churn 1000000] [--entries 1000000] [--skip-ready] [--large]
 */
import { getHeapSnapshot } from "node:v8";
import { parseArgs } from "node:util";
import { ReadyCache } from "../src/origin/cache/ready-cache.ts";
import { metaBytesPerEntry } from "../src/origin/cache/slab-budget.ts";
import { SlabCache } from "../src/origin/cache/slab-cache.ts";
import { Wire } from "../src/origin/http/wire.ts";
import { HOT_ENTRY_OVERHEAD_BYTES, HotTier, hotEntryBytes } from "../src/origin/reads/hot-tier.ts";
import { etagFor } from "../src/origin/store/etag.ts";
import { sampleItem } from "../src/origin/store/sample-items.ts";
import { prng } from "./lib/random.ts";

const { values: args } = parseArgs({
  options: {
    "max-bytes": { type: "string", default: "256MiB" },
    churn: { type: "string", default: "1000000" },
    entries: { type: "string", default: "1000000" },
    "skip-ready": { type: "boolean", default: false },
    large: { type: "boolean", default: false },
  },
});
const gc = globalThis.gc;
if (gc === undefined) throw new Error("run with node --expose-gc bench/cache-memory.ts");
const collect = gc;

const MiB = 2 ** 20;
const maxBytes = parseBytes(args["max-bytes"]);
const random = prng(7);

function parseBytes(text: string): number {
  const match = /^(\d+)(|KiB|MiB|GiB)$/.exec(text);
  if (!match) throw new Error(`--max-bytes: a byte count like 256MiB, got ${text}`);
  return Number(match[1]) * { "": 1, KiB: 1024, MiB: MiB, GiB: 1024 * MiB }[match[2] as "" | "KiB" | "MiB" | "GiB"];
}

/**
 * Value sizes like an origin's entries: 404s, small JSON, some larger items, a few up to the
 * default MAX_ITEM_BYTES (64 KiB). With --large the few are 128-512 KiB instead: records larger than
 * an eighth of a slab get buffers of their own, and their churn is churn in malloc.
 */
function valueLength(): number {
  const r = random();
  if (r < 0.1) return 0;
  if (r < 0.8) return 100 + Math.floor(random() * 500);
  if (r < 0.98) return 1024 + Math.floor(random() * 7 * 1024);
  return args.large ? 128 * 1024 + Math.floor(random() * 384 * 1024) : 8 * 1024 + Math.floor(random() * 56 * 1024);
}

/** Caches under measurement: held here so the optimiser cannot let one die before its snapshot. */
const alive: unknown[] = [];

const source = new Uint8Array(512 * 1024).map((_, i) => (i * 31) & 0xff);

function snapshot(): NodeJS.MemoryUsage {
  collect();
  collect();
  return process.memoryUsage();
}

function pct(part: number, whole: number): string {
  return `${((100 * part) / whole).toFixed(1)}%`;
}

type BoundCache = SlabCache & { maxBytesForBench: number };

/** Distinct keys until the policy has evicted as many as it holds; returns the keys used. */
function fill(cache: BoundCache): { keys: number; sets: number; bytes: number } {
  let sets = 0;
  let bytes = 0;
  while (cache.stats.evictions < Math.max(10_000, cache.stats.entries)) {
    const length = valueLength();
    cache.set(`item-${sets}`, source.subarray(0, length));
    sets++;
    bytes += length;
    if (cache.stats.allocatedBytes > cache.maxBytesForBench) throw new Error("allocatedBytes above maxBytes");
  }
  return { keys: sets, sets, bytes };
}

/** Random gets (set on a miss), replaces with a new size, and deletes over `universe` keys. */
function churn(cache: BoundCache, universe: number, operations: number): { sets: number; bytes: number } {
  let sets = 0;
  let bytes = 0;
  for (let i = 0; i < operations; i++) {
    const key = `item-${Math.floor(random() * universe)}`;
    const r = random();
    if (r < 0.1) {
      cache.delete(key);
    } else if (r < 0.3 || cache.get(key) === -1) {
      const length = valueLength();
      cache.set(key, source.subarray(0, length));
      sets++;
      bytes += length;
    }
    if ((i & 1023) === 0 && cache.stats.allocatedBytes > cache.maxBytesForBench) throw new Error("allocatedBytes above maxBytes");
  }
  return { sets, bytes };
}

function accuracy(): void {
  const operations = Number(args.churn);
  // Warm-up: the same workload on a 4 MiB cache, so that the JIT's code, the young generation and
  // malloc's own bookkeeping reach their steady size before the baseline. Without it, the ~10 MiB of
  // RSS that the same loop grows with no cache at all would be charged to the cache.
  const warm = withBound(new SlabCache({ maxBytes: 4 * MiB, ttlMs: 0 }), 4 * MiB);
  churn(warm, 2 * fill(warm).keys, operations);
  // Held to the end: were it collected at the baseline, the measured cache would reuse its freed
  // pages and seem to grow RSS by less than it holds.
  alive.push(warm);

  const before = snapshot();
  const cache = withBound(new SlabCache({ maxBytes, ttlMs: 0 }), maxBytes);
  const report = (phase: string, seconds: number, sets: number, setBytes: number, copied: number) => {
    const now = snapshot();
    const stats = cache.stats;
    const diagnostics = cache.diagnostics;
    const arrayBuffers = now.arrayBuffers - before.arrayBuffers;
    const rss = now.rss - before.rss;
    const heapTotal = now.heapTotal - before.heapTotal;
    const records = stats.bytes - stats.entries * metaBytesPerEntry(false);
    console.log(`\n${phase} (${seconds.toFixed(1)} s, ${sets.toLocaleString("en-US")} sets)`);
    console.log(`  maxBytes ${(maxBytes / MiB).toFixed(1)} MiB; allocatedBytes ${(stats.allocatedBytes / MiB).toFixed(1)} MiB (${pct(stats.allocatedBytes, maxBytes)} of maxBytes)`);
    console.log(`  arrayBuffers growth ${(arrayBuffers / MiB).toFixed(1)} MiB = ${pct(arrayBuffers, stats.allocatedBytes)} of allocatedBytes`);
    console.log(
      `  RSS growth ${(rss / MiB).toFixed(1)} MiB = ${pct(rss, stats.allocatedBytes)} of allocatedBytes; ` +
        `without the V8 heap's growth (heapTotal ${(heapTotal / MiB).toFixed(1)} MiB) ${pct(rss - heapTotal, stats.allocatedBytes)}; ` +
        `heapUsed growth ${((now.heapUsed - before.heapUsed) / MiB).toFixed(2)} MiB`,
    );
    console.log(
      `  ${stats.entries.toLocaleString("en-US")} entries; the policy counts ${(stats.bytes / MiB).toFixed(1)} MiB of a ${(diagnostics.policyMaximum / MiB).toFixed(1)} MiB maximum; ` +
        `records (header+key+value) ${(records / MiB).toFixed(1)} MiB = ${pct(records, maxBytes)} of maxBytes`,
    );
    console.log(
      `  slabs ${(diagnostics.slabBytes / MiB).toFixed(1)} MiB, other structures ${(diagnostics.structureBytes / MiB).toFixed(1)} MiB ` +
        `(${(diagnostics.structureBytes / Math.max(1, stats.entries)).toFixed(0)} B/entry); buffers allocated ${diagnostics.bufferAllocations}`,
    );
    console.log(
      `  compaction copied ${(copied / Math.max(1, setBytes)).toFixed(2)} B per byte set; evictions ${stats.evictions.toLocaleString("en-US")}, ` +
        `of them under memory pressure (outside the policy) ${diagnostics.pressureEvictions}`,
    );
  };

  let started = performance.now();
  const filled = fill(cache);
  report("after fill", (performance.now() - started) / 1000, filled.sets, filled.bytes, cache.diagnostics.compactedBytes);
  started = performance.now();
  const compactedBefore = cache.diagnostics.compactedBytes;
  const churned = churn(cache, 2 * filled.keys, operations);
  report(
    `after churn over ${(2 * filled.keys).toLocaleString("en-US")} keys`,
    (performance.now() - started) / 1000,
    churned.sets,
    churned.bytes,
    cache.diagnostics.compactedBytes - compactedBefore,
  );
  alive.length = 0;
}

/** The bench checks the bound after every operation; the cache does not expose its options. */
function withBound(cache: SlabCache, bound: number): BoundCache {
  return Object.assign(cache, { maxBytesForBench: bound });
}

function heapObjects(): number {
  collect();
  const text: string[] = [];
  const stream = getHeapSnapshot();
  let chunk: Buffer | null;
  while ((chunk = stream.read() as Buffer | null) !== null) text.push(chunk.toString());
  // The snapshot's header states the node count; the rest (nodes, edges, strings) is not needed.
  const match = /"node_count":(\d+)/.exec(text.join(""));
  return match ? Number(match[1]) : Number.NaN;
}

interface HeapSubject {
  name: string;
  create(): unknown;
  fill(cache: unknown, entries: number): void;
}

function heap(): void {
  const counts = [10_000, Number(args.entries)];
  const value = source.subarray(0, 20);
  const subjects: HeapSubject[] = [
    {
      name: "SlabCache",
      create: () => new SlabCache({ maxBytes: 2 ** 31, ttlMs: 300_000 }),
      fill: (cache, entries) => {
        const slab = cache as SlabCache;
        for (let i = 0; i < entries; i++) slab.set(`item-${i}`, value);
        if (slab.stats.entries !== entries) throw new Error(`SlabCache kept ${slab.stats.entries} of ${entries}`);
      },
    },
  ];
  if (!args["skip-ready"]) {
    subjects.push({
      name: "ReadyCache",
      create: () => new ReadyCache<string>({ maxBytes: 2 ** 40, ttlMs: 300_000 }),
      fill: (cache, entries) => {
        for (let i = 0; i < entries; i++) (cache as ReadyCache<string>).set(`item-${i}`, `${i}`.padEnd(20, "x"), 1);
      },
    });
  }
  console.log(`\nheap: ${counts.map((n) => n.toLocaleString("en-US")).join(" vs ")} entries ("item-<i>" → a 20-byte value), growth from the empty cache`);
  console.log("| cache | entries | heapUsed MiB | heap objects | full GC ms | arrayBuffers MiB |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
  for (const subject of subjects) {
    // Compile the fill path before measuring. The warm-up cache is held until this subject is done:
    // left to die, it lingers in an optimised frame's stack slot and is collected between the two
    // snapshots of a measurement, cancelling the count.
    const warmedUp = subject.create();
    subject.fill(warmedUp, counts[0]!);
    for (const entries of counts) {
      // Objects first, in a pass of their own: taking a heap snapshot moves heapUsed by megabytes.
      let objects = "(not counted)";
      if (subject.name === "SlabCache" || entries <= 100_000) {
        const counted = subject.create();
        alive.push(counted);
        const baseObjects = heapObjects();
        subject.fill(counted, entries);
        objects = (heapObjects() - baseObjects).toLocaleString("en-US");
        alive.length = 0;
      }
      const cache = subject.create();
      alive.push(cache);
      const base = snapshot();
      subject.fill(cache, entries);
      const after = snapshot();
      const started = performance.now();
      collect();
      const pause = performance.now() - started;
      console.log(
        `| ${subject.name} | ${entries.toLocaleString("en-US")} | ${((after.heapUsed - base.heapUsed) / MiB).toFixed(2)} | ${objects} | ${pause.toFixed(1)} | ${((after.arrayBuffers - base.arrayBuffers) / MiB).toFixed(1)} |`,
      );
      alive.length = 0;
    }
    if (warmedUp === undefined) throw new Error("unreachable");
  }
}

/** The tier's entries as the origin holds them: strings sliced from the slab bytes, so none is shared. */
function hotTier(): void {
  const entries = 8192;
  const wire = new Wire({ sendDate: false, reasonPhrase: true });
  const encoder = new TextEncoder();
  const built = Array.from({ length: entries }, (_, i) => {
    const entry = wire.entry({ etag: etagFor("Xa", i + 1), body: encoder.encode(sampleItem(i + 1)) });
    return { id: `${i + 1}`, entry };
  });
  const copy = (s: string) => Buffer.from(s, "latin1").toString("latin1");
  const tier = new HotTier(2 ** 30, () => 0, entries);
  alive.push(tier);
  collect();
  const base = process.memoryUsage().heapUsed;
  let charged = 0;
  let characters = 0;
  for (const [slot, { id, entry }] of built.entries()) {
    if (!entry.found) continue;
    const held = { found: true as const, etag: copy(entry.etag), r200: copy(entry.r200), headLength: entry.headLength, r304: copy(entry.r304) };
    const key = copy(id);
    tier.add(key, held, slot, slot, 0);
    const bytes = hotEntryBytes(key, held);
    charged += bytes;
    characters += bytes - HOT_ENTRY_OVERHEAD_BYTES;
  }
  collect();
  const perEntry = (process.memoryUsage().heapUsed - base) / tier.entries;
  console.log(`\nhot tier: ${tier.entries.toLocaleString("en-US")} sample items`);
  console.log(`  heapUsed growth ${perEntry.toFixed(0)} B per entry: ${(perEntry - characters / tier.entries).toFixed(0)} B beside the characters (charged ${HOT_ENTRY_OVERHEAD_BYTES} B; ${(charged / tier.entries).toFixed(0)} B per entry in all)`);
  alive.length = 0;
}

accuracy();
heap();
hotTier();
