// One /metrics page for every origin process on the machine, served by the primary: each worker's registry
// (asked for over IPC when the page is scraped) merged with prom-client's AggregatorRegistry.
//
// - Every series keeps its name and labels and means the machine: counters and histograms are summed, and
//   so are the gauges that measure amounts (cache entries and bytes, CACHE_MAX_BYTES: the machine holds N
//   caches, open connections, memory). A few gauges are not amounts: `origin_feed_healthy` and
//   `origin_filter_ready` are the minimum (0 if any process's feed is down or filter not ready), a
//   per-process limit (`process_max_fds`) the minimum too, `origin_purge_state` the maximum (only the leading
//   process has one); prom-client's own choices stand for its default metrics (event-loop lag averaged,
//   start time omitted).
// - Where one process differs from the others in a way worth seeing (load spread, each cache's hit ratio,
//   a feed that is down in one process, memory), a twin series `origin_worker_<name>{worker="N"}` carries
//   that process's value, summed over the original's labels. A separate name, not a `worker` label on the
//   original: `sum(origin_http_requests_total)` stays the machine's total, and N processes do not multiply
//   every series.
// - The primary's own: `origin_cluster_processes` (ORIGIN_PROCESSES), `origin_cluster_worker_up{worker}`
//   (1 when that slot's process answered this scrape), `origin_cluster_worker_info{worker,pid}` and
//   `origin_cluster_worker_restarts_total{worker}`.
//
// `worker` is the slot, 1…N: a replacement keeps the number of the process it replaces (its pid changes).
//
// The machine's counters (and histograms) never go backwards, which Prometheus would read as a reset (a false
// spike in rate()): a worker that does not answer a scrape (paused, slow, restarting) counts with what its
// last answer said (CounterMemory), and a replaced worker's last counts stay in every later sum. Its twins
// are the one process's own, and start again with the new process, as any process's counters do.

import { AggregatorRegistry, type Aggregator } from "prom-client";
import type { WorkerMetrics } from "./messages.ts";

type Metric = WorkerMetrics[number];

/** Gauges that are not amounts; every other series is summed. */
const AGGREGATOR: Readonly<Record<string, Aggregator>> = {
  origin_feed_healthy: "min",
  origin_filter_ready: "min",
  // One process leads the purge; the others have no purger and report no state.
  origin_purge_state: "max",
  process_max_fds: "min",
};

/** Series worth a per-process twin: source name → twin name. */
const PER_WORKER: Readonly<Record<string, string>> = {
  origin_http_requests_total: "origin_worker_http_requests_total",
  origin_cache_hits_total: "origin_worker_cache_hits_total",
  origin_cache_misses_total: "origin_worker_cache_misses_total",
  origin_cache_entries: "origin_worker_cache_entries",
  origin_feed_healthy: "origin_worker_feed_healthy",
  process_resident_memory_bytes: "origin_worker_resident_memory_bytes",
};

export interface WorkerScrape {
  slot: number;
  pid: number | undefined;
  restarts: number;
  /** undefined: the process did not answer (starting, restarting, or too slow). */
  metrics: WorkerMetrics | undefined;
}

/** Cumulative series: the ones a sum must never lose (a summary's quantiles are not; none is registered). */
const CUMULATIVE = new Set(["counter", "histogram"]);
const isCumulative = (metric: Metric) => CUMULATIVE.has(String(metric.type));

/** Each slot's last answer (its cumulative series), and the counts of the processes replaced since start. */
export class CounterMemory {
  readonly #last = new Map<number, { pid: number | undefined; counts: Metric[] }>();
  #retired: Metric[][] = [];

  /** The cumulative series to add to this scrape's sum for workers that did not answer, and for those replaced. */
  async missing(workers: readonly WorkerScrape[]): Promise<Metric[][]> {
    const sets: Metric[][] = [];
    for (const worker of workers) {
      const last = this.#last.get(worker.slot);
      if (worker.metrics !== undefined) {
        // A new process in the slot: the old one's last counts are kept for good.
        if (last !== undefined && last.pid !== worker.pid) this.#retired.push(last.counts);
        this.#last.set(worker.slot, { pid: worker.pid, counts: worker.metrics.filter(isCumulative).map((m) => ({ ...m, aggregator: "sum" })) });
      } else if (last !== undefined) {
        sets.push(last.counts);
      }
    }
    const retired = this.#retired;
    if (retired.length > 1) {
      // Taken before the await: a scrape running beside this one may retire a process meanwhile.
      this.#retired = [];
      const merged = (await AggregatorRegistry.aggregate(retired).getMetricsAsJSON()) as Metric[];
      this.#retired.unshift(merged.map((m) => ({ ...m, aggregator: "sum" })));
    }
    return [...sets, ...this.#retired];
  }
}

export async function renderClusterMetrics(
  processes: number,
  workers: readonly WorkerScrape[],
  memory?: CounterMemory,
): Promise<{ body: string; contentType: string }> {
  const sets: Metric[][] = [...((await memory?.missing(workers)) ?? [])];
  const twins = new Map<string, Metric>();
  for (const worker of workers) {
    if (worker.metrics === undefined) continue;
    const set: Metric[] = [];
    for (const metric of worker.metrics) {
      set.push({ ...metric, aggregator: AGGREGATOR[metric.name] ?? metric.aggregator });
      const twinName = PER_WORKER[metric.name];
      if (twinName !== undefined) {
        const total = metric.values.reduce((sum, v) => sum + v.value, 0);
        series(twins, twinName, `${metric.help} (one process: worker is its slot, 1…${processes})`, metric.type).values.push({ labels: { worker: worker.slot }, value: total });
      }
    }
    sets.push(set);
  }
  const own = new Map<string, Metric>();
  series(own, "origin_cluster_processes", "Worker processes the primary keeps running (ORIGIN_PROCESSES)", "gauge").values.push({ labels: {}, value: processes });
  for (const worker of workers) {
    const labels = { worker: worker.slot };
    series(own, "origin_cluster_worker_up", "1 when the worker in this slot answered this scrape", "gauge").values.push({ labels, value: worker.metrics === undefined ? 0 : 1 });
    series(own, "origin_cluster_worker_restarts_total", "Times the primary replaced the worker in this slot", "counter").values.push({ labels, value: worker.restarts });
    if (worker.pid !== undefined) {
      series(own, "origin_cluster_worker_info", "The process serving each slot", "gauge").values.push({ labels: { worker: worker.slot, pid: worker.pid }, value: 1 });
    }
  }
  sets.push([...twins.values(), ...own.values()]);
  const registry = AggregatorRegistry.aggregate(sets);
  return { body: await registry.metrics(), contentType: registry.contentType };
}

function series(into: Map<string, Metric>, name: string, help: string, type: Metric["type"] | "gauge" | "counter"): Metric {
  let metric = into.get(name);
  if (metric === undefined) {
    metric = { name, help, type: type as Metric["type"], aggregator: "sum", values: [] } as unknown as Metric;
    into.set(name, metric);
  }
  return metric;
}
