// Purge on change, end to end with real parts: the origin (SQLite) purges through the Cloudflare API
// stand-in, which applies each accepted purge to the worker's own cache (the worker runs in Miniflare,
// scripts/lib/local-edge.ts). The edge keeps items for a day and still serves a write at once after its
// purge; reads never purge; failures are retried within the rate; a bad token stops the start; nothing
// pending is lost with a restart. Waits are on conditions (bounded); nothing sleeps to synchronise.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startCloudflareApiStandIn, type CloudflareApiStandIn } from "../../scripts/lib/cloudflare-api-stand-in.ts";
import { startLocalEdge, type LocalEdge } from "../../scripts/lib/local-edge.ts";
import { freePort } from "../../scripts/lib/local-stack.ts";
import { parseOriginConfig } from "../../src/origin/config/parse-origin-config.ts";
import { startOrigin, type RunningOrigin } from "../../src/origin/start-origin.ts";
import { ConfigError } from "../../src/shared/config/config-error.ts";
import { acceptedPurgesOf, itemTraffic, purgingOriginEnv } from "../support/node/purge-e2e.ts";

const ZONE = "0123456789abcdef0123456789abcdef";
const TOKEN = "purge-on-change-token-0123456789";
const dir = mkdtempSync(join(tmpdir(), "slim-purge-"));
let standIn: CloudflareApiStandIn;
let edge: LocalEdge;
let origin: RunningOrigin;
let originPort = 0;
const ids = new Set<string>();

function originEnv(extra: Record<string, string> = {}): Record<string, string> {
  // Purge calls are counted here; the repeat of each has its own test (purge-repeat.test.ts).
  const env = purgingOriginEnv({ port: originPort, databaseUrl: join(dir, "items.sqlite"), apiBase: standIn.baseUrl, zoneId: ZONE, token: TOKEN, repeatMs: 0 });
  return { ...env, ...extra };
}

const startOn = async (extra: Record<string, string> = {}) => {
  return startOrigin({ config: parseOriginConfig(originEnv(extra)), log: () => {} });
};

const { read, write } = itemTraffic(() => edge.url, () => `http://127.0.0.1:${originPort}`, ids);
const purgeCalls = () => standIn.calls.filter((c) => c.path.endsWith("/purge_cache") && JSON.stringify(c.body) !== '{"tags":["slim-edge-verify"]}');
const taggedIn = (id: string) => acceptedPurgesOf(standIn.calls, id);
/** Waits until the worker has stored `id` (it stores after answering). */
const stored = (id: string) => vi.waitFor(async () => expect(await (await edge.cache()).match(edge.itemKey(id))).toBeDefined(), { timeout: 10_000, interval: 5 });

beforeAll(async () => {
  standIn = await startCloudflareApiStandIn({ token: TOKEN, zoneId: ZONE, plan: "pro", onPurge: async (tags) => void (await edge.purgeTags(tags)) });
  // The origin's port is chosen first: the worker points at it, and a restarted origin comes back on it.
  originPort = await freePort();
  edge = await startLocalEdge({
    vars: { ORIGIN_URL: `http://127.0.0.1:${originPort}`, EDGE_CACHE_TTL: "86400", EDGE_CACHE_NOT_FOUND_TTL: "86400" },
    knownIds: () => ids,
  });
  origin = await startOn();
}, 60_000);

afterAll(async () => {
  await edge?.close();
  await origin?.close();
  await standIn?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("purge on change through the worker and the origin", () => {
  it("checks the token at start with one purge of a tag no entry carries", () => {
    expect(standIn.calls[0]).toMatchObject({ body: { tags: ["slim-edge-verify"] }, outcome: "accepted" });
  });

  it("a write is purged and the next edge read fetches the new version; reads purge nothing", async () => {
    await write("a", '{"v":1}');
    await vi.waitFor(() => expect(taggedIn("a")).toHaveLength(1), { timeout: 10_000, interval: 5 });
    expect(await read("a")).toEqual({ status: 200, body: '{"v":1}' });
    await stored("a");
    const before = purgeCalls().length;
    for (let i = 0; i < 20; i++) expect(await read("a")).toEqual({ status: 200, body: '{"v":1}' }); // from the edge
    expect(purgeCalls().length).toBe(before);
    await write("a", '{"v":2}');
    await vi.waitFor(() => expect(taggedIn("a")).toHaveLength(2), { timeout: 10_000, interval: 5 });
    expect(await read("a")).toEqual({ status: 200, body: '{"v":2}' });
  });

  it("a 404 kept at the edge is purged when the item is created", async () => {
    expect((await read("later")).status).toBe(404);
    await stored("later");
    expect((await read("later")).status).toBe(404);
    await write("later", '{"now":true}');
    await vi.waitFor(() => expect(taggedIn("later")).toHaveLength(1), { timeout: 10_000, interval: 5 });
    expect(await read("later")).toEqual({ status: 200, body: '{"now":true}' });
  });

  it("a burst of writes to one id goes out as one tag", async () => {
    const calls = purgeCalls().length;
    await Promise.all(Array.from({ length: 5 }, (_, i) => write("burst", `{"n":${i}}`)));
    await vi.waitFor(() => expect(taggedIn("burst").length).toBeGreaterThan(0), { timeout: 10_000, interval: 5 });
    await vi.waitFor(() => expect(origin.duties.purgeStats()!.pending).toBe(0), { timeout: 10_000, interval: 5 });
    const sent = purgeCalls().slice(calls);
    // Each call names the tag once; the five writes fit one coalescing window unless the machine stalls.
    for (const call of sent) expect((call.body as { tags: string[] }).tags.filter((t) => t === "item:burst").length).toBeLessThanOrEqual(1);
    expect(taggedIn("burst").length).toBeLessThanOrEqual(2);
  });

  it("retries 5xx answers and 429s until Cloudflare accepts", async () => {
    standIn.setFault({ kind: "5xx", count: 2 });
    await write("flaky", '{"v":1}');
    await vi.waitFor(() => expect(taggedIn("flaky")).toHaveLength(1), { timeout: 20_000, interval: 10 });
    standIn.setFault({ kind: "429", count: 1, retryAfterS: 1 });
    await write("flaky", '{"v":2}');
    await vi.waitFor(() => expect(taggedIn("flaky")).toHaveLength(2), { timeout: 20_000, interval: 10 });
    expect(origin.duties.purgeStats()!.retried).toBeGreaterThanOrEqual(3);
    expect(await read("flaky")).toEqual({ status: 200, body: '{"v":2}' });
  });

  it("keeps what was pending across a restart of the origin, and purges it once back", async () => {
    standIn.setFault({ kind: "5xx", count: 1000 });
    await write("pending", '{"v":1}');
    await vi.waitFor(() => expect(origin.duties.purgeStats()!.retried).toBeGreaterThan(3), { timeout: 20_000, interval: 10 });
    await origin.close();
    standIn.setFault(null);
    origin = await startOn();
    await vi.waitFor(() => expect(taggedIn("pending")).toHaveLength(1), { timeout: 20_000, interval: 10 });
  });

  it("refuses to start with a token Cloudflare refuses, naming the variable and the fix", async () => {
    const error = await startOrigin({
      config: parseOriginConfig({ ...originEnv({ CLOUDFLARE_API_TOKEN: "wrong-token" }), PORT: "0", DATABASE_URL: join(dir, "other.sqlite") }),
      log: () => {},
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems[0]).toMatchObject({ variable: "CLOUDFLARE_API_TOKEN", message: expect.stringMatching(/Cache Purge/) });
  });
});
