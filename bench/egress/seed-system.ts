// The "before" system: the seed deployment, emulated faithfully enough to count its bytes. Browsers talked
// to the origin cluster directly; ingress-nginx with `enable-cors` in front of a Node/Koa service answered
// them. What reached the wire for each response, and what this emulation sends:
//
//   - the five Access-Control-* headers of ingress-nginx's CORS template, with its defaults, on EVERY
//     response (the template adds them with `more_set_headers` regardless of the request's Origin): 314 bytes
//   - preflights (OPTIONS) answered 204 by nginx itself, in the cluster, with those headers plus
//     `Content-Type: text/plain charset=UTF-8` and `Content-Length: 0` (the template's `return 204` branch)
//   - Koa's own headers: `Content-Type: application/json; charset=utf-8`, `Content-Length`, and an `ETag`
//     computed from the body the way koa-etag does (`"<length hex>-<27 chars of base64 sha1>"`), with
//     koa-conditional-get turning a matching If-None-Match into a 304 (which Koa sends without
//     Content-Type/Content-Length). We chose to give the seed ETags and client revalidation: it makes the
//     "before" smaller, so the ratio we report is the conservative one.
//   - Node's defaults: `Date`, `Connection: keep-alive`, `Keep-Alive: timeout=5`
//   - unknown ids and other paths: Koa's default 404, `Not Found` as text/plain
//
// Left out, so again in the seed's favour: nginx's `Server: nginx`, and the `Strict-Transport-Security`
// header ingress-nginx adds by default on HTTPS (about 60 bytes more per response). nginx would replace
// Node's `Connection`/`Keep-Alive` with its own `Connection: keep-alive` (3 fewer bytes net); we keep
// Node's pair as the brief of the seed system describes it.
//
// No edge cache and no conditional requests of its own: every request reaches the origin. Data: an
// in-memory copy of the same item bodies the real origin serves (the seed read its database on every
// request; where the bytes come from does not change them). Writes (PUT/DELETE) change it in place.

import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { itemIdOf } from "./traffic.ts";

/** ingress-nginx `enable-cors` defaults (docs: cors-allow-origin, -credentials, -methods, -headers, -max-age). */
export const INGRESS_NGINX_CORS: ReadonlyArray<readonly [string, string]> = [
  ["Access-Control-Allow-Origin", "*"],
  ["Access-Control-Allow-Credentials", "true"],
  ["Access-Control-Allow-Methods", "GET, PUT, POST, DELETE, PATCH, OPTIONS"],
  ["Access-Control-Allow-Headers", "DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization"],
  ["Access-Control-Max-Age", "1728000"],
];

/** Wire bytes of header lines, `name: value\r\n` each. */
export function headerLineBytes(headers: Iterable<readonly [string, string]>): number {
  let n = 0;
  for (const [name, value] of headers) n += Buffer.byteLength(`${name}: ${value}\r\n`, "latin1");
  return n;
}

/** 314: the figure DESIGN.md quotes; checked at startup so a changed list cannot go unnoticed. */
export const INGRESS_NGINX_CORS_BYTES = headerLineBytes(INGRESS_NGINX_CORS);

/** koa-etag (via the `etag` package): strong, `"<byte length in hex>-<sha1 base64, 27 chars>"`. */
export function koaEtag(body: Buffer): string {
  if (body.length === 0) return '"0-2jmj7l5rSw0yVb/vlWAYkK/YBwk"';
  const hash = createHash("sha1").update(body).digest("base64").slice(0, 27);
  return `"${body.length.toString(16)}-${hash}"`;
}

/** koa-conditional-get → `ctx.fresh` (the `fresh` package): weak comparison over the If-None-Match list. */
export function freshFor(ifNoneMatch: string, etag: string): boolean {
  if (ifNoneMatch.trim() === "*") return true;
  const strip = (tag: string) => (tag.startsWith("W/") ? tag.slice(2) : tag);
  return ifNoneMatch
    .split(",")
    .map((t) => strip(t.trim()))
    .includes(strip(etag));
}

export interface SeedSystem {
  url: string;
  port: number;
  server: Server;
  close(): Promise<void>;
}

interface Item {
  body: Buffer;
  etag: string;
}

const NOT_FOUND = Buffer.from("Not Found");

export async function startSeedSystem(initial: Iterable<readonly [string, string]>): Promise<SeedSystem> {
  const items = new Map<string, Item>();
  const store = (id: string, text: string) => {
    const body = Buffer.from(text);
    items.set(id, { body, etag: koaEtag(body) });
  };
  for (const [id, text] of initial) store(id, text);

  const server = createServer((req, res) => {
    const method = req.method ?? "GET";
    const cors = () => {
      for (const [name, value] of INGRESS_NGINX_CORS) res.setHeader(name, value);
    };
    // nginx: `if ($request_method = 'OPTIONS') { …; return 204; }`, before the request reaches Koa.
    if (method === "OPTIONS") {
      cors();
      res.setHeader("Content-Type", "text/plain charset=UTF-8");
      res.setHeader("Content-Length", "0");
      res.writeHead(204);
      res.end();
      req.resume();
      return;
    }
    const id = itemIdOf(req.url ?? "");
    if (id !== undefined && (method === "PUT" || method === "DELETE")) {
      // Internal writers (not browsers): no CORS decoration matters here; these never cross the relay.
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        if (method === "PUT") store(id, Buffer.concat(chunks).toString());
        else items.delete(id);
        res.writeHead(204);
        res.end();
      });
      return;
    }
    req.resume();
    // Koa sets Content-Type and Content-Length when the body is assigned, koa-etag the ETag; Node then adds
    // Date, Connection and Keep-Alive; nginx adds the CORS block to whatever comes back.
    const item = id !== undefined && (method === "GET" || method === "HEAD") ? items.get(id) : undefined;
    if (item === undefined) {
      res.setHeader("Content-Type", "text/plain; charset=utf-8");
      res.setHeader("Content-Length", String(NOT_FOUND.length));
      cors();
      res.writeHead(404);
      res.end(method === "HEAD" ? undefined : NOT_FOUND);
      return;
    }
    const ifNoneMatch = req.headers["if-none-match"];
    if (ifNoneMatch !== undefined && freshFor(ifNoneMatch, item.etag)) {
      res.setHeader("ETag", item.etag);
      cors();
      res.writeHead(304);
      res.end();
      return;
    }
    res.setHeader("Content-Type", "application/json; charset=utf-8");
    res.setHeader("Content-Length", String(item.body.length));
    res.setHeader("ETag", item.etag);
    cors();
    res.writeHead(200);
    res.end(method === "HEAD" ? undefined : item.body);
  });
  // Node's defaults, as the seed ran them: keepAliveTimeout 5 s → `Keep-Alive: timeout=5`.
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
