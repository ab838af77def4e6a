// The edge cache as the origin's purge on change needs it: entries filed under the Worker's own host (where
// a zone purge reaches them), tagged `item:<id>,items`, the tag never served. A purge is applied here the way
// one data centre sees it: `caches.default.delete(key)` (Miniflare has no purge by tag).
import { describe, expect, it } from "vitest";
import type { EdgeVars } from "../../src/edge/config/edge-vars.ts";
import { INTERNAL_RESPONSE_LIST_DIGEST } from "../../src/edge/headers/strip.ts";
import { ALLOW_LIST, callEdge, fakeOrigin, type Scenario } from "./support/edge.ts";

const V1: Scenario = { status: 200, headers: [["ETag", '"v1"']], body: '{"v":1}' };
const V2: Scenario = { status: 200, headers: [["ETag", '"v2"']], body: '{"v":2}' };
const FRESH: EdgeVars = { ...ALLOW_LIST, EDGE_CACHE_TTL: "3600" };
// TTL 0: every read finds its entry stale, so revalidation is exercised without waiting for time to pass.
const ALWAYS_STALE: EdgeVars = { ...ALLOW_LIST, EDGE_CACHE_TTL: "0" };

/** A host no other test uses: entries of one test never meet another's (the file shares one cache). */
function freshHost(): string {
  return `https://t${crypto.randomUUID().slice(0, 8)}.edge.example.net`;
}

/** The stored entry's status and Cache-Tag, read back as the zone's purge would see it. */
async function storedEntry(key: string): Promise<{ status: number; cacheTag: string | null } | undefined> {
  const entry = await caches.default.match(key);
  if (!entry) return undefined;
  await entry.arrayBuffer();
  return { status: entry.status, cacheTag: entry.headers.get("cache-tag") };
}

function bookkeeping(response: Response): string[] {
  return [...response.headers.keys()].filter((name) => name === "cache-tag" || name.startsWith("x-slim-edge"));
}

function ifNoneMatchOf(request: { headers: [string, string][] } | undefined): string | undefined {
  return request?.headers.find(([name]) => name.toLowerCase() === "if-none-match")?.[1];
}

describe("edge cache keys", () => {
  it("files entries under the request's own host: two hosts, two entries, each filled once", async () => {
    const origin = await fakeOrigin(V1);
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    const [a, b] = [freshHost(), freshHost()];
    for (const url of [`${a}/items/k1`, `${b}/items/k1`, `${a}/items/k1?x=1`, `${b}/items/k1?y=2`]) {
      expect(await (await callEdge(vars, url)).text()).toBe('{"v":1}');
    }
    expect(await origin.requests()).toHaveLength(2);
    expect(await storedEntry(`${a}/items/k1`)).toEqual({ status: 200, cacheTag: "item:k1,items" });
    expect(await storedEntry(`${b}/items/k1`)).toEqual({ status: 200, cacheTag: "item:k1,items" });
    // Not under the origin's host (a purge of the Worker's zone would never reach it), nor with the query.
    expect(await caches.default.match(`${origin.url}/items/k1`)).toBeUndefined();
    expect(await caches.default.match(`${a}/items/k1?x=1`)).toBeUndefined();
  });

  it("never serves an entry filled from another ORIGIN_URL: it is a miss, and is replaced", async () => {
    const before = await fakeOrigin(V1);
    const after = await fakeOrigin(V2);
    const url = `${freshHost()}/items/k2`;
    await (await callEdge({ ...FRESH, ORIGIN_URL: before.url }, url)).text();
    for (let i = 0; i < 2; i++) expect(await (await callEdge({ ...FRESH, ORIGIN_URL: after.url }, url)).text()).toBe('{"v":2}');
    const [first] = await after.requests();
    expect(ifNoneMatchOf(first)).toBeUndefined();
    expect(await after.requests()).toHaveLength(1);
    expect(await before.requests()).toHaveLength(1);
  });

  it("never serves an entry stripped with another internal-header list: it is a miss, and is replaced", async () => {
    const origin = await fakeOrigin({ ...V1, headers: [...V1.headers!, ["X-Powered-By", "Express"]] });
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    const url = `${freshHost()}/items/k5`;
    const key = `${new URL(url).origin}/items/k5`;
    expect((await callEdge(vars, url)).headers.get("x-powered-by")).toBeNull();
    // As a deployment whose list did not name X-Powered-By yet would have stored it.
    const stored = (await caches.default.match(key))!;
    const headers = new Headers(stored.headers);
    const label = headers.get("x-slim-edge-origin")!;
    expect(label).toBe(`${origin.url} ${INTERNAL_RESPONSE_LIST_DIGEST}`);
    headers.set("x-slim-edge-origin", label.replace(INTERNAL_RESPONSE_LIST_DIGEST, "0".repeat(INTERNAL_RESPONSE_LIST_DIGEST.length)));
    headers.set("x-powered-by", "Express");
    await caches.default.put(key, new Response(await stored.arrayBuffer(), { status: 200, headers }));

    for (let i = 0; i < 2; i++) {
      const res = await callEdge(vars, url);
      expect(res.headers.get("x-powered-by")).toBeNull();
      expect(await res.text()).toBe('{"v":1}');
    }
    const requests = await origin.requests();
    expect(requests).toHaveLength(2); // the old entry was a miss (not revalidated), its replacement a hit
    expect(ifNoneMatchOf(requests[1])).toBeUndefined();
    expect((await caches.default.match(key))!.headers.get("x-powered-by")).toBeNull();
  });
});

