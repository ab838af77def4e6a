// The cache counters of one origin instance, read from its /metrics (on the item port: METRICS_PORT=off).

import { request } from "node:http";

export interface CacheCounters {
  hits: number;
  misses: number;
  storeReads: number;
}

export function scrapeCache(port: number): Promise<CacheCounters> {
  return new Promise((resolve, reject) => {
    // A connection of its own (agent: false): /metrics is served by node:http, not the fast path.
    const req = request({ host: "127.0.0.1", port, path: "/metrics", agent: false }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.once("end", () => {
        try {
          const value = (name: string) => counter(text, name, port);
          resolve({ hits: value("origin_cache_hits_total"), misses: value("origin_cache_misses_total"), storeReads: value("origin_store_reads_total") });
        } catch (error) {
          reject(error);
        }
      });
    });
    req.setTimeout(5000, () => req.destroy(new Error(`/metrics on port ${port}: no answer within 5 s`)));
    req.once("error", reject);
    req.end();
  });
}

function counter(text: string, name: string, port: number): number {
  const match = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
  if (match === null) throw new Error(`/metrics on port ${port} has no ${name}`);
  return Number(match[1]);
}

export function minus(a: CacheCounters, b: CacheCounters): CacheCounters {
  return { hits: a.hits - b.hits, misses: a.misses - b.misses, storeReads: a.storeReads - b.storeReads };
}

export function plus(a: CacheCounters, b: CacheCounters): CacheCounters {
  return { hits: a.hits + b.hits, misses: a.misses + b.misses, storeReads: a.storeReads + b.storeReads };
}
