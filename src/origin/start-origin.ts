// Composes one origin instance from its parts and starts its listeners:
//
//   request ─► http/fast/ (simple GET/HEAD /items/:id, pre-encoded answers)
//          └─► http/node-transport.ts (everything else: writes, errors, /healthz, /metrics)
//   both   ─► http/item-reads.ts ─► reads/ready-items.ts (cache) ─miss─► reads/item-loader.ts ─► store/
//   writes ─► http/item-writes.ts ─► store/ (committed) ─► cache entry replaced ─► 204
//
// Configuration comes from config/; the process entry (flags, signals) is main.ts.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { OriginConfig } from "./config/parse-origin-config.ts";
import { feedFor, openStore, startDutiesFor } from "./backing.ts";
import type { ChangeFeed } from "./feed/change-feed.ts";
import { expectsContinue } from "./http/body.ts";
import { attachFastPath, type FastPath } from "./http/fast/fast-transport.ts";
import { ItemReads } from "./http/item-reads.ts";
import { ItemWrites } from "./http/item-writes.ts";
import { itemPortListener, metricsPortListener } from "./http/node-transport.ts";
import { Operational } from "./http/operational.ts";
import { TokenCheck } from "./http/token-check.ts";
import { Wire } from "./http/wire.ts";
import { closeServer, listenOn, urlOf, withinGrace } from "./lifecycle/listeners.ts";
import { OriginMetrics } from "./metrics.ts";
import { ItemLoader, type LoaderHooks } from "./reads/item-loader.ts";
import { KnownIds } from "./reads/known-ids.ts";
import { readyItems, type ReadyItems } from "./reads/ready-items.ts";
import type { LeaderDuties } from "./purge/leader-duties.ts";
import type { ItemStore } from "./store/item-store.ts";
import { sampleItems } from "./store/sample-items.ts";

/** How long answers in flight may take to finish once shutdown starts. */
const GRACE_MS = 10_000;

export interface StartOptions {
  config: OriginConfig;
  /** Replaces the store built from `config.database` (tests wrap the real one to count reads). */
  store?: ItemStore;
  /** Replaces the change feed built from `config.database`. */
  feed?: ChangeFeed;
  /** PostgreSQL: the write epoch of this instance's store session (tests compare instances byte for byte). */
  writeEpoch?: string;
  /** Cache clock in ms (tests advance it to expire entries). */
  now?: () => number;
  loaderHooks?: LoaderHooks;
  /** prom-client's process metrics (on in main, off in tests that start many instances). */
  defaultMetrics?: boolean;
  /** Serve simple GET/HEAD item reads on the fast path (default: config.fastPath). */
  fastPath?: boolean;
  /** How long a fast-path connection may sit on a partial request head (default: node's headersTimeout). */
  headersTimeoutMs?: number;
  /** A write through this instance committed (cluster mode relays it to the other processes). */
  onCommitted?: (id: string) => void;
  /** Embedded SQLite: whether this process purges the edge and prunes the change log (default true; the cluster primary picks one process). */
  sqliteLeader?: boolean;
  /** False for a process started in place of one that died: a refused purge token then does not stop it. */
  purgeRefusalStopsStart?: boolean;
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
  readonly feed: ChangeFeed;
  /** Purging the edge and pruning the change log, when this instance leads. */
  readonly duties: LeaderDuties;
  readonly cache: ReadyItems;
  readonly loader: ItemLoader;
  readonly known: KnownIds;
  readonly metrics: OriginMetrics;
  /** Items inserted by seeding on this start (0 if the store already had items). */
  readonly seeded: number;
  /** Stops listening, lets in-flight requests finish (bounded), closes the store. */
  close(): Promise<void>;
}

export async function startOrigin(options: StartOptions): Promise<RunningOrigin> {
  const { config } = options;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const store = options.store ?? (await openStore(config, options.writeEpoch, log));
  const feed = options.feed ?? feedFor(config, log);
  try {
    return await start(options, store, feed, log);
  } catch (error) {
    await feed.close();
    await store.close();
    throw error;
  }
}

async function start(options: StartOptions, store: ItemStore, feed: ChangeFeed, log: (line: string) => void): Promise<RunningOrigin> {
  const { config } = options;
  const seeded = config.seedItems > 0 ? await store.seedIfEmpty(sampleItems(config.seedItems)) : 0;
  const duties = await startDutiesFor(config, store, options.sqliteLeader ?? true, log, options.purgeRefusalStopsStart ?? true);
  try {
    return await serve(options, store, feed, duties, seeded, log);
  } catch (error) {
    await duties.close();
    throw error;
  }
}

