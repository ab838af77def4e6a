import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../src/edge/worker.ts";
import { ALLOW_LIST, fakeOrigin } from "./support/edge.ts";

interface DataPoint {
  blobs?: unknown[];
  doubles?: number[];
  indexes?: unknown[];
}

/** An Analytics Engine dataset that keeps what is written, as the binding would send it. */
function recordingDataset() {
  const points: DataPoint[] = [];
  return { points, dataset: { writeDataPoint: (point: DataPoint) => void points.push(point) } };
}

async function call(env: object, path: string, init?: RequestInit) {
  const ctx = createExecutionContext();
  const res = await worker.fetch(new Request(`https://edge.example.net${path}`, init), env, ctx);
  const body = await res.text();
  await waitOnExecutionContext(ctx);
  return { res, body };
}

describe("production egress metering (Analytics Engine)", () => {
  it("writes one data point per request: class, origin status, head and streamed body bytes", async () => {
    const origin = await fakeOrigin({ status: 200, headers: [["ETag", '"v1"']], body: "x".repeat(1000) });
    const { points, dataset } = recordingDataset();
    const env = { ...ALLOW_LIST, ORIGIN_URL: origin.url, EDGE_CACHE_TTL: "3600", EGRESS: dataset };

    await call(env, "/items/1");
    await call(env, "/items/1");
    await call(env, "/items/1", { method: "OPTIONS", headers: { origin: "https://app.example.com", "access-control-request-method": "GET" } });
    await call(env, "/items/bad.id");

    expect(points.map((p) => p.blobs)).toEqual([["cache-miss"], ["cache-hit"], ["preflight"], ["edge-answer"]]);
    const [status, headBytes, bodyBytes] = points[0]!.doubles!;
    expect(status).toBe(200);
    expect(bodyBytes).toBe(1000);
    // "HTTP/1.1 200 OK\r\n" (17) + "content-length: 1000\r\n" (22) + 'etag: "v1"\r\n' (12) + "\r\n" (2).
    expect(headBytes).toBe(53);
    for (const point of points.slice(1)) expect(point.doubles).toEqual([0, 0, 0]);
  });

  it("writes the data point however the origin body ends: a HEAD that never reads it, too", async () => {
    const origin = await fakeOrigin({ status: 200, headers: [["ETag", '"v1"']], body: "y".repeat(100) });
    const { points, dataset } = recordingDataset();
    const env = { ORIGIN_URL: origin.url, EDGE_CACHE_TTL: "0", EGRESS: dataset };
    await call(env, "/items/1");
    await origin.answer({ status: 200, headers: [["ETag", '"v2"'], ["Cache-Control", "no-store"]], body: "z".repeat(100) });
    await call(env, "/items/1", { method: "HEAD" });
    expect(points.map((p) => [p.blobs?.[0], p.doubles?.[0]])).toEqual([
      ["cache-miss", 200],
      ["cache-revalidate", 200],
    ]);
  });

  it("writes nothing and breaks nothing without the binding", async () => {
    const origin = await fakeOrigin();
    const { res } = await call({ ORIGIN_URL: origin.url }, "/items/1");
    expect(res.status).toBe(200);
  });
});
