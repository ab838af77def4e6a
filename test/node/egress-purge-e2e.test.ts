// A purge reaches the worker's real edge cache, end to end: the worker runs under Miniflare (scripts/lib/local-edge.ts)
// in front of a fake origin that counts its requests; the Cloudflare API stand-in applies each accepted purge to the
// worker's own cache before it answers 200. The test calls the purge endpoint as the origin's purger would, and the
// next edge read reaching the origin (for the new version) is the proof. No sleeps: waits are on the condition itself
// (the worker stores its entry after answering, in waitUntil).

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startCloudflareApiStandIn, type CloudflareApiStandIn } from "../../scripts/lib/cloudflare-api-stand-in.ts";
import { cacheTagLists, keysForTag, startLocalEdge, type LocalEdge } from "../../scripts/lib/local-edge.ts";

const ZONE = "0123456789abcdef0123456789abcdef";
const TOKEN = "purge-token-0123456789";

describe("the stand-in's tag → key mapping", () => {
  it("resolves item:<id> to the worker's own key, items to every known id, and nothing else", () => {
    const origin = "http://127.0.0.1:9";
    expect(keysForTag("item:42", origin, ["1"])).toEqual(["http://127.0.0.1:9/items/42"]);
    expect(keysForTag("items", origin, ["1", "2", "1"])).toEqual(["http://127.0.0.1:9/items/1", "http://127.0.0.1:9/items/2"]);
    expect(keysForTag("ITEMS", origin, ["1"])).toEqual(["http://127.0.0.1:9/items/1"]);
    expect(keysForTag("item:", origin, ["1"])).toEqual([]);
    // Tags compare without case at Cloudflare: one tag purges every id that differs only in case.
    expect(keysForTag("item:Widget", origin, ["widget", "WIDGET", "widgets", "Widget"])).toEqual([
      "http://127.0.0.1:9/items/Widget",
      "http://127.0.0.1:9/items/widget",
      "http://127.0.0.1:9/items/WIDGET",
    ]);
    expect(keysForTag("ITEM:a", origin, ["A"])).toEqual(["http://127.0.0.1:9/items/a", "http://127.0.0.1:9/items/A"]);
    expect(keysForTag("release:5", origin, ["1"])).toEqual([]);
  });

  it("reads a stored Cache-Tag as Cloudflare does: comma-separated, without case", () => {
    expect(cacheTagLists("item:7,items", "item:7")).toBe(true);
    expect(cacheTagLists("item:7, Items", "items")).toBe(true);
    expect(cacheTagLists("item:70,items", "item:7")).toBe(false);
    expect(cacheTagLists(null, "item:7")).toBe(false);
  });
});

