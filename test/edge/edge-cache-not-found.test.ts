// EDGE_CACHE_NOT_FOUND_TTL: an origin 404 for an item kept at the edge (tagged like the item, so creating the
// item purges it), served as the origin sent it, until it is that old or purged. A purge is applied as one
// data centre sees it: `caches.default.delete(key)`.
import { afterEach, describe, expect, it, vi } from "vitest";
import type { EdgeVars } from "../../src/edge/config/edge-vars.ts";
import { ALLOW_LIST, callEdge, fakeOrigin, type Scenario } from "./support/edge.ts";

const MISSING: Scenario = { status: 404, headers: [["Content-Type", "text/plain"], ["X-Item-State", "absent"]], body: "no such item\n" };
const V1: Scenario = { status: 200, headers: [["ETag", '"v1"']], body: '{"v":1}' };
const CACHES_404: EdgeVars = { ...ALLOW_LIST, EDGE_CACHE_TTL: "3600", EDGE_CACHE_NOT_FOUND_TTL: "86400" };
const APP = "https://app.example.com";

/** A host no other test uses: entries of one test never meet another's (the file shares one cache). */
function freshHost(): string {
  return `https://t${crypto.randomUUID().slice(0, 8)}.edge.example.net`;
}

function keyOf(url: string): string {
  const { origin, pathname } = new URL(url);
  return `${origin}${pathname}`;
}

/**
 * Status, headers and body as a client sees them. Without `date`: Miniflare's Cache API stamps one on every
 * match (as http-cache-semantics does), on 200 hits as well; that is the runtime's, not this entry's.
 */
async function answerOf(res: Response) {
  const headers = Object.fromEntries([...res.headers].filter(([name]) => name !== "date"));
  return { status: res.status, headers, body: await res.text() };
}

interface DataPoint {
  blobs?: unknown[];
  doubles?: number[];
}

afterEach(() => {
  vi.useRealTimers();
});

describe("EDGE_CACHE_NOT_FOUND_TTL=0 (the default): 404s are not cached", () => {
  it.each([[{}], [{ EDGE_CACHE_NOT_FOUND_TTL: "0" }]] as Array<[EdgeVars]>)("every 404 reaches the origin (%o)", async (extra) => {
    const origin = await fakeOrigin(MISSING);
    const vars = { ...ALLOW_LIST, EDGE_CACHE_TTL: "3600", ...extra, ORIGIN_URL: origin.url };
    const url = `${freshHost()}/items/gone`;
    for (const method of ["GET", "GET", "HEAD"]) {
      const res = await callEdge(vars, url, { method });
      expect(res.status).toBe(404);
      await res.text();
    }
    expect(await origin.requests()).toHaveLength(3);
    expect(await caches.default.match(keyOf(url))).toBeUndefined();
  });
});

