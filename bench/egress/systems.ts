// The systems the meter compares, each with a byte-counting relay on the origin's side:
//
//   before:  client ──▶ relay ──▶ seed system (ingress-nginx CORS + Koa, emulated in this process)
//   after:   client ──▶ worker (Miniflare / workerd) ──▶ relay ──▶ origin (src/origin, SQLite)     TTL mode
//   purge:   the same, the worker keeping items (and 404s) a day, the origin purging each change through the
//            Cloudflare API stand-in, which deletes the purged entries from the worker's own cache
//
// Writes go straight to each origin (as internal writers do), never through the relay.

import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startCloudflareApiStandIn, type CloudflareApiStandIn } from "../../scripts/lib/cloudflare-api-stand-in.ts";
import { startLocalEdge, type LocalEdge } from "../../scripts/lib/local-edge.ts";
import { freePort } from "../../scripts/lib/local-stack.ts";
import type { PurgePlanName } from "../../src/origin/purge/token-bucket.ts";
import { parsePromText } from "../origin/prom-text.ts";
import { onCleanup, registerTempDir, spawnReady, stopChild } from "./processes.ts";
import { ByteRelay } from "./relay.ts";
import type { Replayer, RequestRecord } from "./replay.ts";
import { startSeedSystem } from "./seed-system.ts";
import type { WriteAck } from "./staleness.ts";
import { itemBody, type Traffic, type WriteEvent } from "./traffic.ts";

/** The relay forwards to whichever replayer is current (set before each replay). */
export interface Measured {
  relay: ByteRelay<RequestRecord>;
  /** Port the client talks to. */
  clientPort: number;
  /** One write straight to the origin; resolves with its 204. */
  write: (event: WriteEvent) => Promise<WriteAck>;
  setReplayer(replayer: Replayer): void;
  stop(): Promise<void>;
}

/** The two ways slim-edge keeps its edge cache fresh. */
export type EdgeMode = "ttl" | "purge";

/** A day: how long purge mode keeps items and 404s at the edge (the intended setting; purges keep them fresh). */
export const PURGE_MODE_TTL = "86400";

/** A slim-edge system: the worker under Miniflare in front of the origin, in one mode. */
export interface EdgeSystem extends Measured {
  mode: EdgeMode;
  edge: LocalEdge;
  /** The vars the worker runs with (ORIGIN_TOKEN left out). */
  workerVars: Record<string, string>;
  /** Purge mode: the Cloudflare API stand-in the origin purges through, and the account's plan. */
  standIn: CloudflareApiStandIn | undefined;
  plan: PurgePlanName | undefined;
}

function relayFor(upstreamPort: number): { relay: ByteRelay<RequestRecord>; setReplayer(r: Replayer): void } {
  let current: Replayer | undefined;
  const relay = new ByteRelay<RequestRecord>({
    upstreamPort,
    attribute: (head, connection) => current?.attribute(head, connection) as RequestRecord,
    onResponse: (token, response, request) => current?.onOriginResponse(token, response, request),
  });
  return { relay, setReplayer: (r) => (current = r) };
}

function initialItems(traffic: Traffic): Iterable<readonly [string, string]> {
  if (traffic.items.kind === "explicit") return traffic.items.bodies;
  const count = traffic.items.count;
  return (function* () {
    for (let n = 1; n <= count; n++) yield [String(n), itemBody(String(n), 0)] as const;
  })();
}

export async function startBefore(traffic: Traffic): Promise<Measured> {
  const seed = await startSeedSystem(initialItems(traffic));
  onCleanup(() => seed.close());
  const { relay, setReplayer } = relayFor(seed.port);
  await relay.listen();
  onCleanup(() => relay.close());
  const writer = new Writer(seed.url, undefined, false);
  return {
    relay,
    clientPort: relay.port,
    write: (e) => writer.send(e),
    setReplayer,
    stop: async () => {
      await relay.close();
      await seed.close();
    },
  };
}

export interface EdgeSystemOptions {
  mode: EdgeMode;
  /** Purge mode: the account's plan (the stand-in's rate limit and CLOUDFLARE_PURGE_PLAN). */
  plan: PurgePlanName;
  /** Ids a purge of every item (`items`) reaches: every id the traffic names. */
  knownIds: ReadonlySet<string>;
  echo: boolean;
  log: (line: string) => void;
}

/**
 * Starts the origin (fresh SQLite file, run token, metrics off), the relay in front of it and the worker under
 * Miniflare pointed at the relay; in purge mode also the Cloudflare API stand-in, whose accepted purges are
 * applied to the worker's cache before it answers 200.
 */
