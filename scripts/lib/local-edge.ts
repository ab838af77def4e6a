// The worker under Miniflare (workerd, the runtime `wrangler dev` runs), started from Node with its edge cache
// reachable from Node: a purge can then be applied to the very cache the worker reads, so the egress meter and
// the tests observe a purge end to end instead of assuming it. Used by bench/egress (TTL and purge mode) and
// test/node/egress-purge-e2e.test.ts.
//
// How: src/edge/worker.ts is bundled in memory with esbuild the way wrangler bundles it (ESM, es2024, the
// workerd/worker/browser export conditions), run by Miniflare with the compatibility date and flags of
// wrangler.toml and the given vars as plain-text bindings, on a loopback port. `getCaches()` hands Node the
// worker's `caches` (Miniflare proxies the calls into workerd), and `purgeTags` deletes what a purge by tag would.

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { convertV4MiniflareOptions, Miniflare } from "miniflare";
import { parse } from "smol-toml";
import { ALL_ITEMS_TAG, itemTag } from "../../src/shared/cache-tag.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const ENTRY = `${ROOT}src/edge/worker.ts`;
const GENERATED = `${ROOT}src/edge/headers/internal-headers.generated.ts`;

/** `compatibility_date` and `compatibility_flags` of wrangler.toml: the worker runs as it would deployed. */
export function wranglerCompatibility(configPath = `${ROOT}wrangler.toml`): { date: string; flags: string[] } {
  const config = parse(readFileSync(configPath, "utf8")) as { compatibility_date?: unknown; compatibility_flags?: unknown };
  if (typeof config.compatibility_date !== "string") throw new Error(`${configPath} has no compatibility_date`);
  const flags = Array.isArray(config.compatibility_flags) ? config.compatibility_flags.map(String) : [];
  return { date: config.compatibility_date, flags };
}

let bundled: Promise<string> | undefined;

/**
 * src/edge/worker.ts as one ES module, built the way wrangler 4 builds a worker (its COMMON_ESBUILD_OPTIONS and
 * build conditions). Built once per process. The internal-header lookup is generated code: `npm run gen` first.
 */
export function bundleWorker(): Promise<string> {
  bundled ??= (async () => {
    try {
      readFileSync(GENERATED);
    } catch {
      throw new Error(`${GENERATED} is missing: run \`npm run gen\` first (it generates the internal-header lookup the worker imports)`);
    }
    const result = await build({
      entryPoints: [ENTRY],
      bundle: true,
      format: "esm",
      target: "es2024",
      supported: { "import-source": true, using: true },
      conditions: ["workerd", "worker", "browser"],
      write: false,
      outfile: "worker.js",
      logLevel: "silent",
    });
    const output = result.outputFiles[0];
    if (output === undefined) throw new Error("esbuild produced no output for src/edge/worker.ts");
    return output.text;
  })();
  bundled.catch(() => (bundled = undefined));
  return bundled;
}

/**
 * The cache keys a purge of `tag` reaches. THIS MAPPING IS THE STAND-IN'S: Cloudflare purges every entry whose
 * stored `Cache-Tag` lists the tag, wherever it is keyed; locally there is no index from tags to entries (the
 * Cache API cannot list its keys), so a tag is resolved to the keys the worker stores under, and `purgeTags`
 * then deletes only those entries whose stored Cache-Tag really lists the tag. The worker keys an item by its
 * own host: `item:<id>` → `<worker origin>/items/<id>`, and the key of every known id that differs from it only in
 * case (Cloudflare compares tags without case, so `item:Widget` purges `widget`'s entry too, and the purger sends
 * one tag for both); `items` (every item) → that key for every id the caller knows of. Any other tag reaches
 * nothing here.
 */
export function keysForTag(tag: string, workerOrigin: string, knownIds: Iterable<string>): string[] {
  const prefix = itemTag("");
  const key = (id: string) => `${workerOrigin}/items/${id}`;
  const folded = tag.toLowerCase();
  if (folded === ALL_ITEMS_TAG) return [...new Set(knownIds)].map(key);
  if (!folded.startsWith(prefix) || tag.length === prefix.length) return [];
  const id = tag.slice(prefix.length);
  const ids = new Set([id]);
  for (const known of knownIds) if (known.toLowerCase() === folded.slice(prefix.length)) ids.add(known);
  return [...ids].map(key);
}

/** Whether a stored `Cache-Tag` value lists `tag` (comma-separated, compared without case as Cloudflare does). */
export function cacheTagLists(stored: string | null, tag: string): boolean {
  if (stored === null) return false;
  const wanted = tag.trim().toLowerCase();
  return stored.split(",").some((t) => t.trim().toLowerCase() === wanted);
}

export interface AppliedPurge {
  /** When the purge was applied (performance.now()). */
  at: number;
  tags: string[];
  /** Keys the tags resolved to. */
  keys: number;
  /** Entries deleted: present and carrying one of the tags. */
  deleted: number;
  /** Entries present at a resolved key whose Cache-Tag does not list the tag: kept, as Cloudflare would keep them. */
  untagged: number;
}

