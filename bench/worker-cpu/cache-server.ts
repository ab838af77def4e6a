// The Cache API backend for bench/worker-cpu.ts, outside the workerd process (its CPU is not what is
// measured, as the origin's is not): a Node HTTP server on loopback that workerd's `cacheApiOutbound` sends
// every `caches.default` operation to (see bench/workerd/harness.ts, `cache: { url }`).
//   "miss"   a cache that never retains: GET → 504 + CF-Cache-Status: MISS; PUT → body read, 204; PURGE → 404.
//            Every read of the worker is a cold miss: match, then the origin, then put.
//   "store"  an in-memory cache, as miniflare's: PUT stores the serialised response (Content-Length or chunked
//            body) while its Cache-Control max-age / s-maxage lasts; GET answers a fresh entry with
//            CF-Cache-Status: HIT, else 504 + MISS; PURGE deletes. Entries are kept and a fresh one is a hit.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type CacheMode = "miss" | "store";

export interface CacheCounts {
  gets: number;
  hits: number;
  puts: number;
  putBytes: number;
  purges: number;
}

export interface CacheServer {
  readonly url: string;
  readonly mode: CacheMode;
  readonly counts: CacheCounts;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((done, fail) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => done(Buffer.concat(chunks)));
    req.on("error", fail);
  });
}

interface Entry {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  readonly expires: number;
}

/** De-chunks a `Transfer-Encoding: chunked` body; undefined if it is malformed or incomplete. */
function dechunk(raw: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = raw.indexOf("\r\n", at);
    if (lineEnd === -1) return undefined;
    const size = Number.parseInt(raw.subarray(at, lineEnd).toString("latin1"), 16);
    if (!Number.isFinite(size) || size < 0) return undefined;
    at = lineEnd + 2;
    if (size === 0) return Buffer.concat(parts);
    if (at + size > raw.length) return undefined;
    parts.push(raw.subarray(at, at + size));
    at += size + 2;
  }
}

/** A PUT body (the response serialised as HTTP/1.1) → an entry; undefined if unusable or not cacheable. */
function parseStored(raw: Buffer): Entry | undefined {
  const headEnd = raw.indexOf("\r\n\r\n");
  if (headEnd === -1) return undefined;
  const [statusLine = "", ...lines] = raw.subarray(0, headEnd).toString("latin1").split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body: Buffer | undefined = raw.subarray(headEnd + 4);
  if (headers["transfer-encoding"]?.toLowerCase().includes("chunked")) body = dechunk(body);
  else if (headers["content-length"] !== undefined && Number(headers["content-length"]) !== body.length) body = undefined;
  const cacheControl = headers["cache-control"] ?? "";
  const age = /(?:^|[\s,])s-maxage=(\d+)/i.exec(cacheControl) ?? /(?:^|[\s,])max-age=(\d+)/i.exec(cacheControl);
  const ttl = /(^|[\s,])(no-store|private)([\s,=]|$)/i.test(cacheControl) ? 0 : Number(age?.[1] ?? 0);
  if (body === undefined || ttl <= 0) return undefined;
  delete headers["transfer-encoding"];
  delete headers["content-length"];
  return { status: Number(statusLine.split(" ")[1]), headers, body: Buffer.from(body), expires: Date.now() + ttl * 1000 };
}

const MAX_ENTRIES = 10_000;

async function answer(mode: CacheMode, counts: CacheCounts, store: Map<string, Entry>, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readBody(req);
  const method = req.method ?? "GET";
  if (method === "GET") counts.gets++;
  else if (method === "PUT") {
    counts.puts++;
    counts.putBytes += body.length;
  } else if (method === "PURGE") counts.purges++;

  if (mode === "miss") {
    if (method === "GET") res.writeHead(504, { "cf-cache-status": "MISS", "content-length": "0" }).end();
    else if (method === "PUT") res.writeHead(204).end();
    else res.writeHead(404, { "content-length": "0" }).end();
    return;
  }
  const key = req.url ?? "/";
  if (method === "GET") {
    const entry = store.get(key);
    if (entry === undefined || entry.expires <= Date.now()) {
      store.delete(key);
      res.writeHead(504, { "cf-cache-status": "MISS", "content-length": "0" }).end();
      return;
    }
    counts.hits++;
    res.writeHead(entry.status, { ...entry.headers, "cf-cache-status": "HIT", "content-length": String(entry.body.length) }).end(entry.body);
  } else if (method === "PUT") {
    const entry = parseStored(body);
    if (entry === undefined) {
      res.writeHead(413, { "content-length": "0" }).end();
      return;
    }
    store.delete(key);
    store.set(key, entry);
    if (store.size > MAX_ENTRIES) store.delete(store.keys().next().value as string);
    res.writeHead(204).end();
  } else {
    const existed = store.delete(key);
    res.writeHead(existed ? 200 : 404, { "content-length": "0" }).end();
  }
}

export function startCacheServer(mode: CacheMode): Promise<CacheServer> {
  const counts: CacheCounts = { gets: 0, hits: 0, puts: 0, putBytes: 0, purges: 0 };
  const store = new Map<string, Entry>();
  const server = createServer({ keepAlive: true }, (req, res) => {
    res.sendDate = false; // a cache answers with the stored headers, not a Date of its own
    answer(mode, counts, store, req, res).catch((error: unknown) => {
      res.writeHead(500).end(String(error));
    });
  });
  return new Promise((ready, fail) => {
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      ready({
        url: `http://127.0.0.1:${port}`,
        mode,
        counts,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}