describe("purge by tag through the stand-in reaches the worker's cache (Miniflare)", () => {
  const items = new Map<string, { body: string; etag: string }>();
  const originHits = new Map<string, number>();
  let origin: Server;
  let standIn: CloudflareApiStandIn;
  let edge: LocalEdge;

  const put = (id: string, version: number) => items.set(id, { body: JSON.stringify({ id, version }), etag: `"v${version}"` });
  const hits = (id: string) => originHits.get(id) ?? 0;

  beforeAll(async () => {
    origin = createServer((req, res) => {
      const id = /^\/items\/([^/?]+)$/.exec(req.url ?? "")?.[1] ?? "";
      originHits.set(id, hits(id) + 1);
      const item = items.get(id);
      if (item === undefined) {
        res.writeHead(404, { "content-length": "0" });
        res.end();
      } else if (req.headers["if-none-match"] === item.etag) {
        res.writeHead(304, { etag: item.etag });
        res.end();
      } else {
        res.writeHead(200, { "content-type": "application/json", "content-length": String(Buffer.byteLength(item.body)), etag: item.etag });
        res.end(item.body);
      }
    });
    await new Promise<void>((resolve) => origin.listen(0, "127.0.0.1", resolve));
    standIn = await startCloudflareApiStandIn({ token: TOKEN, zoneId: ZONE, onPurge: async (tags) => void (await edge.purgeTags(tags)) });
    edge = await startLocalEdge({
      vars: {
        ORIGIN_URL: `http://127.0.0.1:${(origin.address() as AddressInfo).port}`,
        EDGE_CACHE_TTL: "86400",
        EDGE_CACHE_NOT_FOUND_TTL: "86400",
      },
      knownIds: () => ["7", "8", "9", "absent"],
    });
  }, 60_000);

  afterAll(async () => {
    await edge?.close();
    await standIn?.close();
    await new Promise((resolve) => origin?.close(resolve));
  });

  const read = async (id: string) => {
    const response = await fetch(`${edge.url}/items/${id}`);
    return { status: response.status, body: await response.text(), etag: response.headers.get("etag") };
  };

  /** Whether the worker's cache holds `id`, and the Cache-Tag it was stored with. */
  const stored = async (id: string) => {
    const entry = await (await edge.cache()).match(edge.itemKey(id));
    if (entry === undefined) return undefined;
    const tag = entry.headers.get("cache-tag");
    await entry.arrayBuffer();
    return { tag };
  };

  /** Waits (on the entry itself, not a clock) until the worker has stored `id`. */
  const filled = (id: string) => vi.waitFor(async () => expect(await stored(id)).toBeDefined(), { timeout: 10_000, interval: 5 });

  const purge = async (tags: string[]) => {
    const response = await fetch(`${standIn.baseUrl}/zones/${ZONE}/purge_cache`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ tags }),
    });
    return { status: response.status, body: (await response.json()) as { success: boolean } };
  };

  it("fills the edge cache under the worker's own host, tagged item:<id>,items", async () => {
    put("7", 1);
    put("8", 1);
    expect(await read("7")).toMatchObject({ status: 200, body: '{"id":"7","version":1}', etag: '"v1"' });
    expect(await read("8")).toMatchObject({ status: 200 });
    expect(await read("9")).toMatchObject({ status: 404 });
    await Promise.all(["7", "8", "9"].map(filled));
    expect(await stored("7")).toEqual({ tag: "item:7,items" });
    expect(await stored("9")).toEqual({ tag: "item:9,items" });
    // From the cache now: the origin is not asked again.
    expect(await read("7")).toMatchObject({ status: 200, etag: '"v1"' });
    expect(await read("9")).toMatchObject({ status: 404 });
    expect([hits("7"), hits("8"), hits("9")]).toEqual([1, 1, 1]);
  });

  it("keeps serving the old version for a day without a purge, and the new one right after purging item:<id>", async () => {
    put("7", 2);
    expect(await read("7")).toMatchObject({ etag: '"v1"' });
    expect(hits("7")).toBe(1);

    expect(await purge(["item:7"])).toMatchObject({ status: 200, body: { success: true } });
    // The stand-in applied the purge before its 200: the entry is gone, the neighbour is not.
    expect(await stored("7")).toBeUndefined();
    expect(await stored("8")).toEqual({ tag: "item:8,items" });
    expect(edge.purges.at(-1)).toMatchObject({ tags: ["item:7"], keys: 1, deleted: 1, untagged: 0 });

    expect(await read("7")).toMatchObject({ status: 200, body: '{"id":"7","version":2}', etag: '"v2"' });
    expect(hits("7")).toBe(2);
    expect(await read("8")).toMatchObject({ etag: '"v1"' });
    expect(hits("8")).toBe(1);
  });

  it("purges a cached 404 when the item is created, and everything with the items tag", async () => {
    await filled("7");
    put("9", 1);
    // Created at the origin, still a 404 at the edge: the 404 is cached too.
    expect(await read("9")).toMatchObject({ status: 404 });
    expect(hits("9")).toBe(1);
    expect(await purge(["items"])).toMatchObject({ status: 200 });
    expect(edge.purges.at(-1)).toMatchObject({ tags: ["items"], keys: 4, deleted: 3 });
    for (const id of ["7", "8", "9"]) expect(await stored(id)).toBeUndefined();
    expect(await read("9")).toMatchObject({ status: 200, etag: '"v1"' });
    expect(await read("8")).toMatchObject({ status: 200, etag: '"v1"' });
    expect([hits("8"), hits("9")]).toEqual([2, 2]);
  });

  it("leaves an entry without the purged tag alone, as Cloudflare would", async () => {
    const cache = (await edge.cache()) as unknown as { put(key: string, response: Response): Promise<void> };
    await cache.put(edge.itemKey("absent"), new Response("untagged", { headers: { "cache-control": "max-age=600" } }));
    expect(await purge(["item:absent"])).toMatchObject({ status: 200 });
    expect(edge.purges.at(-1)).toMatchObject({ deleted: 0, untagged: 1 });
    expect(await stored("absent")).toEqual({ tag: null });
  });
});
