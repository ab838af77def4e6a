// The Cache API backend for a bare `workerd serve` (bench/load/workerd.ts, through bench/workerd/harness.ts's
// `cache: { entry }`): workerd sends every `caches.default` operation of the edge worker to this service, as
// miniflare's cache service receives them under `wrangler dev`:
//   GET   key URL             → the stored response with `CF-Cache-Status: HIT`, or 504 + `CF-Cache-Status: MISS`
//   PUT   key URL, body = the response serialised as HTTP/1.1 (status line, headers, body) → 204
//   PURGE key URL             → 200, or 404 when absent
// In memory, bounded (oldest entries go first), honouring Cache-Control max-age / s-maxage. It runs inside
// the same workerd process as the worker, so its memory is part of the RSS the load test watches; the bound
// keeps that honest. A body shorter than its Content-Length is refused (413), as a real cache would.

const MAX_ENTRIES = 50_000;

interface Entry {
  status: number;
  headers: Array<[string, string]>;
  body: Uint8Array;
  expires: number;
}

const store = new Map<string, Entry>();
const CRLFCRLF = [13, 10, 13, 10];

function indexOf(bytes: Uint8Array, pattern: number[], from = 0): number {
  outer: for (let i = from; i <= bytes.length - pattern.length; i++) {
    for (let j = 0; j < pattern.length; j++) if (bytes[i + j] !== pattern[j]) continue outer;
    return i;
  }
  return -1;
}

function latin1(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 4096) text += String.fromCharCode(...bytes.subarray(i, i + 4096));
  return text;
}

/** De-chunks a `Transfer-Encoding: chunked` body; undefined if it is malformed or incomplete. */
function dechunk(bytes: Uint8Array): Uint8Array | undefined {
  const parts: Uint8Array[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = indexOf(bytes, [13, 10], at);
    if (lineEnd === -1) return undefined;
    const size = Number.parseInt(latin1(bytes.subarray(at, lineEnd)), 16);
    if (!Number.isFinite(size) || size < 0) return undefined;
    at = lineEnd + 2;
    if (size === 0) break;
    if (at + size > bytes.length) return undefined;
    parts.push(bytes.subarray(at, at + size));
    at += size + 2;
  }
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

function freshnessSeconds(headers: Array<[string, string]>): number {
  const cacheControl = headers.find(([name]) => name.toLowerCase() === "cache-control")?.[1] ?? "";
  if (/(^|[\s,])(no-store|private)([\s,=]|$)/i.test(cacheControl)) return 0;
  const age = /(?:^|[\s,])s-maxage=(\d+)/i.exec(cacheControl) ?? /(?:^|[\s,])max-age=(\d+)/i.exec(cacheControl);
  return age ? Number(age[1]) : 0;
}

async function put(key: string, request: Request): Promise<Response> {
  const raw = new Uint8Array(await request.arrayBuffer());
  const headEnd = indexOf(raw, CRLFCRLF);
  if (headEnd === -1) return new Response(null, { status: 400 });
  const [statusLine = "", ...lines] = latin1(raw.subarray(0, headEnd)).split("\r\n");
  const status = Number(statusLine.split(" ")[1]);
  const headers = lines.map((line): [string, string] => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 1).trim()]);
  const get = (name: string) => headers.find(([n]) => n.toLowerCase() === name)?.[1];
  let body: Uint8Array | undefined = raw.subarray(headEnd + 4);
  if (get("transfer-encoding")?.toLowerCase().includes("chunked")) body = dechunk(body);
  else if (get("content-length") !== undefined && Number(get("content-length")) !== body.length) body = undefined;
  if (body === undefined) return new Response(null, { status: 413 });
  const ttl = freshnessSeconds(headers);
  if (ttl <= 0) return new Response(null, { status: 413 });
  store.delete(key);
  store.set(key, {
    status,
    headers: headers.filter(([name]) => !/^(transfer-encoding|content-length)$/i.test(name)),
    body: body.slice(),
    expires: Date.now() + ttl * 1000,
  });
  while (store.size > MAX_ENTRIES) store.delete(store.keys().next().value!);
  return new Response(null, { status: 204 });
}

export default {
  async fetch(request: Request): Promise<Response> {
    const key = request.url;
    switch (request.method) {
      case "GET": {
        const entry = store.get(key);
        if (entry === undefined || entry.expires <= Date.now()) {
          if (entry !== undefined) store.delete(key);
          return new Response(null, { status: 504, headers: { "cf-cache-status": "MISS" } });
        }
        const headers = new Headers(entry.headers);
        headers.set("cf-cache-status", "HIT");
        return new Response(entry.body, { status: entry.status, headers });
      }
      case "PUT":
        return put(key, request);
      case "PURGE":
        return new Response(null, { status: store.delete(key) ? 200 : 404 });
      default:
        return new Response(null, { status: 405 });
    }
  },
};