async function serve(
  options: StartOptions,
  store: ItemStore,
  feed: ChangeFeed,
  duties: LeaderDuties,
  seeded: number,
  log: (line: string) => void,
): Promise<RunningOrigin> {
  const { config } = options;
  const cache = readyItems({ maxBytes: config.cacheMaxBytes, ttlMs: config.cacheTtlMs, ...(options.now ? { now: options.now } : {}) });
  const wire = new Wire({ sendDate: config.sendDate, reasonPhrase: config.reasonPhrase });
  let metrics: OriginMetrics | undefined;
  const hooks = options.loaderHooks ?? {};
  // The loader is made next; the first build, which asks it, starts below.
  const known = new KnownIds(store, config.idFilterCapacity, () => feed.healthy, log, () => loader.writesInFlight());
  const loader = new ItemLoader(
    cache,
    store,
    (item) => wire.entry(item),
    {
      ...(hooks.onJoin ? { onJoin: hooks.onJoin } : {}),
      onStoreRead(seconds, ok) {
        metrics?.observeStore("get", seconds, ok);
        hooks.onStoreRead?.(seconds, ok);
      },
    },
    (id) => known.add(id),
  );
  let fast: FastPath | undefined;
  let reads: ItemReads | undefined;
  metrics = new OriginMetrics(
    {
      cacheStats: () => cache.stats,
      handOffs: () => fast?.handOffs ?? 0,
      cacheMaxBytes: config.cacheMaxBytes,
      storeReads: () => loader.storeReads,
      coalesced: () => loader.coalesced,
      ownChangesKept: () => loader.ownChangesKept,
      feed: () => feed,
      staleServed: () => reads?.staleServed ?? 0,
      knownIds: () => known.stats,
      duties: () => duties,
    },
    { defaultMetrics: options.defaultMetrics ?? false },
  );
  reads = new ItemReads({
    cache,
    loader,
    known,
    token: config.token === undefined ? undefined : new TokenCheck(config.token),
    metrics,
    feed,
    staleBoundMs: config.feedStaleBoundMs,
    log,
    ...(options.now ? { now: options.now } : {}),
  });
  // Before the port opens: every change committed from now on reaches the (still empty) cache.
  await feed.start({
    changed: (id, transaction) => {
      known.add(id);
      loader.changed(id, transaction);
      duties.changed();
    },
    lostTrack: (reason) => {
      store.renewWriteEpoch?.();
      void known.build(`changes were missed: ${reason}`, true);
      loader.invalidateAll();
    },
  });
  // Built while the port serves: until it is ready every miss reads the store, as without it.
  void known.build("start");
  const writes = new ItemWrites({
    store,
    loader,
    wire,
    metrics,
    maxItemBytes: config.maxItemBytes,
    // Clients see no database address: the startup line names the table for the operator.
    readOnlyReason: "items come from a table the origin does not own (ITEMS_TABLE): change them there; PUT and DELETE are refused",
    committed: (id) => {
      options.onCommitted?.(id);
      duties.changed();
    },
    log,
  });
  const operational = new Operational(wire, metrics, store, log);

  const listener = itemPortListener({ reads, writes, operational, wire, metrics });
  // A missing Host is refused by the listener, in the origin's own words and bytes (request-headers.ts).
  const server = createServer({ requireHostHeader: false }, listener);
  server.keepAliveTimeout = config.keepAliveTimeoutMs;
  // keepAliveTimeout only starts once an answer has finished: a client that stops reading mid-answer would
  // hold its connection for ever. The same bound as inactivity on any socket (the fast path's own too).
  server.timeout = config.keepAliveTimeoutMs;
  metrics.watch(server);
  // Node writes `Date` itself, so ORIGIN_SEND_DATE keeps everything on node:http.
  if ((options.fastPath ?? config.fastPath) && !config.sendDate) {
    fast = attachFastPath(server, {
      reads,
      wire,
      keepAliveTimeoutMs: config.keepAliveTimeoutMs,
      ...(options.headersTimeoutMs === undefined ? {} : { headersTimeoutMs: options.headersTimeoutMs }),
    });
  }

  // Without this node:http sends `100 Continue` before the request is looked at (body.ts says why not).
  const onContinue = (req: IncomingMessage, res: ServerResponse) => {
    expectsContinue(req, res);
    listener(req, res);
  };
  await listenOn(server, config.port, config.host, onContinue);
  const port = (server.address() as AddressInfo).port;

  let metricsServer: Server | undefined;
  if (config.metricsPort !== undefined) {
    metricsServer = createServer({ requireHostHeader: false }, metricsPortListener(operational, wire));
    try {
      await listenOn(metricsServer, config.metricsPort, config.metricsHost);
    } catch (error) {
      // Refuse new connections and drop the ones accepted meanwhile (fast path and node:http alike).
      server.close();
      server.closeAllConnections();
      fast?.destroyAll();
      throw error;
    }
  }

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      const stopped = Promise.all([closeServer(server), metricsServer ? closeServer(metricsServer) : undefined]);
      fast?.shutdown();
      await withinGrace(stopped, GRACE_MS, () => {
        server.closeAllConnections();
        metricsServer?.closeAllConnections();
        fast?.destroyAll();
      });
      known.close();
      await duties.close();
      await feed.close();
      await store.close();
    })());

  return {
    url: urlOf(config.host, port),
    port,
    metricsUrl: metricsServer === undefined ? undefined : urlOf(config.metricsHost, (metricsServer.address() as AddressInfo).port),
    server,
    fastPath: fast !== undefined,
    store,
    feed,
    duties,
    cache,
    loader,
    known,
    metrics,
    seeded,
    close,
  };
}
