// The origin cache service: one listener for items (PORT) and, unless METRICS_PORT=off, one for
// /metrics and /healthz. `startOrigin` wires the pieces:
//
//   request ─► fast-path.ts (simple GET/HEAD /items/:id, pre-encoded answers)
//          └─► node:http handler below (everything else: writes, errors, /healthz, /metrics)
//   both   ─► ReadyCache (src/origin/cache/) ─miss─► ItemLoader (coalesced) ─► SqliteItemStore
//   writes ─► SqliteItemStore (writer thread, fsync) ─► cache entry replaced ─► 204
//
// Wire bytes are defined in wire.ts; configuration in config.ts; the process entry is main.ts.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { isJsonContentType, readBody } from "./body.ts";
import { ReadyCache } from "./cache/ready-cache.ts";
import type { OriginConfig } from "./config.ts";
import { FastConnection, type FastContext, type FastRequest } from "./fast-path.ts";
import { checkAndMinifyJson } from "./json.ts";
import { ItemLoader, type LoaderHooks } from "./loader.ts";
import {
  OriginMetrics,
  ROUTE_HEALTHZ,
  ROUTE_ITEM,
  ROUTE_METRICS,
  ROUTE_OTHER,
  type RouteIndex,
  type StoreOp,
} from "./metrics.ts";
import { pickHeaders, type RequestHeaderPick } from "./request-headers.ts";
import { sampleItems } from "./seed.ts";
import { SqliteItemStore, type ItemStore } from "./store.ts";
import { TokenCheck } from "./token.ts";
import {
  etagFor,
  ifNoneMatchMatches,
  INTERNAL_ERROR,
  item200Head,
  item304Head,
  itemBody,
  itemHead,
  MISSING,
  TOKEN_ERROR,
  Wire,
  type ReadyEntry,
  type WireBytes,
} from "./wire.ts";

export const ITEM_ID = /^[A-Za-z0-9_-]{1,128}$/;
const ITEMS_PREFIX = "/items/";
const ALLOW = ["Allow", "GET, HEAD, PUT, DELETE"];
/** A declared body up to this size over MAX_ITEM_BYTES is drained (connection kept); beyond, closed. */
const DRAIN_LIMIT = 1 << 20;
const GRACE_MS = 10_000;

export interface StartOptions {
  config: OriginConfig;
  /** Replaces the SQLite store built from `config.databasePath` (tests wrap the real one to count reads). */
  store?: ItemStore;
  /** Cache clock in ms (tests advance it to expire entries). */
  now?: () => number;
  loaderHooks?: LoaderHooks;
  /** prom-client's process metrics (on in main, off in tests that start many instances). */
  defaultMetrics?: boolean;
  /** Serve simple GET/HEAD item reads on the fast path (default: config.fastPath). */
  fastPath?: boolean;
  /** How long a fast-path connection may sit on a partial request head (default: node's headersTimeout). */
  headersTimeoutMs?: number;
  log?: (line: string) => void;
}

export interface RunningOrigin {
  readonly url: string;
  readonly port: number;
  readonly metricsUrl: string | undefined;
  readonly server: Server;
  /** Whether item reads use the fast path (ORIGIN_FAST_PATH and ORIGIN_SEND_DATE decide). */
  readonly fastPath: boolean;
  readonly store: ItemStore;
  readonly cache: ReadyCache<ReadyEntry>;
  readonly loader: ItemLoader;
  readonly metrics: OriginMetrics;
  /** Items inserted by seeding on this start (0 if the store already had items). */
  readonly seeded: number;
  /** Stops listening, lets in-flight requests finish (bounded), closes the store. */
  close(): Promise<void>;
}

export async function startOrigin(options: StartOptions): Promise<RunningOrigin> {
  const { config } = options;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const store = options.store ?? new SqliteItemStore(config.databasePath);
  try {
    return await listen(options, store, log);
  } catch (error) {
    await store.close();
    throw error;
  }
}

