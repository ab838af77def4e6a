import { describe, expect, it } from "vitest";
import { ALLOW_LIST, callEdge, fakeOrigin } from "./support/edge.ts";

function headerMap(pairs: [string, string][]): Map<string, string> {
  return new Map(pairs.map(([name, value]) => [name.toLowerCase(), value]));
}

describe("item proxy", () => {
  it("forwards GET /items/:id to ORIGIN_URL + the same path with conditional headers", async () => {
    const origin = await fakeOrigin({ status: 304, headers: [["ETag", '"v1"']], body: "" });
    const res = await callEdge({ ORIGIN_URL: origin.url }, "/items/abc_1-Z?cachebust=1", {
      headers: { "if-none-match": '"v1"', "if-modified-since": "Sat, 21 Nov 2026 00:00:00 GMT" },
    });
    expect(res.status).toBe(304);
    expect(res.headers.get("etag")).toBe('"v1"');
    const [request, ...more] = await origin.requests();
    expect(more).toEqual([]);
    expect(request?.method).toBe("GET");
    expect(request?.path).toBe("/items/abc_1-Z");
    const headers = headerMap(request!.headers);
    expect(headers.get("if-none-match")).toBe('"v1"');
    expect(headers.get("if-modified-since")).toBe("Sat, 21 Nov 2026 00:00:00 GMT");
  });

  it("passes the body and status through and restores Content-Type on 200s", async () => {
    const origin = await fakeOrigin({ status: 200, headers: [["ETag", '"v2"']], body: '{"id":"7"}' });
    const res = await callEdge({ ORIGIN_URL: origin.url }, "/items/7");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.text()).toBe('{"id":"7"}');
  });

  it("sends ORIGIN_TOKEN in x-origin-token and drops a client-sent copy", async () => {
    const origin = await fakeOrigin();
    await callEdge({ ORIGIN_URL: origin.url, ORIGIN_TOKEN: "s3cret" }, "/items/1", {
      headers: { "x-origin-token": "forged" },
    });
    await callEdge({ ORIGIN_URL: origin.url }, "/items/2", { headers: { "x-origin-token": "forged" } });
    const [withToken, withoutToken] = await origin.requests();
    expect(withToken!.headers.filter(([name]) => name.toLowerCase() === "x-origin-token")).toEqual([["x-origin-token", "s3cret"]]);
    expect(withoutToken!.headers.some(([name]) => name.toLowerCase() === "x-origin-token")).toBe(false);
  });

  it("answers HEAD without a body", async () => {
    const origin = await fakeOrigin({ status: 200, headers: [["ETag", '"v1"']], body: '{"id":"1"}' });
    const res = await callEdge({ ORIGIN_URL: origin.url }, "/items/1", { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(res.body).toBeNull();
    expect((await origin.requests())[0]?.method).toBe("HEAD");
    const edge = await callEdge({ ORIGIN_URL: origin.url }, "/items/a.b", { method: "HEAD" });
    expect(edge.status).toBe(400);
    expect(edge.body).toBeNull();
  });

  const BAD_IDS = ["a.b", "a..b", "a%2Fb", "a%2fb", "a%2e%2e", "a%2Eb", "a%00", "%41", "%C3%A9", "é", "a b", "x".repeat(129), "a/b", ""];

  it.each(BAD_IDS)("answers 400 for the id %j and forwards nothing", async (id) => {
    const origin = await fakeOrigin();
    const res = await callEdge({ ...ALLOW_LIST, ORIGIN_URL: origin.url }, `/items/${id}`);
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/bad item id/);
    expect(await origin.requests()).toEqual([]);
  });

  it.each(["..", "%2e%2e", "%2E."])("resolves the dot segment in /items/%s before routing: 404, nothing forwarded", async (id) => {
    const origin = await fakeOrigin();
    const res = await callEdge({ ORIGIN_URL: origin.url }, `/items/${id}`);
    expect(res.status).toBe(404);
    expect(await origin.requests()).toEqual([]);
  });

  it("accepts a 128-character id", async () => {
    const origin = await fakeOrigin();
    expect((await callEdge({ ORIGIN_URL: origin.url }, `/items/${"x".repeat(128)}`)).status).toBe(200);
  });

  it.each(["POST", "PUT", "DELETE", "PATCH", "patch", "OPTIONS"])("answers %s on an item path with 405 and Allow", async (method) => {
    const origin = await fakeOrigin();
    const res = await callEdge({ ORIGIN_URL: origin.url }, "/items/1", { method, body: method === "OPTIONS" ? null : "{}" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, HEAD");
    expect(await origin.requests()).toEqual([]);
  });

  it.each(["/", "/items", "/item/1", "/items-1", "/ITEMS/1", "/admin"])("answers %s with 404 and forwards nothing", async (path) => {
    const origin = await fakeOrigin();
    const res = await callEdge({ ORIGIN_URL: origin.url }, path);
    expect(res.status).toBe(404);
    expect(await origin.requests()).toEqual([]);
  });

  it("answers 502 when the origin refuses connections, without internal details", async () => {
    const res = await callEdge({ ORIGIN_URL: "http://127.0.0.1:9" }, "/items/1");
    expect(res.status).toBe(502);
    expect(await res.text()).toBe("origin unreachable\n");
  });

  it("answers 504 when the origin is slower than ORIGIN_TIMEOUT_MS", async () => {
    const origin = await fakeOrigin({ behaviour: "hang" });
    const res = await callEdge({ ORIGIN_URL: origin.url, ORIGIN_TIMEOUT_MS: "200" }, "/items/1");
    expect(res.status).toBe(504);
    expect(await res.text()).toBe("origin timed out\n");
  });
});
