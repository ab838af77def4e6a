// What one origin cache entry really costs (the figure behind ENTRY_OVERHEAD_BYTES in src/origin/http/wire.ts).
// Fills a ReadyCache with N entries `item-<i>`, each its own version (so its own 304: the worst case), and
// divides the growth of heapUsed + arrayBuffers between forced GCs by N.
//   node --expose-gc bench/origin/entry-memory.ts [--body-bytes 61] [--entries 200000]
import { parseArgs } from "node:util";
import { ReadyCache } from "../../src/origin/cache/ready-cache.ts";
import { entryBytes, ENTRY_OVERHEAD_BYTES, Wire, type ReadyEntry } from "../../src/origin/http/wire.ts";
import { etagFor } from "../../src/origin/store/etag.ts";

const { values } = parseArgs({ options: { "body-bytes": { type: "string", default: "61" }, entries: { type: "string", default: "200000" } } });
const gc = globalThis.gc;
if (gc === undefined) throw new Error("run with node --expose-gc");
const N = Number(values.entries);
const size = Number(values["body-bytes"]);
const wire = new Wire({ sendDate: false, reasonPhrase: true });
const cache = new ReadyCache<ReadyEntry>({ maxBytes: 2 ** 40, ttlMs: 300_000 });
const body = Buffer.from(JSON.stringify({ pad: "x".repeat(Math.max(0, size - 10)) }));
gc();
const m0 = process.memoryUsage();
for (let i = 0; i < N; i++) {
  const id = `item-${i}`;
  const e = wire.entry({ etag: etagFor("Xa", i + 1), body });
  cache.set(id, e, entryBytes(id, e));
}
gc();
const m1 = process.memoryUsage();
const real = (m1.heapUsed - m0.heapUsed + (m1.arrayBuffers - m0.arrayBuffers)) / N;
const counted = cache.stats.bytes / N;
console.log(
  `body ${body.length} B, ${cache.stats.entries} entries: counted ${counted.toFixed(0)} B/entry ` +
    `(ENTRY_OVERHEAD_BYTES ${ENTRY_OVERHEAD_BYTES}), measured heap+arrayBuffers ${real.toFixed(0)} B/entry ` +
    `(heap ${((m1.heapUsed - m0.heapUsed) / N).toFixed(0)}, arrayBuffers ${((m1.arrayBuffers - m0.arrayBuffers) / N).toFixed(0)}), ` +
    `rss ${((m1.rss - m0.rss) / N).toFixed(0)} B/entry; overhead beyond id + 200 response: ${(real - counted + ENTRY_OVERHEAD_BYTES).toFixed(0)} B`,
);