export async function startEdgeSystem(traffic: Traffic, options: EdgeSystemOptions): Promise<EdgeSystem> {
  const { mode } = options;
  const dir = mkdtempSync(join(tmpdir(), `slim-edge-egress-${mode}-`));
  registerTempDir(dir);
  const token = randomBytes(24).toString("base64url");

  let edge: LocalEdge | undefined;
  let standIn: CloudflareApiStandIn | undefined;
  const purgeEnv: Record<string, string> = {};
  if (mode === "purge") {
    const apiToken = randomBytes(24).toString("base64url");
    const zoneId = randomBytes(16).toString("hex");
    standIn = await startCloudflareApiStandIn({
      token: apiToken,
      zoneId,
      plan: options.plan,
      // Before the worker is up nothing is cached, so a purge then has nothing to do.
      onPurge: async (tags) => void (await edge?.purgeTags(tags)),
    });
    const api = standIn;
    onCleanup(() => api.close());
    Object.assign(purgeEnv, {
      CLOUDFLARE_ZONE_ID: zoneId,
      CLOUDFLARE_API_TOKEN: apiToken,
      CLOUDFLARE_API_BASE: standIn.baseUrl,
      CLOUDFLARE_PURGE_PLAN: options.plan,
    });
  }

  const originPort = await freePort();
  const origin = await spawnReady(
    `origin ${mode}`,
    "node",
    ["src/origin/main.ts"],
    {
      ...process.env,
      HOST: "127.0.0.1",
      PORT: String(originPort),
      DATABASE_URL: join(dir, "origin.sqlite"),
      SEED_SAMPLE_ITEMS: traffic.items.kind === "sample" ? String(traffic.items.count) : "0",
      ORIGIN_TOKEN: token,
      METRICS_PORT: "off",
      ...purgeEnv,
    },
    /listening on/i,
    30_000,
    options.echo,
  );
  onCleanup(() => stopChild(origin.child));
  const originUrl = `http://127.0.0.1:${originPort}`;
  const writer = new Writer(originUrl, token, true);

  if (traffic.items.kind === "explicit") {
    options.log(`egress: creating ${traffic.items.bodies.size} items from the log on the ${mode} origin…`);
    for (const [id, body] of traffic.items.bodies) await writer.put(id, body);
  }
  // The items just created are changes: their purge (one wide purge for 10,000 seeded items) and its repeat
  // come before the edge is filled, as they would have on an edge that has run for a day.
  const created = traffic.items.kind === "sample" ? traffic.items.count : traffic.items.bodies.size;
  if (mode === "purge") await purgesSettled(originUrl, token, created > 0);

  const { relay, setReplayer } = relayFor(originPort);
  await relay.listen();
  onCleanup(() => relay.close());

  const workerVars: Record<string, string> = {
    ...traffic.workerVars,
    ...(mode === "purge" ? { EDGE_CACHE_TTL: PURGE_MODE_TTL, EDGE_CACHE_NOT_FOUND_TTL: PURGE_MODE_TTL } : {}),
    ORIGIN_URL: relay.url,
  };
  edge = await startLocalEdge({
    vars: { ...workerVars, ORIGIN_TOKEN: token },
    knownIds: () => options.knownIds,
    ...(options.echo ? { log: (line: string) => process.stderr.write(`[worker ${mode}] ${line}\n`) } : {}),
  });
  const worker = edge;
  onCleanup(() => worker.close());
  // The origin first: a purge leader that stops sends the repeats it still owes, to the worker's cache.
  const stop = async () => {
    await stopChild(origin.child, 20_000);
    await worker.close();
    await relay.close();
    await standIn?.close();
  };
  return {
    mode,
    edge: worker,
    workerVars,
    standIn,
    plan: mode === "purge" ? options.plan : undefined,
    relay,
    clientPort: worker.port,
    write: (e) => writer.send(e),
    setReplayer,
    stop,
  };
}

/**
 * Waits (up to a minute) until the origin's purger has purged something (`created`: there were changes), has
 * nothing pending and owes no repeat, from its /metrics.
 */
async function purgesSettled(originUrl: string, token: string, created: boolean): Promise<void> {
  const deadline = performance.now() + 60_000;
  for (;;) {
    const page = await (await fetch(`${originUrl}/metrics`, { headers: { "x-origin-token": token } })).text();
    const samples = parsePromText(page);
    const gauge = (name: string) => samples.get(name) ?? NaN;
    const purged = !created || gauge("origin_purge_tags_total") > 0;
    if (purged && gauge("origin_purge_pending") === 0 && gauge("origin_purge_repeats_owed") === 0) return;
    if (performance.now() > deadline) throw new Error(`the purge-mode origin still purges a minute after it started:\n${page.split("\n").filter((l) => l.startsWith("origin_purge")).join("\n")}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Internal writes straight to an origin over one keep-alive connection (fetch's pool). */
class Writer {
  readonly #base: string;
  readonly #token: string | undefined;
  /** Learn the new version's ETag (slim-edge's origin announces it in the 204; else one direct GET). */
  readonly #etags: boolean;

  constructor(base: string, token: string | undefined, etags: boolean) {
    this.#base = base;
    this.#token = token;
    this.#etags = etags;
  }

  async put(id: string, body: string): Promise<void> {
    await this.#request("PUT", id, body);
  }

  async send(event: WriteEvent): Promise<WriteAck> {
    const announced = await this.#request(event.method, event.id, event.body);
    const at = performance.now();
    if (!this.#etags || event.method === "DELETE") return { at, etag: undefined };
    return { at, etag: announced ?? (await this.#currentEtag(event.id)) };
  }

  #headers(): Record<string, string> {
    return this.#token === undefined ? {} : { "x-origin-token": this.#token };
  }

  async #request(method: "PUT" | "DELETE", id: string, body: string | undefined): Promise<string | undefined> {
    const headers = this.#headers();
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(`${this.#base}/items/${id}`, { method, headers, ...(body !== undefined ? { body } : {}) });
    await response.arrayBuffer();
    if (response.status !== 204) throw new Error(`write ${method} /items/${id} answered ${response.status}, expected 204`);
    return response.headers.get("etag") ?? undefined;
  }

  /** The item's ETag now, straight from the origin (not through the relay: not counted). */
  async #currentEtag(id: string): Promise<string | undefined> {
    const response = await fetch(`${this.#base}/items/${id}`, { headers: this.#headers() });
    await response.arrayBuffer();
    return response.status === 200 ? (response.headers.get("etag") ?? undefined) : undefined;
  }
}