describe("edge cache tags", () => {
  it("stores item:<id>,items in place of the origin's own Cache-Tag, and serves neither", async () => {
    const origin = await fakeOrigin({ ...V1, headers: [...V1.headers!, ["Cache-Tag", "origin-tag,items"]] });
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    const url = `${freshHost()}/items/k3`;
    const answers = [
      await callEdge(vars, url), // miss
      await callEdge(vars, url), // hit
      await callEdge(vars, url, { method: "HEAD" }), // hit, HEAD
      await callEdge(vars, url, { headers: { "if-none-match": '"v1"', origin: "https://app.example.com" } }), // 304 at the edge
    ];
    expect(answers.map((res) => res.status)).toEqual([200, 200, 200, 304]);
    for (const res of answers) expect(bookkeeping(res)).toEqual([]);
    expect(await answers[1]!.text()).toBe('{"v":1}');
    expect(await storedEntry(`${new URL(url).origin}/items/k3`)).toEqual({ status: 200, cacheTag: "item:k3,items" });
    expect(await origin.requests()).toHaveLength(1);
  });

  it("keeps the tags through a revalidation, whatever Cache-Tag the origin's 304 or new version carries", async () => {
    const origin = await fakeOrigin(V1);
    const vars = { ...ALWAYS_STALE, ORIGIN_URL: origin.url };
    const url = `${freshHost()}/items/k4`;
    const key = `${new URL(url).origin}/items/k4`;
    await (await callEdge(vars, url)).text();
    await origin.answer({ status: 304, headers: [["ETag", '"v1"'], ["Cache-Tag", "from-304"]], body: "" });
    const revalidated = await callEdge(vars, url);
    expect(await revalidated.text()).toBe('{"v":1}');
    expect(bookkeeping(revalidated)).toEqual([]);
    expect(await storedEntry(key)).toEqual({ status: 200, cacheTag: "item:k4,items" });
    await origin.answer({ ...V2, headers: [...V2.headers!, ["Cache-Tag", "from-200"]] });
    const replaced = await callEdge(vars, url);
    expect(await replaced.text()).toBe('{"v":2}');
    expect(bookkeeping(replaced)).toEqual([]);
    expect(await storedEntry(key)).toEqual({ status: 200, cacheTag: "item:k4,items" });
  });

  it.each([
    ["a credentialed request (no shared cache)", { headers: { authorization: "Bearer alice" } }, V1],
    ["an answer the edge does not store", {}, { ...V1, headers: [...V1.headers!, ["Cache-Control", "no-store"]] }],
    ["an origin 404 while 404s are not cached", {}, { status: 404, body: "" }],
  ] as Array<[string, RequestInit, Scenario]>)("never passes the origin's Cache-Tag on: %s", async (_, init, scenario) => {
    const origin = await fakeOrigin({ ...scenario, headers: [...(scenario.headers ?? []), ["Cache-Tag", "origin-tag"]] });
    const res = await callEdge({ ...FRESH, ORIGIN_URL: origin.url }, `${freshHost()}/items/k5`, init);
    expect(res.status).toBe(scenario.status);
    expect(bookkeeping(res)).toEqual([]);
    await res.text();
  });
});

describe("edge cache purge", () => {
  it("after a purge of the entry, the next read asks the origin and serves the new version", async () => {
    const origin = await fakeOrigin(V1);
    const vars = { ...FRESH, ORIGIN_URL: origin.url };
    const url = `${freshHost()}/items/k6`;
    await (await callEdge(vars, url)).text();
    await origin.answer(V2);
    // Fresh for an hour: without a purge the edge keeps serving what it has.
    expect(await (await callEdge(vars, url)).text()).toBe('{"v":1}');
    expect(await caches.default.delete(`${new URL(url).origin}/items/k6`)).toBe(true);
    const purged = await callEdge(vars, url);
    expect(purged.headers.get("etag")).toBe('"v2"');
    expect(await purged.text()).toBe('{"v":2}');
    const requests = await origin.requests();
    expect(requests).toHaveLength(2);
    // A miss, not a revalidation: the purged entry's ETag is gone with it.
    expect(ifNoneMatchOf(requests[1])).toBeUndefined();
    // And the new version is what the edge keeps now.
    expect(await (await callEdge(vars, url)).text()).toBe('{"v":2}');
    expect(await origin.requests()).toHaveLength(2);
  });
});
