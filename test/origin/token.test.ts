import { describe, expect, it } from "vitest";
import { TokenCheck } from "../../src/origin/http/token-check.ts";
import { epochOf, etagFor, get, once, RawConnection, start, withBody } from "./harness.ts";

const SECRET = "s3cret-token-0123456789abcdef";

describe("ORIGIN_TOKEN", () => {
  it("refuses every request on the item port without the matching x-origin-token", async () => {
    const origin = await start({ ORIGIN_TOKEN: SECRET, SEED_SAMPLE_ITEMS: "1" });
    const refused = [
      get("/items/1"),
      get("/items/1", { "x-origin-token": "wrong" }),
      get("/items/1", { "x-origin-token": `${SECRET}x` }),
      get("/items/1", { "x-origin-token": SECRET.slice(0, -1) }),
      get("/items/1", { "x-origin-token": SECRET.toUpperCase() }),
      get("/items/1", { "X-Origin-Token": "" }),
      // Two tokens are ambiguous, even if one is right.
      `GET /items/1 HTTP/1.1\r\nHost: o\r\nx-origin-token: ${SECRET}\r\nx-origin-token: other\r\n\r\n`,
      get("/items/nope"),
      get("/healthz"),
      get("/metrics"),
      withBody("PUT", "/items/1", '{"v":"stolen"}'),
      get("/items/1", {}, "DELETE"),
    ];
    const c = await RawConnection.open(origin.port);
    for (const request of refused) {
      const r = await c.send(request);
      expect(r.status, String(request).split("\r\n")[0]).toBe(401);
      expect(JSON.parse(r.body.toString())).toEqual({ error: "missing or wrong x-origin-token" });
    }
    // Nothing changed, and the right token works (header name is case-insensitive).
    const ok = await c.send(get("/items/1", { "X-Origin-Token": SECRET }));
    expect(ok.status).toBe(200);
    expect(ok.header("etag")).toBe(etagFor(epochOf(ok.header("etag")), 1)); // the seeded version: nothing written
    // PORT serves /healthz and /metrics too, behind the token, even with METRICS_PORT set.
    expect(origin.metricsUrl).toBeDefined();
    expect((await c.send(get("/healthz", { "x-origin-token": SECRET }))).status).toBe(204);
    expect((await c.send(get("/metrics", { "x-origin-token": SECRET }))).status).toBe(200);
    const put = await c.send(withBody("PUT", "/items/1", '{"v":2}', { "Content-Type": "application/json", "x-origin-token": SECRET }));
    expect(put.status).toBe(204);
  });

  it("leaves the separate metrics port unchecked (it is meant to be private)", async () => {
    const origin = await start({ ORIGIN_TOKEN: SECRET });
    const port = Number(new URL(origin.metricsUrl!).port);
    expect((await once(port, get("/healthz"))).text).toBe("HTTP/1.1 204 No Content\r\n\r\n");
    const metrics = await once(port, get("/metrics"));
    expect(metrics.status).toBe(200);
    expect(metrics.header("content-type")).toMatch(/^text\/plain/);
    // The metrics port serves nothing else.
    expect((await once(port, get("/items/1"))).status).toBe(404);
  });

  it("accepts exactly the secret: no prefix, extension or leftover from an earlier check passes", () => {
    const check = new TokenCheck(SECRET);
    expect(check.accepts(SECRET)).toBe(true);
    expect(check.accepts(undefined)).toBe(false);
    expect(check.accepts("")).toBe(false);
    expect(check.accepts(SECRET.slice(0, 5))).toBe(false); // the scratch still held SECRET: zeroed first
    expect(check.accepts(SECRET)).toBe(true);
    expect(check.accepts(`${SECRET}\0`)).toBe(false);
    expect(check.accepts(`${SECRET}x`)).toBe(false);
    expect(check.accepts("x".repeat(10_000))).toBe(false);
    expect(check.accepts(SECRET.replace(/.$/, "\u00ff"))).toBe(false);
    expect(() => new TokenCheck("with space")).toThrow();
  });
});
