// Deterministic, realistic header sets for the stripping benchmark: browser navigations and API calls as
// they reach the worker (with what Cloudflare adds), and origin responses as they reach the worker. Each
// message has 10-30 headers, 0-30% of them internal. Identical in Node and in workerd (seeded PRNG, no
// Date/Math.random), so both runtimes measure the same work.

import { prng } from "../lib/random.ts";

export interface MessageSpec {
  readonly kind: "navigation" | "api" | "item" | "document";
  /** Name/value pairs in arrival order (names lowercase, as the Headers iterator yields them). */
  readonly pairs: readonly (readonly [string, string])[];
}

export interface DataSet {
  readonly requests: readonly MessageSpec[];
  readonly responses: readonly MessageSpec[];
}

const ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789";

function token(rand: () => number, min: number, max: number): string {
  const n = min + Math.floor(rand() * (max - min + 1));
  let s = "";
  for (let i = 0; i < n; i++) s += ALNUM[Math.floor(rand() * ALNUM.length)];
  return s;
}

function pick<T>(rand: () => number, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)] as T;
}

function shuffle<T>(rand: () => number, items: readonly T[]): T[] {
  const a = [...items];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [a[i], a[j]] = [a[j] as T, a[i] as T];
  }
  return a;
}

const UA =
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const SEC_CH_UA = '"Google Chrome";v="131", "Chromium";v="131", "Not_A Brand";v="24"';

type Gen = (r: () => number) => string;
const v = (s: string): Gen => () => s;

/** Headers a browser sends on a top-level navigation, roughly in the order it sends them. */
const NAVIGATION: readonly (readonly [string, Gen])[] = [
  ["host", v("api.example.com")],
  ["user-agent", v(UA)],
  ["accept", v("text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8")],
  ["accept-language", v("en-GB,en;q=0.9,fr;q=0.8")],
  ["accept-encoding", v("gzip, deflate, br, zstd")],
  ["sec-ch-ua", v(SEC_CH_UA)],
  ["sec-ch-ua-mobile", v("?0")],
  ["sec-ch-ua-platform", v('"macOS"')],
  ["upgrade-insecure-requests", v("1")],
  ["sec-fetch-site", v("none")],
  ["sec-fetch-mode", v("navigate")],
  ["sec-fetch-user", v("?1")],
  ["sec-fetch-dest", v("document")],
  ["priority", v("u=0, i")],
  ["cookie", (r) => `session=${token(r, 32, 32)}; theme=dark; _ga=GA1.1.${token(r, 10, 10)}`],
  ["referer", v("https://www.example.com/catalogue")],
  ["if-none-match", (r) => `"${token(r, 16, 16)}"`],
  ["if-modified-since", v("Tue, 18 Nov 2025 09:12:44 GMT")],
  ["cache-control", v("max-age=0")],
  ["dnt", v("1")],
  ["sec-gpc", v("1")],
  ["sec-ch-ua-arch", v('"arm"')],
  ["sec-ch-ua-full-version-list", v(SEC_CH_UA)],
  ["sec-ch-prefers-color-scheme", v("dark")],
  ["viewport-width", v("1512")],
  ["save-data", v("on")],
  ["pragma", v("no-cache")],
  // what Cloudflare adds on the way to the worker (non-internal part)
  ["cf-connecting-ip", v("203.0.113.42")],
  ["cf-ipcountry", v("FR")],
  ["cf-ray", (r) => `${token(r, 16, 16)}-CDG`],
  ["cf-visitor", v('{"scheme":"https"}')],
  ["cdn-loop", v("cloudflare")],
];

/** Headers of a fetch()/XHR API call from a web app, or a service calling the API. */
const API: readonly (readonly [string, Gen])[] = [
  ["host", v("api.example.com")],
  ["user-agent", v(UA)],
  ["accept", v("application/json")],
  ["accept-language", v("en-GB,en;q=0.9")],
  ["accept-encoding", v("gzip, deflate, br, zstd")],
  ["authorization", (r) => `Bearer ${token(r, 120, 180)}`],
  ["origin", v("https://app.example.com")],
  ["referer", v("https://app.example.com/items")],
  ["sec-fetch-site", v("same-site")],
  ["sec-fetch-mode", v("cors")],
  ["sec-fetch-dest", v("empty")],
  ["sec-ch-ua", v(SEC_CH_UA)],
  ["sec-ch-ua-mobile", v("?0")],
  ["sec-ch-ua-platform", v('"Windows"')],
  ["x-requested-with", v("XMLHttpRequest")],
  ["x-csrf-token", (r) => token(r, 40, 40)],
  ["x-api-key", (r) => token(r, 32, 32)],
  ["x-client-version", v("web/4.18.2")],
  ["if-none-match", (r) => `"${token(r, 16, 16)}"`],
  ["cookie", (r) => `session=${token(r, 32, 32)}`],
  ["priority", v("u=1, i")],
  ["cache-control", v("no-cache")],
  ["pragma", v("no-cache")],
  ["content-type", v("application/json")],
  ["x-device-id", (r) => token(r, 24, 24)],
  ["dnt", v("1")],
  ["cf-connecting-ip", v("198.51.100.7")],
  ["cf-ipcountry", v("DE")],
  ["cf-ray", (r) => `${token(r, 16, 16)}-FRA`],
  ["cf-visitor", v('{"scheme":"https"}')],
  ["cdn-loop", v("cloudflare")],
];