async function listen(options: StartOptions, store: ItemStore, log: (line: string) => void): Promise<RunningOrigin> {
  const { config } = options;
  const seeded = config.seedItems > 0 ? store.seedIfEmpty(sampleItems(config.seedItems)) : 0;

  const cache = new ReadyCache<ReadyEntry>({
    maxBytes: config.cacheMaxBytes,
    ttlMs: config.cacheTtlMs,
    ...(options.now ? { now: options.now } : {}),
  });
  let metrics: OriginMetrics | undefined;
  let handOffs = 0;
  const hooks = options.loaderHooks ?? {};
  const wire = new Wire({ sendDate: config.sendDate, reasonPhrase: config.reasonPhrase });
  const loader = new ItemLoader(cache, store, (item) => wire.entry(item), {
    ...(hooks.onJoin ? { onJoin: hooks.onJoin } : {}),
    onStoreRead(seconds, ok) {
      metrics?.observeStore("get", seconds, ok);
      hooks.onStoreRead?.(seconds, ok);
    },
  });
  metrics = new OriginMetrics(
    {
      cacheStats: () => cache.stats,
      handOffs: () => handOffs,
      cacheMaxBytes: config.cacheMaxBytes,
      storeReads: () => loader.storeReads,
      coalesced: () => loader.coalesced,
    },
    { defaultMetrics: options.defaultMetrics ?? false },
  );
  const m = metrics;
  const token = config.token === undefined ? undefined : new TokenCheck(config.token);
  const pick: RequestHeaderPick = { token: undefined, ifNoneMatch: undefined, contentType: undefined };

  const timed = async <T>(op: StoreOp, run: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      const result = await run();
      m.observeStore(op, (performance.now() - started) / 1000, true);
      return result;
    } catch (error) {
      m.observeStore(op, (performance.now() - started) / 1000, false);
      throw error;
    }
  };

  const fail = (res: ServerResponse, route: RouteIndex, error: unknown) => {
    log(`origin: ${res.req.method} ${res.req.url} failed: ${(error as Error)?.stack ?? String(error)}`);
    if (res.headersSent) {
      res.destroy();
    } else {
      wire.error(res, 500, INTERNAL_ERROR);
    }
    m.countRequest(route, res.req.method, 500);
  };

  // ---- item reads: the hot path -----------------------------------------------------------------

  const answer = (res: ServerResponse, entry: ReadyEntry, ifNoneMatch: string | undefined, head: boolean): number => {
    if (!entry.found) {
      wire.empty(res, 404);
      return 404;
    }
    if (ifNoneMatch !== undefined && ifNoneMatchMatches(ifNoneMatch, entry.etag)) {
      wire.head(res, 304, item304Head(entry));
      return 304;
    }
    if (head) wire.head(res, 200, item200Head(entry));
    else wire.full(res, 200, item200Head(entry), itemBody(entry));
    return 200;
  };

  const read = (res: ServerResponse, id: string, method: string, ifNoneMatch: string | undefined) => {
    const head = method === "HEAD";
    const cached = cache.get(id);
    if (cached !== undefined) {
      m.countRequest(ROUTE_ITEM, method, answer(res, cached, ifNoneMatch, head));
      return;
    }
    loader.load(id).then(
      (entry) => m.countRequest(ROUTE_ITEM, method, answer(res, entry, ifNoneMatch, head)),
      (error: unknown) => fail(res, ROUTE_ITEM, error),
    );
  };

  // ---- item writes ------------------------------------------------------------------------------

  const put = async (req: IncomingMessage, res: ServerResponse, id: string, contentType: string | undefined) => {
    const reply = (status: number, message: string, close = false) => {
      wire.error(res, status, message, close);
      m.countRequest(ROUTE_ITEM, "PUT", status);
    };
    if (!isJsonContentType(contentType)) {
      reply(415, "Content-Type must be application/json (UTF-8)", bodyUnread(req));
      return;
    }
    const declared = req.headers["content-length"];
    if (declared !== undefined && Number(declared) > config.maxItemBytes) {
      // Node discards the unread body before the next request (keep-alive); a huge one closes instead.
      reply(413, `body is larger than MAX_ITEM_BYTES (${config.maxItemBytes})`, Number(declared) > DRAIN_LIMIT);
      return;
    }
    const body = await readBody(req, config.maxItemBytes);
    if (body.kind === "aborted") return;
    if (body.kind === "too-large") {
      reply(413, `body is larger than MAX_ITEM_BYTES (${config.maxItemBytes})`, true);
      return;
    }
    const json = checkAndMinifyJson(body.bytes);
    if (!json.ok) {
      reply(400, json.reason);
      return;
    }
    const { epoch, version } = await timed("put", () => store.put(id, json.minified));
    loader.replace(id, wire.entry({ epoch, version, body: json.minified }));
    wire.head(res, 204, ["ETag", etagFor(epoch, version)]);
    m.countRequest(ROUTE_ITEM, "PUT", 204);
  };

  const del = async (res: ServerResponse, id: string) => {
    await timed("delete", () => store.delete(id));
    loader.replace(id, MISSING);
    wire.head(res, 204);
    m.countRequest(ROUTE_ITEM, "DELETE", 204);
  };

  // ---- operational endpoints --------------------------------------------------------------------

  const healthz = (res: ServerResponse, method: string | undefined, route: RouteIndex) => {
    if (method !== "GET" && method !== "HEAD") {
      wire.empty(res, 405, ["Allow", "GET, HEAD"]);
      m.countRequest(route, method, 405);
      return;
    }
    const ok = store.ping();
    if (ok) wire.head(res, 204);
    else wire.error(res, 503, "store unavailable");
    m.countRequest(route, method, ok ? 204 : 503);
  };

  const metricsPage = (res: ServerResponse, method: string | undefined, route: RouteIndex) => {
    if (method !== "GET" && method !== "HEAD") {
      wire.empty(res, 405, ["Allow", "GET, HEAD"]);
      m.countRequest(route, method, 405);
      return;
    }
    m.render().then(
      ({ body, contentType }) => {
        const bytes = Buffer.from(body);
        const headers = ["Content-Type", contentType, "Content-Length", String(bytes.byteLength)];
        if (method === "HEAD") wire.head(res, 200, headers);
        else wire.full(res, 200, headers, bytes);
        m.countRequest(route, method, 200);
      },
      (error: unknown) => fail(res, route, error),
    );
  };

  // ---- dispatch ---------------------------------------------------------------------------------

  const writesInFlight = new WeakMap<Socket, Promise<void>>();

  const onItemPort = (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? "";
    const method = req.method ?? "";
    const route: RouteIndex = url.startsWith(ITEMS_PREFIX)
      ? ROUTE_ITEM
      : url === "/healthz"
        ? ROUTE_HEALTHZ
        : url === "/metrics"
          ? ROUTE_METRICS
          : ROUTE_OTHER;
    pickHeaders(req.rawHeaders, pick);
    if (token !== undefined && (pick.token == null || !token.accepts(pick.token))) {
      wire.error(res, 401, TOKEN_ERROR, bodyUnread(req));
      m.countRequest(route, method, 401);
      return;
    }
    if (route === ROUTE_ITEM) {
      const q = url.indexOf("?", ITEMS_PREFIX.length);
      const id = q === -1 ? url.slice(ITEMS_PREFIX.length) : url.slice(ITEMS_PREFIX.length, q);
      if (!ITEM_ID.test(id)) {
        wire.error(res, 400, "bad id: use 1-128 characters from A-Z a-z 0-9 _ -", bodyUnread(req));
        m.countRequest(route, method, 400);
        return;
      }
      // node:http hands us pipelined requests without waiting for earlier answers, so a read queued
      // behind a write on the same connection waits for that write (read-your-writes holds there too).
      const socket = req.socket;
      const earlier = writesInFlight.get(socket);
      switch (method) {
        case "GET":
        case "HEAD": {
          const ifNoneMatch = pick.ifNoneMatch;
          if (earlier === undefined) read(res, id, method, ifNoneMatch);
          else void earlier.then(() => read(res, id, method, ifNoneMatch));
          return;
        }
        case "PUT":
        case "DELETE": {
          const contentType = pick.contentType;
          const run = () =>
            (method === "PUT" ? put(req, res, id, contentType) : del(res, id)).catch((error: unknown) =>
              fail(res, route, error),
            );
          const mine = earlier === undefined ? run() : earlier.then(run);
          writesInFlight.set(socket, mine);
          void mine.then(() => {
            if (writesInFlight.get(socket) === mine) writesInFlight.delete(socket);
          });
          return;
        }
        default:
          wire.empty(res, 405, ALLOW);
          m.countRequest(route, method, 405);
          return;
      }
    }
    if (route === ROUTE_HEALTHZ) return healthz(res, method, route);
    if (route === ROUTE_METRICS) return metricsPage(res, method, route);
    wire.empty(res, 404);
    m.countRequest(route, method, 404);
  };

  const onMetricsPort = (req: IncomingMessage, res: ServerResponse) => {
    const method = req.method;
    if (req.url === "/healthz") return healthz(res, method, ROUTE_HEALTHZ);
    if (req.url === "/metrics") return metricsPage(res, method, ROUTE_METRICS);
    wire.empty(res, 404);
  };

  // ---- fast path: GET/HEAD /items/:id straight from pre-encoded answers ----------------------------

  const fastBytes = (entry: ReadyEntry, ifNoneMatch: string | undefined, head: boolean): WireBytes => {
    const method = head ? "HEAD" : "GET";
    if (!entry.found) {
      m.countRequest(ROUTE_ITEM, method, 404);
      return wire.fixed.notFound;
    }
    if (ifNoneMatch !== undefined && ifNoneMatchMatches(ifNoneMatch, entry.etag)) {
      m.countRequest(ROUTE_ITEM, method, 304);
      return entry.r304;
    }
    m.countRequest(ROUTE_ITEM, method, 200);
    return head ? itemHead(entry) : entry.r200;
  };

  // ---- listeners --------------------------------------------------------------------------------

  const server = createServer(onItemPort);
  server.keepAliveTimeout = config.keepAliveTimeoutMs;
  m.watch(server);

  // The fast path takes every new connection first and gives it to node:http's own connection listener
  // (the one createServer registered) when a request is not a simple item read. Node writes `Date`
  // itself, so ORIGIN_SEND_DATE keeps everything on node:http.
  const nodeListener = server.listeners("connection").find((fn) => fn.name === "connectionListener") as
    | ((this: Server, socket: Socket) => void)
    | undefined;
  const fastPath = (options.fastPath ?? config.fastPath) && !config.sendDate && nodeListener !== undefined;
  const fastConnections = new Set<FastConnection>();
  // Declared before any listener can use it: connections are accepted as soon as the item port listens,
  // while the metrics port is still being set up below.
  let closing: Promise<void> | undefined;
  if (fastPath) {
    const ctx: FastContext = {
      answer(req: FastRequest): WireBytes | Promise<WireBytes> {
        if (token !== undefined && (req.token == null || !token.accepts(req.token))) {
          m.countRequest(ROUTE_ITEM, req.head ? "HEAD" : "GET", 401);
          return req.head ? wire.fixed.unauthorizedHead : wire.fixed.unauthorized;
        }
        const cached = cache.get(req.id);
        if (cached !== undefined) return fastBytes(cached, req.ifNoneMatch, req.head);
        const { id, ifNoneMatch, head } = req;
        return loader.load(id).then(
          (entry) => fastBytes(entry, ifNoneMatch, head),
          (error: unknown) => {
            log(`origin: ${head ? "HEAD" : "GET"} /items/${id} failed: ${(error as Error)?.stack ?? String(error)}`);
            m.countRequest(ROUTE_ITEM, head ? "HEAD" : "GET", 500);
            return head ? wire.fixed.internalErrorHead : wire.fixed.internalError;
          },
        );
      },
      failed(error: unknown, head: boolean): WireBytes {
        log(`origin: fast path failed: ${(error as Error)?.stack ?? String(error)}`);
        m.countRequest(ROUTE_ITEM, head ? "HEAD" : "GET", 500);
        return head ? wire.fixed.internalErrorHead : wire.fixed.internalError;
      },
      handOff(socket: Socket, pending: Buffer | undefined, ended: boolean): void {
        handOffs++;
        nodeListener!.call(server, socket);
        if (pending !== undefined) socket.emit("data", pending);
        if (ended) socket.emit("end");
      },
      release(connection: FastConnection): void {
        fastConnections.delete(connection);
      },
      keepAliveTimeoutMs: config.keepAliveTimeoutMs,
      headersTimeoutMs: options.headersTimeoutMs ?? server.headersTimeout,
      requestTimeout: wire.fixed.requestTimeout,
    };
    server.off("connection", nodeListener!);
    server.on("connection", (socket: Socket) => {
      if (closing !== undefined) {
        socket.destroy();
        return;
      }
      fastConnections.add(new FastConnection(socket, ctx));
    });
  }

  await listenOn(server, config.port, config.host);
  const port = (server.address() as AddressInfo).port;

  let metricsServer: Server | undefined;
  let metricsUrl: string | undefined;
  if (config.metricsPort !== undefined) {
    metricsServer = createServer(onMetricsPort);
    try {
      await listenOn(metricsServer, config.metricsPort, config.metricsHost);
    } catch (error) {
      // Refuse new connections and drop the ones accepted meanwhile (fast path and node:http alike).
      closing = Promise.resolve();
      server.close();
      server.closeAllConnections();
      for (const c of fastConnections) c.socket.destroy();
      throw error;
    }
    metricsUrl = `http://${hostForUrl(config.metricsHost)}:${(metricsServer.address() as AddressInfo).port}`;
  }

  const close = () =>
    (closing ??= (async () => {
      const stopped = Promise.all([closeServer(server), metricsServer ? closeServer(metricsServer) : undefined]);
      for (const c of fastConnections) c.shutdown();
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          server.closeAllConnections();
          metricsServer?.closeAllConnections();
          for (const c of fastConnections) c.socket.destroy();
          resolve();
        }, GRACE_MS);
        timer.unref();
      });
      await Promise.race([stopped, grace]);
      clearTimeout(timer);
      await store.close();
    })());

  return {
    url: `http://${hostForUrl(config.host)}:${port}`,
    port,
    metricsUrl,
    server,
    fastPath,
    store,
    cache,
    loader,
    metrics: m,
    seeded,
    close,
  };
}

/** True if the request may still have body bytes we did not read (answering then closes the connection). */
function bodyUnread(req: IncomingMessage): boolean {
  if (req.complete) return false;
  const declared = req.headers["content-length"];
  if (declared !== undefined) return Number(declared) > DRAIN_LIMIT;
  return req.headers["transfer-encoding"] !== undefined;
}

function listenOn(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once("error", onError);
    server.listen(port, host, () => {
      server.off("error", onError);
      resolve();
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}

function hostForUrl(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}
