import { describe, expect, it } from "vitest";
import { get, once, RawConnection, start, withBody } from "./harness.ts";

function value(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  if (line === undefined) throw new Error(`no series ${series} in\n${text}`);
  return Number(line.slice(series.length + 1));
}

describe("/metrics", () => {
  it("counts requests by route and status, exact bytes written, cache and store activity", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "3" });
    while (!origin.known.stats.ready) await new Promise((resolve) => setImmediate(resolve));
    const c = await RawConnection.open(origin.port);
    let bytes = 0;
    const send = async (req: string | Buffer) => {
      const r = await c.send(req);
      bytes += r.raw.byteLength;
      return r;
    };
    const etag = (await send(get("/items/1"))).header("etag")!; // miss
    await send(get("/items/1")); // hit
    await send(get("/items/1", { "If-None-Match": etag })); // hit
    await send(get("/items/404")); // miss, ruled out by the membership filter
    await send(withBody("PUT", "/items/2", '{"v":1}'));
    await send(withBody("PUT", "/items/2", "{"));
    await send(get("/items/2", {}, "DELETE"));
    await send(get("/elsewhere"));

    const port = Number(new URL(origin.metricsUrl!).port);
    const text = (await once(port, get("/metrics"))).body.toString();
    const req = (route: string, method: string, status: number) =>
      value(text, `origin_http_requests_total{route="${route}",method="${method}",status="${status}"}`);
    expect(req("/items/:id", "GET", 200)).toBe(2);
    expect(req("/items/:id", "GET", 304)).toBe(1);
    expect(req("/items/:id", "GET", 404)).toBe(1);
    expect(req("/items/:id", "PUT", 204)).toBe(1);
    expect(req("/items/:id", "PUT", 400)).toBe(1);
    expect(req("/items/:id", "DELETE", 204)).toBe(1);
    expect(req("other", "GET", 404)).toBe(1);
    expect(value(text, "origin_http_response_bytes_total")).toBe(bytes);
    expect(value(text, "origin_cache_hits_total")).toBe(2);
    expect(value(text, "origin_cache_misses_total")).toBe(2);
    expect(value(text, "origin_cache_entries")).toBe(origin.cache.stats.entries);
    expect(value(text, "origin_cache_bytes")).toBe(origin.cache.stats.bytes);
    expect(value(text, "origin_cache_evictions_total")).toBe(0);
    expect(value(text, "origin_store_reads_total")).toBe(1);
    expect(value(text, "origin_filter_rejections_total")).toBe(1);
    expect(value(text, "origin_filter_ready")).toBe(1);
    expect(value(text, 'origin_store_duration_seconds_count{op="get",outcome="ok"}')).toBe(1);
    expect(value(text, 'origin_store_duration_seconds_count{op="put",outcome="ok"}')).toBe(1);
    expect(value(text, 'origin_store_duration_seconds_count{op="delete",outcome="ok"}')).toBe(1);
  });

  it("METRICS_PORT=off serves /metrics and /healthz on the item port", async () => {
    const origin = await start({ METRICS_PORT: "off" });
    expect(origin.metricsUrl).toBeUndefined();
    expect((await once(origin.port, get("/healthz"))).status).toBe(204);
    const m = await once(origin.port, get("/metrics"));
    expect(m.status).toBe(200);
    expect(m.body.toString()).toContain("origin_http_requests_total");
  });
});
