// The two systems the meter compares, each with a byte-counting relay on the origin's side:
//
//   before:  client ──▶ relay ──▶ seed system (ingress-nginx CORS + Koa, emulated in this process)
//   after:   client ──▶ worker (wrangler dev / workerd) ──▶ relay ──▶ origin (src/origin, SQLite)
//
// Writes go straight to each origin (as internal writers do), never through the relay.

import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../scripts/lib/local-stack.ts";
import { answers, onCleanup, registerTempDir, spawnReady, stopChild } from "./processes.ts";
import { ByteRelay } from "./relay.ts";
import type { Replayer, RequestRecord } from "./replay.ts";
import { startSeedSystem } from "./seed-system.ts";
import { itemBody, type Traffic, type WriteEvent } from "./traffic.ts";

/** The relay forwards to whichever replayer is current (set before each replay). */
export interface Measured {
  relay: ByteRelay<RequestRecord>;
  /** Port the client talks to. */
  clientPort: number;
  write: (event: WriteEvent) => Promise<void>;
  setReplayer(replayer: Replayer): void;
  stop(): Promise<void>;
}

function relayFor(upstreamPort: number): { relay: ByteRelay<RequestRecord>; setReplayer(r: Replayer): void } {
  let current: Replayer | undefined;
  const relay = new ByteRelay<RequestRecord>({
    upstreamPort,
    attribute: (head, connection) => current?.attribute(head, connection) as RequestRecord,
    onResponse: (token, response) => current?.onOriginResponse(token, response),
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
  const writer = new Writer(seed.url, undefined);
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

export interface AfterOptions {
  echo: boolean;
  /** Milliseconds to wait for wrangler dev to be ready. */
  startTimeoutMs: number;
  log: (line: string) => void;
  /** More `wrangler dev` arguments. */
  wranglerArgs?: string[];
}

export async function startAfter(traffic: Traffic, options: AfterOptions): Promise<Measured> {
  const dir = mkdtempSync(join(tmpdir(), "slim-edge-egress-"));
  registerTempDir(dir);
  const token = randomBytes(24).toString("base64url");

  const originPort = await freePort();
  const origin = await spawnReady(
    "origin",
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
    },
    /listening on/i,
    30_000,
    options.echo,
  );
  onCleanup(() => stopChild(origin.child));
  const originUrl = `http://127.0.0.1:${originPort}`;
  const writer = new Writer(originUrl, token);

  if (traffic.items.kind === "explicit") {
    options.log(`egress: creating ${traffic.items.bodies.size} items from the log on the origin…`);
    for (const [id, body] of traffic.items.bodies) await writer.put(id, body);
  }

  const { relay, setReplayer } = relayFor(originPort);
  await relay.listen();
  onCleanup(() => relay.close());

  const workerPort = await freePort();
  const vars: Record<string, string> = { ...traffic.workerVars, ORIGIN_URL: relay.url, ORIGIN_TOKEN: token };
  const args = [
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(workerPort),
    "--inspector-port",
    String(await freePort()),
    "--show-interactive-dev-session=false",
    "--log-level",
    "warn",
    "--persist-to",
    join(dir, "wrangler-state"),
    ...Object.entries(vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
    ...(options.wranglerArgs ?? []),
  ];
  const worker = await spawnReady(
    "worker",
    "wrangler",
    args,
    { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", NO_COLOR: "1" },
    // Request logging is off (--log-level warn: it costs the local runtime a third of its throughput), so
    // readiness is the worker answering, not the "Ready on" line.
    answers(`http://127.0.0.1:${workerPort}/__egress_ready`),
    options.startTimeoutMs,
    options.echo,
  );
  onCleanup(() => stopChild(worker.child));
  const stop = async () => {
    await stopChild(worker.child);
    await relay.close();
    await stopChild(origin.child);
  };
  return { relay, clientPort: workerPort, write: (e) => writer.send(e), setReplayer, stop };
}

/** Internal writes straight to an origin over one keep-alive connection (fetch's pool). */
class Writer {
  readonly #base: string;
  readonly #token: string | undefined;

  constructor(base: string, token: string | undefined) {
    this.#base = base;
    this.#token = token;
  }

  async put(id: string, body: string): Promise<void> {
    await this.#request("PUT", id, body);
  }

  send(event: WriteEvent): Promise<void> {
    return this.#request(event.method, event.id, event.body);
  }

  async #request(method: "PUT" | "DELETE", id: string, body: string | undefined): Promise<void> {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.#token !== undefined) headers["x-origin-token"] = this.#token;
    const response = await fetch(`${this.#base}/items/${id}`, { method, headers, ...(body !== undefined ? { body } : {}) });
    await response.arrayBuffer();
    if (response.status !== 204) throw new Error(`write ${method} /items/${id} answered ${response.status}, expected 204`);
  }
}