/** The slice of the Cache API this file uses, as Miniflare's proxy hands it to Node. */
interface NodeCache {
  match(key: string): Promise<{ headers: { get(name: string): string | null }; arrayBuffer(): Promise<ArrayBuffer> } | undefined>;
  delete(key: string): Promise<boolean>;
}

export interface LocalEdgeOptions {
  /** The worker's vars and its secret (ORIGIN_TOKEN), as strings, the way `wrangler dev --var` passes them. */
  vars: Record<string, string>;
  /** Loopback port; 0 or unset: any free one. */
  port?: number;
  /** Ids `items` (purge every item) reaches; asked at each purge. Default: the ids passed to `itemKey` so far. */
  knownIds?: () => Iterable<string>;
  /** Where the worker's console and uncaught errors go (default: kept, shown only in start errors). */
  log?: (line: string) => void;
}

export interface LocalEdge {
  /** `http://127.0.0.1:PORT`: what clients connect to, and the origin of the worker's cache keys. */
  url: string;
  port: number;
  /** The key the worker stores item `id` under. */
  itemKey(id: string): string;
  /** The worker's default cache, from Node. */
  cache(): Promise<NodeCache>;
  /** Applies a purge by tag to the worker's cache (see keysForTag); resolves once the entries are gone. */
  purgeTags(tags: readonly string[]): Promise<AppliedPurge>;
  /** Every purge applied so far, oldest first. */
  readonly purges: readonly AppliedPurge[];
  /** The worker's last console lines. */
  output(): string;
  close(): Promise<void>;
}

/** Keys a purge checks and deletes at once. */
const PURGE_CONCURRENCY = 32;

/** Starts the worker under Miniflare and resolves once it listens. */
export async function startLocalEdge(options: LocalEdgeOptions): Promise<LocalEdge> {
  const script = await bundleWorker();
  const { date, flags } = wranglerCompatibility();
  let output = "";
  const keep = (line: string) => {
    output = `${output}${line}\n`.slice(-20_000);
    options.log?.(line);
  };
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      modules: true,
      script,
      scriptPath: ENTRY,
      compatibilityDate: date,
      compatibilityFlags: flags,
      bindings: { ...options.vars },
      host: "127.0.0.1",
      port: options.port ?? 0,
      // No request.cf from the network (the worker does not read it), and no log line per request: logging costs
      // the local runtime a third of its throughput (measured under wrangler dev).
      cf: false,
      logRequests: false,
      handleStructuredLogs: ({ level, message }) => keep(`${level}: ${message}`),
      handleUncaughtError: (error) => keep(`uncaught: ${error.stack ?? error.message}`),
    }),
  );
  let url: URL;
  try {
    url = await mf.ready;
  } catch (error) {
    await mf.dispose().catch(() => {});
    throw new Error(`the worker did not start under Miniflare: ${(error as Error).message}\n${output}`);
  }
  const origin = url.origin;
  const itemKey = (id: string) => `${origin}/items/${id}`;
  const named = new Set<string>();
  const knownIds = options.knownIds ?? (() => named);
  let caches: Promise<NodeCache> | undefined;
  const cache = () => (caches ??= mf.getCaches().then((c) => c.default as unknown as NodeCache));
  const purges: AppliedPurge[] = [];

  const purgeTags = async (tags: readonly string[]): Promise<AppliedPurge> => {
    const c = await cache();
    const applied: AppliedPurge = { at: 0, tags: [...tags], keys: 0, deleted: 0, untagged: 0 };
    const purgeKey = async (tag: string, key: string) => {
      const entry = await c.match(key);
      if (entry === undefined) return;
      const stored = entry.headers.get("cache-tag");
      // Read, not cancelled: cancelling a body Miniflare proxies from workerd throws inside Miniflare. Items are small.
      await entry.arrayBuffer();
      if (!cacheTagLists(stored, tag)) applied.untagged++;
      else if (await c.delete(key)) applied.deleted++;
    };
    for (const tag of tags) {
      const keys = keysForTag(tag, origin, knownIds());
      applied.keys += keys.length;
      // A purge of `items` reaches every known id: one by one through Miniflare's proxy that took over 10 s
      // for 11,000 ids (the purger's call deadline), where Cloudflare answers at once.
      for (let i = 0; i < keys.length; i += PURGE_CONCURRENCY) {
        await Promise.all(keys.slice(i, i + PURGE_CONCURRENCY).map((key) => purgeKey(tag, key)));
      }
    }
    applied.at = performance.now();
    purges.push(applied);
    return applied;
  };

  let closing: Promise<void> | undefined;
  return {
    url: origin,
    port: Number(url.port),
    itemKey: (id) => {
      named.add(id);
      return itemKey(id);
    },
    cache,
    purgeTags,
    purges,
    output: () => output,
    close: () => (closing ??= mf.dispose()),
  };
}