describe("EDGE_CACHE_NOT_FOUND_TTL > 0: 404s are answered at the edge", () => {
  it("serves the second read at the edge with the origin's status, headers and body, and this request's CORS", async () => {
    const origin = await fakeOrigin(MISSING);
    const vars = { ...CACHES_404, ORIGIN_URL: origin.url };
    const url = `${freshHost()}/items/gone`;
    const first = await answerOf(await callEdge(vars, url, { headers: { origin: APP } }));
    expect(first).toMatchObject({ status: 404, body: "no such item\n" });
    expect(first.headers).toMatchObject({ "content-type": "text/plain", "x-item-state": "absent", "access-control-allow-origin": APP, vary: "origin" });
    expect(await answerOf(await callEdge(vars, url, { headers: { origin: APP } }))).toEqual(first);

    // Another Origin, from the same entry: only the CORS decoration differs.
    const other = await answerOf(await callEdge(vars, url, { headers: { origin: "https://evil.example.net" } }));
    const withoutCors = Object.fromEntries(Object.entries(first.headers).filter(([name]) => !name.startsWith("access-control-")));
    expect(other).toEqual({ ...first, headers: withoutCors });

    const head = await callEdge(vars, url, { method: "HEAD", headers: { origin: APP } });
    expect(head.status).toBe(404);
    expect(head.body).toBeNull();
    expect(await answerOf(head)).toEqual({ ...first, body: "" });

    expect(await origin.requests()).toHaveLength(1);
    const stored = await caches.default.match(keyOf(url));
    expect(stored?.status).toBe(404);
    expect(stored?.headers.get("cache-tag")).toBe("item:gone,items");
    await stored?.arrayBuffer();
  });

  it("never answers a cached 404 with a 304, whatever If-None-Match says", async () => {
    const origin = await fakeOrigin({ ...MISSING, headers: [...MISSING.headers!, ["ETag", '"x"']] });
    const vars = { ...CACHES_404, ORIGIN_URL: origin.url };
    const url = `${freshHost()}/items/gone`;
    await (await callEdge(vars, url)).text();
    for (const tag of ['"x"', "*"]) {
      const res = await callEdge(vars, url, { headers: { "if-none-match": tag } });
      expect(res.status).toBe(404);
      expect(await res.text()).toBe("no such item\n");
    }
    expect(await origin.requests()).toHaveLength(1);
  });

  it("asks the origin again after a purge: a created item is served", async () => {
    const origin = await fakeOrigin(MISSING);
    const vars = { ...CACHES_404, ORIGIN_URL: origin.url };
    const url = `${freshHost()}/items/new`;
    await (await callEdge(vars, url)).text();
    await origin.answer(V1);
    // Without the purge the edge keeps the 404: this is what the var's meaning warns about.
    expect((await callEdge(vars, url)).status).toBe(404);
    expect(await caches.default.delete(keyOf(url))).toBe(true);
    const created = await callEdge(vars, url);
    expect(created.status).toBe(200);
    expect(await created.text()).toBe('{"v":1}');
    expect(await origin.requests()).toHaveLength(2);
  });

  it("asks the origin again once the 404 is older than EDGE_CACHE_NOT_FOUND_TTL, as a miss", async () => {
    const origin = await fakeOrigin(MISSING);
    const vars = { ...CACHES_404, EDGE_CACHE_NOT_FOUND_TTL: "60", ORIGIN_URL: origin.url };
    const url = `${freshHost()}/items/later`;
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
    await (await callEdge(vars, url)).text();
    vi.setSystemTime(Date.now() + 59_000);
    expect((await callEdge(vars, url, { method: "HEAD" })).status).toBe(404);
    expect(await origin.requests()).toHaveLength(1);

    vi.setSystemTime(Date.now() + 2_000);
    await origin.answer(V1);
    const res = await callEdge(vars, url, { headers: { "if-none-match": '"v0"' } });
    expect(await res.text()).toBe('{"v":1}');
    const requests = await origin.requests();
    expect(requests.map((r) => r.method)).toEqual(["GET", "GET"]);
    // A miss: the client's own conditional travels, the edge adds none (a 404 has no ETag).
    expect(requests[1]!.headers.filter(([name]) => name.toLowerCase() === "if-none-match").map(([, value]) => value)).toEqual(['"v0"']);
    const stored = await caches.default.match(keyOf(url));
    expect(stored?.status).toBe(200);
    await stored?.arrayBuffer();
  });

  it("stores the 404 that answers the revalidation of an item that is gone", async () => {
    const origin = await fakeOrigin(V1);
    const vars = { ...CACHES_404, EDGE_CACHE_TTL: "0", ORIGIN_URL: origin.url };
    const url = `${freshHost()}/items/deleted`;
    await (await callEdge(vars, url)).text();
    await origin.answer(MISSING);
    for (const method of ["GET", "HEAD", "GET"]) expect((await callEdge(vars, url, { method })).status).toBe(404);
    expect(await origin.requests()).toHaveLength(2);
  });

  it.each(["no-store", "private", "no-cache", "max-age=0"])("does not keep a 404 the origin marks %s", async (cacheControl) => {
    const origin = await fakeOrigin({ ...MISSING, headers: [...MISSING.headers!, ["Cache-Control", cacheControl]] });
    const vars = { ...CACHES_404, ORIGIN_URL: origin.url };
    const url = `${freshHost()}/items/gone`;
    for (let i = 0; i < 2; i++) expect((await callEdge(vars, url)).headers.get("cache-control")).toBe(cacheControl);
    expect(await origin.requests()).toHaveLength(2);
  });

  it("does not store a HEAD miss: the next GET asks the origin", async () => {
    const origin = await fakeOrigin(MISSING);
    const vars = { ...CACHES_404, ORIGIN_URL: origin.url };
    const url = `${freshHost()}/items/gone`;
    expect((await callEdge(vars, url, { method: "HEAD" })).status).toBe(404);
    for (let i = 0; i < 2; i++) expect(await (await callEdge(vars, url)).text()).toBe("no such item\n");
    expect((await origin.requests()).map((r) => r.method)).toEqual(["HEAD", "GET"]);
  });

  it("meters a 404 answered at the edge as a cache hit that cost the origin nothing", async () => {
    const origin = await fakeOrigin(MISSING);
    const points: DataPoint[] = [];
    const dataset = { writeDataPoint: (point: DataPoint) => void points.push(point) };
    const vars = { ...CACHES_404, ORIGIN_URL: origin.url, EGRESS: dataset } as EdgeVars;
    const url = `${freshHost()}/items/gone`;
    for (const method of ["GET", "GET", "HEAD"]) await (await callEdge(vars, url, { method })).text();
    expect(points.map((p) => [p.blobs?.[0], p.doubles?.[0]])).toEqual([
      ["cache-miss", 404],
      ["cache-hit", 0],
      ["cache-hit", 0],
    ]);
    expect(points[0]!.doubles![2]).toBe("no such item\n".length);
    for (const point of points.slice(1)) expect(point.doubles).toEqual([0, 0, 0]);
  });
});
