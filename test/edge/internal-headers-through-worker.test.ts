import { describe, expect, it } from "vitest";
import {
  INTERNAL_REQUEST_NAMES,
  INTERNAL_REQUEST_PREFIXES,
  INTERNAL_RESPONSE_NAMES,
  INTERNAL_RESPONSE_PREFIXES,
} from "../../src/edge/headers/strip.ts";
import { ALLOW_LIST, callEdge, fakeOrigin } from "./support/edge.ts";

// Every listed name, plus one sample of every family, with a value that says where it came from.
function internalHeaders(names: readonly string[], prefixes: readonly string[], tag: string): [string, string][] {
  return [...names, ...prefixes.map((prefix) => `${prefix}sample`)].map((name) => [name, `${tag}-${name}`]);
}

const lower = (pairs: [string, string][]) => pairs.map(([name, value]) => [name.toLowerCase(), value] as [string, string]);

describe("internal headers through the worker", () => {
  it("a client request carrying every listed name reaches the origin with none of them; the rest arrive identical", async () => {
    const internal = internalHeaders(INTERNAL_REQUEST_NAMES, INTERNAL_REQUEST_PREFIXES, "client");
    const ordinary: [string, string][] = [
      ["accept", "application/json"],
      ["authorization", "Bearer abc.def"],
      ["if-none-match", 'W/"v0", "v9"'],
      ["user-agent", "Mozilla/5.0 (X11; Linux x86_64)"],
      ["x-app-build", "2026.11.21 +rc1"],
      ["cookie", "a=1; b=2"],
    ];
    const origin = await fakeOrigin();
    const res = await callEdge({ ...ALLOW_LIST, ORIGIN_URL: origin.url, ORIGIN_TOKEN: "edge-secret" }, "/items/1", {
      headers: [...internal, ...ordinary],
    });
    expect(res.status).toBe(200);
    const [received] = await origin.requests();
    const arrived = lower(received!.headers);
    const leaked = arrived.filter(([name, value]) => value.startsWith("client-") || internal.some(([listed]) => listed === name && name !== "x-origin-token"));
    expect(leaked).toEqual([]);
    expect(arrived.filter(([name]) => name === "x-origin-token")).toEqual([["x-origin-token", "edge-secret"]]);
    for (const header of ordinary) expect(arrived).toContainEqual(header);
  });

  it("an origin response carrying every listed name reaches the client with none of them, on a miss and on a hit", async () => {
    const internal = internalHeaders(INTERNAL_RESPONSE_NAMES, INTERNAL_RESPONSE_PREFIXES, "origin");
    const ordinary: [string, string][] = [
      ["etag", '"v1"'],
      ["cache-control", "max-age=30"],
      ["x-app-version", "7.1.0"],
      ["content-language", "en"],
    ];
    const origin = await fakeOrigin({ status: 200, headers: [...internal, ...ordinary], body: '{"id":"1"}' });
    const vars = { ...ALLOW_LIST, ORIGIN_URL: origin.url, EDGE_CACHE_TTL: "3600" };
    for (const pass of ["miss", "hit"]) {
      const res = await callEdge(vars, "/items/1", { headers: { origin: "https://app.example.com" } });
      expect(await res.text(), pass).toBe('{"id":"1"}');
      const served = [...res.headers];
      expect(served.filter(([, value]) => value.startsWith("origin-")), pass).toEqual([]);
      for (const header of ordinary) expect(served, pass).toContainEqual(header);
      // The only CORS headers are the edge's own.
      expect(served.filter(([name]) => name.startsWith("access-control-")).map(([name]) => name).sort(), pass).toEqual([
        "access-control-allow-origin",
        "access-control-expose-headers",
      ]);
    }
    expect(await origin.requests()).toHaveLength(1);
  });

  it("drops Connection and the fields it names, both ways (RFC 9110 §7.6.1), on a miss and on a hit", async () => {
    const origin = await fakeOrigin({
      status: 200,
      headers: [["ETag", '"v1"'], ["Connection", "X-Hop-Out, keep-alive"], ["X-Hop-Out", "origin-hop"], ["X-App-Version", "7"]],
      body: '{"id":"1"}',
    });
    const vars = { ...ALLOW_LIST, ORIGIN_URL: origin.url, EDGE_CACHE_TTL: "3600" };
    for (const pass of ["miss", "hit"]) {
      const res = await callEdge(vars, "/items/1", { headers: { connection: "X-Hop-In", "x-hop-in": "client-hop", "x-app-build": "9" } });
      expect(await res.text(), pass).toBe('{"id":"1"}');
      expect(res.headers.has("x-hop-out"), pass).toBe(false);
      expect(res.headers.has("connection"), pass).toBe(false);
      expect(res.headers.get("x-app-version"), pass).toBe("7");
    }
    const [received] = await origin.requests();
    const arrived = lower(received!.headers);
    expect(arrived.filter(([name]) => name === "x-hop-in")).toEqual([]);
    expect(arrived).toContainEqual(["x-app-build", "9"]);
  });
});
