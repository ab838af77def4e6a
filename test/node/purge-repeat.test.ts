// The race a second purge closes, end to end with real parts: the worker (Miniflare) misses an item and asks
// the origin, the origin answers with the version it has, and that answer is held on its way back (a proxy on
// loopback stands for a slow network) while the item is written and its purge lands. The old version then
// reaches the worker after the purge and is stored: without more, the edge would serve it for EDGE_CACHE_TTL.
// The origin's purger sends the purge once more CLOUDFLARE_PURGE_REPEAT_MS later, which drops it. Waits are
// on conditions (bounded); nothing sleeps to synchronise.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startCloudflareApiStandIn, type CloudflareApiStandIn } from "../../scripts/lib/cloudflare-api-stand-in.ts";
import { startLocalEdge, type LocalEdge } from "../../scripts/lib/local-edge.ts";
import { freePort } from "../../scripts/lib/local-stack.ts";
import { parseOriginConfig } from "../../src/origin/config/parse-origin-config.ts";
import { startOrigin, type RunningOrigin } from "../../src/origin/start-origin.ts";
import { acceptedPurgesOf, itemTraffic, purgingOriginEnv } from "../support/node/purge-e2e.ts";

const ZONE = "0123456789abcdef0123456789abcdef";
const TOKEN = "purge-repeat-token-0123456789";
/** The worker's deadline and the origin's repeat: the repeat must come later than any fill can. */
const ORIGIN_TIMEOUT_MS = 3_000;
const REPEAT_MS = 4_000;
const dir = mkdtempSync(join(tmpdir(), "slim-purge-repeat-"));
let standIn: CloudflareApiStandIn;
let edge: LocalEdge;
let origin: RunningOrigin;
let proxy: Server;
let originPort = 0;
const ids = new Set<string>();

/** The next answer for `path` is held, once the origin has sent all of it, until its release is called. */
let hold: { path: string; resolve: (release: () => void) => void } | undefined;

function startProxy(): Promise<Server> {
  const server = createServer((req, res) => {
    const upstream = request({ host: "127.0.0.1", port: originPort, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on("data", (chunk: Buffer) => chunks.push(chunk));
      answer.on("end", () => {
        const send = () => {
          res.writeHead(answer.statusCode!, answer.headers);
          res.end(Buffer.concat(chunks));
        };
        if (hold !== undefined && hold.path === req.url) {
          const { resolve } = hold;
          hold = undefined;
          resolve(send);
        } else send();
      });
    });
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

const { read, write } = itemTraffic(() => edge.url, () => `http://127.0.0.1:${originPort}`, ids);
const taggedIn = (id: string) => acceptedPurgesOf(standIn.calls, id);
const storedBody = async (id: string) => {
  const found = await (await edge.cache()).match(edge.itemKey(id));
  return found === undefined ? undefined : new TextDecoder().decode(await found.arrayBuffer());
};

beforeAll(async () => {
  standIn = await startCloudflareApiStandIn({ token: TOKEN, zoneId: ZONE, plan: "pro", onPurge: async (tags) => void (await edge.purgeTags(tags)) });
  originPort = await freePort();
  proxy = await startProxy();
  edge = await startLocalEdge({
    vars: {
      ORIGIN_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
      ORIGIN_TIMEOUT_MS: String(ORIGIN_TIMEOUT_MS),
      EDGE_CACHE_TTL: "86400",
      EDGE_CACHE_NOT_FOUND_TTL: "86400",
    },
    knownIds: () => ids,
  });
  const env = purgingOriginEnv({ port: originPort, databaseUrl: join(dir, "items.sqlite"), apiBase: standIn.baseUrl, zoneId: ZONE, token: TOKEN, repeatMs: REPEAT_MS });
  origin = await startOrigin({ config: parseOriginConfig(env), log: () => {} });
}, 60_000);

afterAll(async () => {
  await edge?.close();
  await origin?.close();
  await new Promise((resolve) => proxy?.close(resolve));
  await standIn?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("a fill that lands after its item's purge", () => {
  it("is stored with the old version, and dropped by the purge's repeat", async () => {
    await write("race", '{"v":1}');
    // The first write's purge and its repeat, so that neither can be mistaken for the ones below.
    await vi.waitFor(() => expect(taggedIn("race")).toHaveLength(2), { timeout: 20_000, interval: 10 });

    const held = new Promise<() => void>((resolve) => (hold = { path: "/items/race", resolve }));
    const askedAt = Date.now();
    const slowRead = read("race");
    const release = await held; // the origin has answered {"v":1}

    await write("race", '{"v":2}');
    await vi.waitFor(() => expect(taggedIn("race")).toHaveLength(3), { timeout: 20_000, interval: 10 });
    const purgedAt = Date.now();

    // The slowest network the worker still accepts: the answer arrives just inside its deadline.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, askedAt + ORIGIN_TIMEOUT_MS - 800 - Date.now())));
    release();
    expect(await slowRead).toEqual({ status: 200, body: '{"v":1}' });
    await vi.waitFor(async () => expect(await storedBody("race")).toBe('{"v":1}'), { timeout: 10_000, interval: 5 });
    expect(await read("race")).toEqual({ status: 200, body: '{"v":1}' }); // stale, from the edge, after the purge

    await vi.waitFor(() => expect(taggedIn("race")).toHaveLength(4), { timeout: 20_000, interval: 10 });
    const [, , first, repeat] = taggedIn("race");
    expect(repeat!.at - first!.at).toBeGreaterThanOrEqual(REPEAT_MS);
    expect(Date.now() - purgedAt).toBeLessThan(REPEAT_MS + 5_000);
    expect(await read("race")).toEqual({ status: 200, body: '{"v":2}' });
    expect(origin.duties.purgeStats()).toMatchObject({ state: "ok", repeatedTags: 2 });
  }, 60_000);
});
