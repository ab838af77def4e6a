import { describe, expect, it } from "vitest";
import type { EdgeVars } from "../../src/edge/config/edge-vars.ts";
import { ALLOW_LIST, callEdge, fakeOrigin, type Scenario } from "./support/edge.ts";

const V1: Scenario = { status: 200, headers: [["ETag", '"v1"']], body: '{"v":1}' };
const V2: Scenario = { status: 200, headers: [["ETag", '"v2"']], body: '{"v":2}' };
const NOT_MODIFIED: Scenario = { status: 304, headers: [["ETag", '"v1"']], body: "" };
const FRESH: EdgeVars = { ...ALLOW_LIST, EDGE_CACHE_TTL: "3600" };
// TTL 0: every read finds its entry stale, so revalidation is exercised without waiting for time to pass.
const ALWAYS_STALE: EdgeVars = { ...ALLOW_LIST, EDGE_CACHE_TTL: "0" };

function ifNoneMatchOf(request: { headers: [string, string][] } | undefined): string | undefined {
  return request?.headers.find(([name]) => name.toLowerCase() === "if-none-match")?.[1];
}

describe("edge cache", () => {
  it("serves a fresh entry with no origin request", async () => {
    const origin = await fakeOrigin(V1);
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    const first = await callEdge(vars, "/items/1");
    expect(await first.text()).toBe('{"v":1}');
    const second = await callEdge(vars, "/items/1");
    expect(second.status).toBe(200);
    expect(second.headers.get("etag")).toBe('"v1"');
    expect(second.headers.get("content-type")).toBe("application/json");
    expect(await second.text()).toBe('{"v":1}');
    expect(await origin.requests()).toHaveLength(1);
    expect([...second.headers.keys()].filter((name) => name.startsWith("x-slim-edge"))).toEqual([]);
  });

  it("revalidates a stale entry with If-None-Match and serves the cached body on a 304", async () => {
    const origin = await fakeOrigin(V1);
    const vars = { ...ALWAYS_STALE, ORIGIN_URL: origin.url };
    await (await callEdge(vars, "/items/1")).text();
    await origin.answer(NOT_MODIFIED);
    const res = await callEdge(vars, "/items/1");
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('{"v":1}');
    const [, revalidation] = await origin.requests();
    expect(ifNoneMatchOf(revalidation)).toBe('"v1"');
    // The refreshed entry is still there for the next revalidation.
    expect(await (await callEdge(vars, "/items/1")).text()).toBe('{"v":1}');
  });

  it("replaces the entry when the origin answers a new ETag", async () => {
    const origin = await fakeOrigin(V1);
    await (await callEdge({ ...ALWAYS_STALE, ORIGIN_URL: origin.url }, "/items/1")).text();
    await origin.answer(V2);
    const changed = await callEdge({ ...ALWAYS_STALE, ORIGIN_URL: origin.url }, "/items/1");
    expect(changed.headers.get("etag")).toBe('"v2"');
    expect(await changed.text()).toBe('{"v":2}');
    await origin.answer({ ...NOT_MODIFIED, headers: [["ETag", '"v2"']] });
    const revalidated = await callEdge({ ...ALWAYS_STALE, ORIGIN_URL: origin.url }, "/items/1");
    expect(await revalidated.text()).toBe('{"v":2}');
    expect(ifNoneMatchOf((await origin.requests())[2])).toBe('"v2"');
  });

  it.each(["no-store", "private", "private, max-age=60"])("honours the origin's Cache-Control: %s", async (cacheControl) => {
    const origin = await fakeOrigin({ ...V1, headers: [...V1.headers!, ["Cache-Control", cacheControl]] });
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    for (let i = 0; i < 2; i++) {
      const res = await callEdge(vars, "/items/1");
      expect(res.headers.get("cache-control")).toBe(cacheControl);
      await res.text();
    }
    expect(await origin.requests()).toHaveLength(2);
  });

  it.each<[string | null, [string, string][]]>([
    ["private, max-age=600", []],
    ["no-store, max-age=600", []],
    [null, [["Vary", "X-User"]]],
  ])("a revalidating 304 saying %s %j: served to the one who asked, then dropped, never served to another", async (cacheControl, more) => {
    const origin = await fakeOrigin(V1);
    const vars = { ...ALWAYS_STALE, ORIGIN_URL: origin.url };
    await (await callEdge(vars, "/items/1")).text();
    const headers: [string, string][] = [["ETag", '"v1"'], ...more];
    if (cacheControl !== null) headers.push(["Cache-Control", cacheControl]);
    await origin.answer({ status: 304, headers, body: "" });
    const asked = await callEdge(vars, "/items/1", { headers: { "x-user": "alice" } });
    expect(await asked.text()).toBe('{"v":1}');
    if (cacheControl !== null) expect(asked.headers.get("cache-control")).toBe(cacheControl);
    // The next reader is a miss: the origin is asked as it is, with no ETag of the dropped entry.
    await origin.answer(V2);
    const other = await callEdge(vars, "/items/1", { headers: { "x-user": "bob" } });
    expect(await other.text()).toBe('{"v":2}');
    const requests = await origin.requests();
    expect(requests).toHaveLength(3);
    expect(ifNoneMatchOf(requests[2])).toBeUndefined();
  });

  it("never stores the answer to a request saying Cache-Control: no-store, but may answer it from the cache", async () => {
    const origin = await fakeOrigin(V1);
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    const noStore = { headers: { "cache-control": "max-age=0, no-store" } };
    expect(await (await callEdge(vars, "/items/1", noStore)).text()).toBe('{"v":1}');
    expect(await (await callEdge(vars, "/items/1")).text()).toBe('{"v":1}');
    expect(await origin.requests()).toHaveLength(2); // the first answer was not stored
    expect(await (await callEdge(vars, "/items/1", noStore)).text()).toBe('{"v":1}');
    expect(await origin.requests()).toHaveLength(2); // the second was, and serves a no-store request

    // A revalidation for such a request does not refresh the stored entry either.
    const stale = await fakeOrigin(V1);
    const staleVars = { ...ALWAYS_STALE, ORIGIN_URL: stale.url };
    await (await callEdge(staleVars, "/items/1")).text();
    await stale.answer({ ...NOT_MODIFIED, headers: [["ETag", '"v1"'], ["Cache-Control", "max-age=5"]] });
    const revalidated = await callEdge(staleVars, "/items/1", noStore);
    expect(revalidated.headers.get("cache-control")).toBe("max-age=5");
    await stale.answer(NOT_MODIFIED);
    const next = await callEdge(staleVars, "/items/1");
    expect(next.headers.has("cache-control")).toBe(false); // still the entry as first stored
    expect(await stale.requests()).toHaveLength(3);
  });

  it("does not cache a response with Vary: *", async () => {
    const origin = await fakeOrigin({ ...V1, headers: [...V1.headers!, ["Vary", "*"]] });
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    for (let i = 0; i < 2; i++) expect((await callEdge(vars, "/items/1")).headers.get("vary")).toBe("*");
    expect(await origin.requests()).toHaveLength(2);
  });

  it("keeps the origin's Cache-Control on responses served from the cache", async () => {
    const origin = await fakeOrigin({ ...V1, headers: [...V1.headers!, ["Cache-Control", "max-age=30"]] });
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    await (await callEdge(vars, "/items/1")).text();
    const res = await callEdge(vars, "/items/1");
    expect(res.headers.get("cache-control")).toBe("max-age=30");
    expect(await origin.requests()).toHaveLength(1);
  });

  it("revalidates every read of an entry the origin marked no-cache", async () => {
    const origin = await fakeOrigin({ ...V1, headers: [...V1.headers!, ["Cache-Control", "no-cache"]] });
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    await (await callEdge(vars, "/items/1")).text();
    await origin.answer({ ...NOT_MODIFIED });
    expect(await (await callEdge(vars, "/items/1")).text()).toBe('{"v":1}');
    expect(await origin.requests()).toHaveLength(2);
  });

  it("does not cache a 404 by default (EDGE_CACHE_NOT_FOUND_TTL=0): a created item is visible at once", async () => {
    const origin = await fakeOrigin({ status: 404, body: "" });
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    expect((await callEdge(vars, "/items/new")).status).toBe(404);
    await origin.answer(V1);
    expect((await callEdge(vars, "/items/new")).status).toBe(200);
  });

  it("serves every Origin from one entry, each with its own CORS headers", async () => {
    const origin = await fakeOrigin(V1);
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    const answers: Array<[string | null, string | null]> = [];
    for (const requestOrigin of ["https://app.example.com", "https://a.preview.example.com", "https://evil.example.net", null]) {
      const res = await callEdge(vars, "/items/1", { headers: requestOrigin ? { origin: requestOrigin } : {} });
      expect(await res.text()).toBe('{"v":1}');
      expect(res.headers.get("vary")).toBe("origin");
      answers.push([requestOrigin, res.headers.get("access-control-allow-origin")]);
    }
    expect(answers).toEqual([
      ["https://app.example.com", "https://app.example.com"],
      ["https://a.preview.example.com", "https://a.preview.example.com"],
      ["https://evil.example.net", null],
      [null, null],
    ]);
    expect(await origin.requests()).toHaveLength(1);
  });

  it("answers a client's matching If-None-Match with a 304 at the edge", async () => {
    const origin = await fakeOrigin(V1);
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    await (await callEdge(vars, "/items/1")).text();
    for (const tag of ['"v1"', 'W/"v1"', '"v0", "v1"', "*"]) {
      const res = await callEdge(vars, "/items/1", { headers: { "if-none-match": tag, origin: "https://app.example.com" } });
      expect(res.status).toBe(304);
      expect(res.body).toBeNull();
      expect(res.headers.get("etag")).toBe('"v1"');
      expect(res.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    }
    const other = await callEdge(vars, "/items/1", { headers: { "if-none-match": '"v0"' } });
    expect(other.status).toBe(200);
    expect(await other.text()).toBe('{"v":1}');
    expect(await origin.requests()).toHaveLength(1);
  });

  it("answers HEAD from the cache without a body", async () => {
    const origin = await fakeOrigin(V1);
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    await (await callEdge(vars, "/items/1")).text();
    const res = await callEdge(vars, "/items/1", { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(res.body).toBeNull();
    expect(res.headers.get("etag")).toBe('"v1"');
    expect(await origin.requests()).toHaveLength(1);
  });

  it("passes the client's conditional request through on a miss, and caches nothing from a 304", async () => {
    const origin = await fakeOrigin(NOT_MODIFIED);
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    const res = await callEdge(vars, "/items/1", { headers: { "if-none-match": '"v1"' } });
    expect(res.status).toBe(304);
    expect(ifNoneMatchOf((await origin.requests())[0])).toBe('"v1"');
    await origin.answer(V1);
    expect(await (await callEdge(vars, "/items/1")).text()).toBe('{"v":1}');
  });
});

describe("edge cache with HEAD and failures", () => {
  it("refreshes a stale entry with a GET even when the client asked with HEAD", async () => {
    const origin = await fakeOrigin(V1);
    const vars = { ...ALWAYS_STALE, ORIGIN_URL: origin.url };
    await (await callEdge(vars, "/items/1")).text();
    await origin.answer(V2);
    const head = await callEdge(vars, "/items/1", { method: "HEAD" });
    expect(head.body).toBeNull();
    expect(head.headers.get("etag")).toBe('"v2"');
    await origin.answer({ ...NOT_MODIFIED, headers: [["ETag", '"v2"']] });
    expect(await (await callEdge(vars, "/items/1")).text()).toBe('{"v":2}');
    expect((await origin.requests()).map((r) => r.method)).toEqual(["GET", "GET", "GET"]);
  });

  it("keeps a stale entry through origin errors, and revalidates it once the origin answers again", async () => {
    const origin = await fakeOrigin(V1);
    const vars = { ...ALWAYS_STALE, ORIGIN_URL: origin.url };
    await (await callEdge(vars, "/items/1")).text();
    for (const status of [503, 429, 403]) {
      await origin.answer({ status, body: "" });
      expect((await callEdge(vars, "/items/1")).status).toBe(status); // the client learns of the error
    }
    await origin.answer(NOT_MODIFIED);
    const back = await callEdge(vars, "/items/1");
    expect(await back.text()).toBe('{"v":1}');
    const requests = await origin.requests();
    expect(requests).toHaveLength(5);
    // Every read after the fill revalidated the same stored copy: no error dropped it.
    expect(requests.slice(1).map(ifNoneMatchOf)).toEqual(['"v1"', '"v1"', '"v1"', '"v1"']);
  });

  it("drops a stale entry when the item is gone", async () => {
    const origin = await fakeOrigin(V1);
    const vars = { ...ALWAYS_STALE, ORIGIN_URL: origin.url };
    await (await callEdge(vars, "/items/1")).text();
    await origin.answer({ status: 404, body: "" });
    expect((await callEdge(vars, "/items/1")).status).toBe(404);
    await origin.answer(V2);
    const next = await callEdge(vars, "/items/1");
    expect(await next.text()).toBe('{"v":2}');
    expect(ifNoneMatchOf((await origin.requests())[2])).toBeUndefined();
  });
});

describe("edge cache: what a shared cache must not reuse", () => {
  it.each([["authorization", "Bearer alice"], ["cookie", "session=alice"]])(
    "never stores or serves a response to a request with %s",
    async (name, value) => {
      const origin = await fakeOrigin(V1);
      const vars = { ...FRESH, ORIGIN_URL: origin.url };
      expect(await (await callEdge(vars, "/items/1", { headers: { [name]: value } })).text()).toBe('{"v":1}');
      await origin.answer({ status: 401, body: "" });
      expect((await callEdge(vars, "/items/1")).status).toBe(401);
      // The credentialed request went through, and its own header reached the origin.
      const [first] = await origin.requests();
      expect(first!.headers.some(([header, sent]) => header.toLowerCase() === name && sent === value)).toBe(true);
    },
  );

  it("does not store a response that varies on anything but origin and accept-encoding", async () => {
    const origin = await fakeOrigin({ ...V1, headers: [...V1.headers!, ["Vary", "Accept-Language"]] });
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    for (let i = 0; i < 2; i++) await (await callEdge(vars, "/items/1", { headers: { "accept-language": "fr" } })).text();
    expect(await origin.requests()).toHaveLength(2);
    const ok = await fakeOrigin({ ...V1, headers: [...V1.headers!, ["Vary", "Accept-Encoding, Origin"]] });
    for (let i = 0; i < 2; i++) await (await callEdge({ ...vars, ORIGIN_URL: ok.url }, "/items/1")).text();
    expect(await ok.requests()).toHaveLength(1);
  });
});

describe("edge cache: the origin's freshness", () => {
  it("keeps any origin Cache-Control on hits, including one that looks like the edge's own", async () => {
    const origin = await fakeOrigin({ ...V1, headers: [...V1.headers!, ["Cache-Control", "max-age=604800"]] });
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    await (await callEdge(vars, "/items/1")).text();
    expect((await callEdge(vars, "/items/1")).headers.get("cache-control")).toBe("max-age=604800");
    expect(await origin.requests()).toHaveLength(1);
  });

  it.each(["max-age=0", "s-maxage=0, max-age=600", "public, max-age=0"])("revalidates every read under %s", async (cacheControl) => {
    const origin = await fakeOrigin({ ...V1, headers: [...V1.headers!, ["Cache-Control", cacheControl]] });
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    await (await callEdge(vars, "/items/1")).text();
    await origin.answer({ ...NOT_MODIFIED });
    expect(await (await callEdge(vars, "/items/1")).text()).toBe('{"v":1}');
    expect(await origin.requests()).toHaveLength(2);
  });

  it("serves the origin's Cache-Control with a hit's current age (an origin answer's own Age only), and counts the Age it arrived with against its max-age", async () => {
    const origin = await fakeOrigin({ ...V1, headers: [...V1.headers!, ["Cache-Control", "max-age=100"], ["Age", "50"]] });
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    const miss = await callEdge(vars, "/items/1");
    await miss.text();
    expect(miss.headers.get("age")).toBe("50");
    const hit = await callEdge(vars, "/items/1");
    await hit.text();
    expect(Number(hit.headers.get("age"))).toBeGreaterThanOrEqual(50);
    expect(Number(hit.headers.get("age"))).toBeLessThan(100);
    expect(await origin.requests()).toHaveLength(1);

    // Already as old as its max-age: stale on arrival, so the next read revalidates.
    const old = await fakeOrigin({ ...V1, headers: [...V1.headers!, ["Cache-Control", "max-age=100"], ["Age", "100"]] });
    const oldVars = { ...FRESH, ORIGIN_URL: old.url };
    await (await callEdge(oldVars, "/items/1")).text();
    await old.answer({ ...NOT_MODIFIED, headers: [["ETag", '"v1"'], ["Cache-Control", "max-age=100"]] });
    const revalidated = await callEdge(oldVars, "/items/1");
    expect(await revalidated.text()).toBe('{"v":1}');
    expect(revalidated.headers.get("age")).toBeNull(); // validated for this request: no Age (RFC 9111 §5.1)
    expect(await old.requests()).toHaveLength(2);

    // An origin answer with Cache-Control but no Age has none on its miss, and its current age on a hit.
    const fresh = await fakeOrigin({ ...V1, headers: [...V1.headers!, ["Cache-Control", "max-age=100"]] });
    const freshVars = { ...FRESH, ORIGIN_URL: fresh.url };
    const first = await callEdge(freshVars, "/items/1");
    await first.text();
    expect(first.headers.get("age")).toBeNull();
    const again = await callEdge(freshVars, "/items/1");
    await again.text();
    expect(again.headers.get("age")).toMatch(/^\d+$/);
  });

  it("gives an edge 304 the Cache-Control, Vary and Date the 200 would have had", async () => {
    const origin = await fakeOrigin({ ...V1, headers: [...V1.headers!, ["Cache-Control", "max-age=30"]] });
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    await (await callEdge(vars, "/items/1")).text();
    const hit = await callEdge(vars, "/items/1");
    await hit.text();
    const res = await callEdge(vars, "/items/1", { headers: { "if-none-match": '"v1"' } });
    expect(res.status).toBe(304);
    // Date too when the 200 from the same entry has one (the Cache API dates what it stores): RFC 9110 §15.4.5.
    const date = hit.headers.get("date");
    expect(date).toMatch(/ GMT$/);
    expect(Object.fromEntries(res.headers)).toEqual({ etag: '"v1"', "cache-control": "max-age=30", vary: "origin", date });
  });
});
