// In-process cost of one cache hit as the origin pays it (issue 12): `readyItems().get(id)` plus the
// strings a 304 (ETag check, 304 bytes) or a 200 (the whole response) needs, on a cache of few entries
// against caches of millions. Sized with the origin's own sizing (scale-sizing.ts), filled with the
// sample items. Ids are drawn uniformly over the cached ones, or (--ids hot) over some of them picked
// at random, as many as the smallest size holds (bench:origin --scale's workloads). Prints ns per hit
// and the ratio to the smallest size measured in the same run (sizes interleaved per round, so drift
// hits every size alike).
//
//   node bench/origin/hit-path.ts [--sizes 1000,1000000,5000000] [--ids uniform|hot] [--rounds 5] [--hits 2000000]

import { Wire } from "../../src/origin/http/wire.ts";
import { readyItems, type ReadyItems } from "../../src/origin/reads/ready-items.ts";
import { etagFor } from "../../src/origin/store/etag.ts";
import { sampleItem } from "../../src/origin/store/sample-items.ts";
import { prng } from "../lib/random.ts";
import { BenchCli } from "../lib/cli.ts";
import { hotSet } from "./hot-set.ts";
import { parseSizes, ScaleArgsError } from "./scale-args.ts";
import { cacheSizing } from "./scale-sizing.ts";

const cli: BenchCli = new BenchCli(
  "hit-path",
  "usage: node bench/origin/hit-path.ts [--sizes 1000,1M] [--ids uniform|hot] [--rounds 5] [--hits 2000000]\n" +
    "  --sizes  entries per cache, comma-separated (k and M suffixes); the smallest is the baseline   default 1000,1M",
  {
    sizes: { type: "string", default: "1000,1000000" },
    ids: { type: "string", default: "uniform" },
    rounds: { type: "string", default: "5" },
    hits: { type: "string", default: "2000000" },
  },
);
const idsOption = cli.string("ids");
if (idsOption !== "uniform" && idsOption !== "hot") cli.refuse(`--ids: uniform or hot, got ${JSON.stringify(idsOption)}`);
const hot = idsOption === "hot";
let sizes: number[];
try {
  sizes = parseSizes(cli.string("sizes")!); // ascending: the first is the smallest, the baseline
} catch (error) {
  if (!(error instanceof ScaleArgsError)) throw error;
  cli.refuse(error.message);
}
const rounds = cli.wholeNumber("rounds", cli.string("rounds"));
const hits = cli.wholeNumber("hits", cli.string("hits"));

function filled(entries: number): ReadyItems {
  const items = readyItems({ maxBytes: cacheSizing(entries).cacheMaxBytes, ttlMs: 86_400_000 });
  const wire = new Wire({ sendDate: false, reasonPhrase: true });
  const encoder = new TextEncoder();
  const etag = etagFor("Xa", 1);
  for (let n = 1; n <= entries; n++) items.set(String(n), wire.entry({ etag, body: encoder.encode(sampleItem(n)) }));
  if (items.stats.entries < entries * 0.999) throw new Error(`hit-path: ${entries} entries asked, ${items.stats.entries} held`);
  return items;
}

/** Ids drawn before timing (as the transport hands them over: strings already made). */
function draws(entries: number, count: number, seed: number): string[] {
  const random = prng(seed);
  const ids = hot ? hotSet(1, entries, Math.min(...sizes), seed) : undefined;
  return Array.from({ length: count }, () => String(ids ? ids[Math.floor(random() * ids.length)]! : 1 + Math.floor(random() * entries)));
}

let sink = 0;
function run(items: ReadyItems, ids: string[], path: "304" | "200"): number {
  const etag = etagFor("Xa", 1);
  const start = process.hrtime.bigint();
  for (let i = 0; i < ids.length; i++) {
    const entry = items.get(ids[i]!);
    if (entry === undefined || !entry.found) continue;
    if (path === "304") sink += entry.etag === etag ? entry.r304.length : 0;
    else sink += entry.r200.length;
  }
  return Number(process.hrtime.bigint() - start) / ids.length;
}

const caches = sizes.map((n) => {
  const t = performance.now();
  const items = filled(n);
  process.stderr.write(`hit-path: filled ${n} in ${((performance.now() - t) / 1000).toFixed(1)} s\n`);
  return { n, items, ids: draws(n, hits, n) };
});
const results = new Map<string, number[]>();
for (let round = 0; round < rounds; round++) {
  for (const path of ["304", "200"] as const) {
    for (const { n, items, ids } of caches) {
      const key = `${n} ${path}`;
      const list = results.get(key) ?? [];
      list.push(run(items, ids, path));
      results.set(key, list);
    }
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log("| entries | path | ns/hit (median) | × smallest |");
console.log("|---|---|---|---|");
for (const path of ["304", "200"]) {
  const base = median(results.get(`${sizes[0]} ${path}`)!);
  for (const n of sizes) {
    const m = median(results.get(`${n} ${path}`)!);
    console.log(`| ${n} | ${path} | ${m.toFixed(0)} | ${(m / base).toFixed(2)} |`);
  }
}
if (sink === 0.5) console.log(sink);
