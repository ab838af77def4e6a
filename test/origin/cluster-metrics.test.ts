// The primary's merged /metrics page (cluster/cluster-metrics.ts) from workers' registries built here.
import { Counter, Gauge, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { CounterMemory, renderClusterMetrics } from "../../src/origin/cluster/cluster-metrics.ts";
import { parseMetrics } from "./cluster-harness.ts";

async function workerRegistry(requests: number, entries: number, feedHealthy: 0 | 1): Promise<Awaited<ReturnType<Registry["getMetricsAsJSON"]>>> {
  const registry = new Registry();
  new Counter({ name: "origin_http_requests_total", help: "Requests", labelNames: ["route", "status"], registers: [registry] }).inc({ route: "/items/:id", status: "200" }, requests);
  new Gauge({ name: "origin_cache_entries", help: "Entries", registers: [registry] }).set(entries);
  new Gauge({ name: "origin_feed_healthy", help: "Feed", registers: [registry] }).set(feedHealthy);
  return registry.getMetricsAsJSON();
}

describe("merged cluster metrics", () => {
  it("sums counters and amounts, takes the minimum of feed health, and adds per-worker twins and the primary's own", async () => {
    const { body, contentType } = await renderClusterMetrics(3, [
      { slot: 1, pid: 101, restarts: 0, metrics: await workerRegistry(5, 10, 1) },
      { slot: 2, pid: 202, restarts: 2, metrics: await workerRegistry(7, 20, 0) },
      { slot: 3, pid: undefined, restarts: 1, metrics: undefined }, // restarting: did not answer
    ]);
    expect(contentType).toMatch(/^text\/plain/);
    const page = parseMetrics(body);
    expect(page.value("origin_http_requests_total", { route: "/items/:id", status: "200" })).toBe(12);
    expect(page.value("origin_cache_entries")).toBe(30);
    expect(page.value("origin_feed_healthy")).toBe(0);
    expect(page.value("origin_worker_http_requests_total", { worker: "1" })).toBe(5);
    expect(page.value("origin_worker_http_requests_total", { worker: "2" })).toBe(7);
    expect(page.value("origin_worker_http_requests_total", { worker: "3" })).toBeUndefined();
    expect(page.value("origin_worker_feed_healthy", { worker: "2" })).toBe(0);
    expect(page.value("origin_worker_cache_entries", { worker: "1" })).toBe(10);
    expect(page.value("origin_cluster_processes")).toBe(3);
    expect([1, 2, 3].map((w) => page.value("origin_cluster_worker_up", { worker: String(w) }))).toEqual([1, 1, 0]);
    expect([1, 2, 3].map((w) => page.value("origin_cluster_worker_restarts_total", { worker: String(w) }))).toEqual([0, 2, 1]);
    expect(page.value("origin_cluster_worker_info", { worker: "2", pid: "202" })).toBe(1);
    expect(page.value("origin_cluster_worker_info", { worker: "3" })).toBeUndefined();
    expect(body).toContain("# TYPE origin_worker_http_requests_total counter");
    expect(body).toContain("# TYPE origin_cluster_worker_up gauge");
  });

  it("never lets a counter go backwards: a worker that does not answer counts with its last answer, a replaced one's counts stay", async () => {
    const memory = new CounterMemory();
    const total = async (workers: Parameters<typeof renderClusterMetrics>[1]) =>
      parseMetrics((await renderClusterMetrics(2, workers, memory)).body);
    const first = await total([
      { slot: 1, pid: 101, restarts: 0, metrics: await workerRegistry(5, 10, 1) },
      { slot: 2, pid: 202, restarts: 0, metrics: await workerRegistry(7, 20, 1) },
    ]);
    expect(first.value("origin_http_requests_total", { route: "/items/:id", status: "200" })).toBe(12);
    // Worker 2 paused: its last counts stand in for it; its amounts (cache entries) are not guessed.
    const paused = await total([
      { slot: 1, pid: 101, restarts: 0, metrics: await workerRegistry(6, 10, 1) },
      { slot: 2, pid: 202, restarts: 0, metrics: undefined },
    ]);
    expect(paused.value("origin_http_requests_total", { route: "/items/:id", status: "200" })).toBe(13);
    expect(paused.value("origin_cache_entries")).toBe(10);
    // Worker 2 replaced twice (pids 203, 204), each starting from zero: every old process's counts stay.
    const replaced = await total([
      { slot: 1, pid: 101, restarts: 0, metrics: await workerRegistry(6, 10, 1) },
      { slot: 2, pid: 203, restarts: 1, metrics: await workerRegistry(2, 1, 1) },
    ]);
    expect(replaced.value("origin_http_requests_total", { route: "/items/:id", status: "200" })).toBe(6 + 7 + 2);
    const again = await total([
      { slot: 1, pid: 101, restarts: 0, metrics: await workerRegistry(6, 10, 1) },
      { slot: 2, pid: 204, restarts: 2, metrics: await workerRegistry(1, 1, 1) },
    ]);
    expect(again.value("origin_http_requests_total", { route: "/items/:id", status: "200" })).toBe(6 + 7 + 2 + 1);
    expect(again.value("origin_worker_http_requests_total", { worker: "2" })).toBe(1); // the one process's own
  });
});