/** Internal request headers real traffic carries (weighted first), then any listed name. */
const INTERNAL_REQUEST_COMMON: readonly (readonly [string, Gen])[] = [
  ["x-forwarded-for", v("203.0.113.42, 172.70.1.1")],
  ["x-forwarded-proto", v("https")],
  ["x-real-ip", v("203.0.113.42")],
  ["traceparent", (r) => `00-${token(r, 32, 32)}-${token(r, 16, 16)}-01`],
  ["tracestate", (r) => `dd=s:1;o:rum,congo=${token(r, 16, 16)}`],
  ["baggage", v("userId=alice,isProduction=false")],
  ["sentry-trace", (r) => `${token(r, 32, 32)}-${token(r, 16, 16)}-1`],
  ["x-request-id", (r) => token(r, 36, 36)],
  ["x-amzn-trace-id", (r) => `Root=1-${token(r, 8, 8)}-${token(r, 24, 24)}`],
  ["x-b3-traceid", (r) => token(r, 32, 32)],
  ["x-b3-spanid", (r) => token(r, 16, 16)],
  ["x-b3-sampled", v("1")],
  ["x-datadog-trace-id", (r) => token(r, 19, 19)],
  ["x-datadog-parent-id", (r) => token(r, 19, 19)],
  ["x-forwarded-host", v("api.example.com")],
  ["forwarded", v("for=203.0.113.42;proto=https")],
  ["x-internal-user", v("alice")],
  ["x-origin-token", (r) => token(r, 32, 32)],
  ["x-envoy-external-address", v("203.0.113.42")],
  ["x-cloud-trace-context", (r) => `${token(r, 32, 32)}/1;o=1`],
];

/** An origin's item read: representation and validators plus what a typical stack adds. */
const ITEM_RESPONSE: readonly (readonly [string, Gen])[] = [
  ["content-type", v("application/json; charset=utf-8")],
  ["content-length", v("412")],
  ["etag", (r) => `"${token(r, 27, 27)}"`],
  ["cache-control", v("public, max-age=60, stale-while-revalidate=30")],
  ["vary", v("Accept-Encoding")],
  ["date", v("Fri, 21 Nov 2025 05:50:00 GMT")],
  ["last-modified", v("Tue, 18 Nov 2025 09:12:44 GMT")],
  ["content-encoding", v("br")],
  ["age", v("12")],
  ["accept-ranges", v("bytes")],
  ["x-content-type-options", v("nosniff")],
  ["strict-transport-security", v("max-age=63072000; includeSubDomains; preload")],
  ["x-frame-options", v("DENY")],
  ["referrer-policy", v("strict-origin-when-cross-origin")],
  ["x-ratelimit-limit", v("1000")],
  ["x-ratelimit-remaining", v("998")],
  ["x-ratelimit-reset", v("1763704260")],
  ["cross-origin-resource-policy", v("same-site")],
  ["expires", v("Fri, 21 Nov 2025 05:51:00 GMT")],
  ["link", v('</items/1/related>; rel="related"')],
  ["alt-svc", v('h3=":443"; ma=86400')],
  ["nel", v('{"success_fraction":0,"report_to":"cf-nel","max_age":604800}')],
  ["report-to", v('{"endpoints":[{"url":"https://a.nel.example/report"}],"group":"cf-nel","max_age":604800}')],
  ["timing-allow-origin", v("*")],
  ["permissions-policy", v("interest-cohort=()")],
  ["content-security-policy", v("default-src 'none'; frame-ancestors 'none'")],
  ["set-cookie", (r) => `session=${token(r, 32, 32)}; Path=/; Secure; HttpOnly; SameSite=Lax`],
  ["x-xss-protection", v("0")],
  ["content-language", v("en")],
  ["x-robots-tag", v("noindex")],
  ["pragma", v("no-cache")],
];

const INTERNAL_RESPONSE_COMMON: readonly (readonly [string, Gen])[] = [
  ["server", v("nginx/1.25.3")],
  ["x-powered-by", v("Express")],
  ["access-control-allow-origin", v("*")],
  ["access-control-allow-credentials", v("true")],
  ["access-control-allow-methods", v("GET, PUT, POST, DELETE, PATCH, OPTIONS")],
  ["access-control-allow-headers", v("DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization")],
  ["access-control-expose-headers", v("Content-Length,Content-Range")],
  ["access-control-max-age", v("1728000")],
  ["x-envoy-upstream-service-time", v("7")],
  ["x-request-id", (r) => token(r, 36, 36)],
  ["via", v("1.1 varnish, 1.1 google")],
  ["x-cache", v("MISS")],
  ["server-timing", v("db;dur=3.2, app;dur=7.9")],
  ["x-amzn-requestid", (r) => token(r, 36, 36)],
  ["x-runtime", v("0.012442")],
  ["x-served-by", v("cache-cdg20741-CDG")],
  ["x-backend-server", v("items-7f9c6d-2xkqz")],
  ["traceparent", (r) => `00-${token(r, 32, 32)}-${token(r, 16, 16)}-01`],
  ["x-kong-upstream-latency", v("6")],
  ["x-kong-proxy-latency", v("1")],
];

/** The documented share of internal headers per message: 0-30%. */
const FRACTIONS = [0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3] as const;

function listedSamples(names: readonly string[], prefixes: readonly string[]): readonly (readonly [string, Gen])[] {
  return [
    ...names.map((n) => [n, (r: () => number) => token(r, 4, 24)] as const),
    ...prefixes.map((p) => [`${p}id`, (r: () => number) => token(r, 4, 24)] as const),
  ];
}

function message(
  rand: () => number,
  kind: MessageSpec["kind"],
  base: readonly (readonly [string, Gen])[],
  mandatory: number,
  internalCommon: readonly (readonly [string, Gen])[],
  internalAll: readonly (readonly [string, Gen])[],
  fraction: number,
): MessageSpec {
  const n = 10 + Math.floor(rand() * 21); // 10..30
  const k = Math.round(n * fraction);
  // the first `mandatory` base headers always, then a random subset of the rest, in base order
  const optional = shuffle(rand, base.slice(mandatory)).slice(0, Math.max(0, n - k - mandatory));
  const chosen = [...base.slice(0, mandatory), ...base.filter((h) => optional.includes(h))].slice(0, n - k);
  const internal: (readonly [string, Gen])[] = [];
  while (internal.length < k) {
    const h = rand() < 0.7 ? pick(rand, internalCommon) : pick(rand, internalAll);
    if (!internal.some(([x]) => x === h[0]) && !chosen.some(([x]) => x === h[0])) internal.push(h);
  }
  const all = [...chosen];
  for (const h of internal) all.splice(Math.floor(rand() * (all.length + 1)), 0, h);
  return { kind, pairs: all.map(([name, gen]) => [name, gen(rand)] as const) };
}

export interface ListInput {
  readonly requestNames: readonly string[];
  readonly requestPrefixes: readonly string[];
  readonly responseNames: readonly string[];
  readonly responsePrefixes: readonly string[];
}

/** `count` requests and `count` responses; the same `seed` gives the same messages everywhere. */
export function makeDataSet(list: ListInput, count = 210, seed = 0x5eed): DataSet {
  const rand = prng(seed);
  const reqAll = listedSamples(list.requestNames, list.requestPrefixes);
  const resAll = listedSamples(list.responseNames, list.responsePrefixes);
  const requests: MessageSpec[] = [];
  const responses: MessageSpec[] = [];
  for (let i = 0; i < count; i++) {
    const f = FRACTIONS[i % FRACTIONS.length] as number;
    requests.push(
      i % 2 === 0
        ? message(rand, "navigation", NAVIGATION, 5, INTERNAL_REQUEST_COMMON, reqAll, f)
        : message(rand, "api", API, 4, INTERNAL_REQUEST_COMMON, reqAll, f),
    );
    responses.push(message(rand, i % 2 === 0 ? "item" : "document", ITEM_RESPONSE, 4, INTERNAL_RESPONSE_COMMON, resAll, f));
  }
  return { requests, responses };
}

export interface DataSetStats {
  readonly messages: number;
  readonly headersMin: number;
  readonly headersMax: number;
  readonly headersMean: number;
  readonly internalShare: number;
  readonly messagesWithInternal: number;
}

export function stats(messages: readonly MessageSpec[], isInternal: (n: string) => boolean): DataSetStats {
  const sizes = messages.map((m) => m.pairs.length);
  const internal = messages.map((m) => m.pairs.filter(([n]) => isInternal(n)).length);
  const total = sizes.reduce((a, b) => a + b, 0);
  return {
    messages: messages.length,
    headersMin: Math.min(...sizes),
    headersMax: Math.max(...sizes),
    headersMean: total / messages.length,
    internalShare: internal.reduce((a, b) => a + b, 0) / total,
    messagesWithInternal: internal.filter((x) => x > 0).length,
  };
}
