// Hostile input at the edge, inside workerd: every case gets a small, clear answer and nothing reaches the
// origin that should not (the loopback fake origin records every request). What test/edge/item-proxy.test.ts
// and preflight.test.ts already cover (the basic bad ids, malformed requested headers) is not repeated.
import { describe, expect, it } from "vitest";
import type { ConfigProblem } from "../../src/shared/config/config-error.ts";
import { withEdgeDefaults, type EdgeVars } from "../../src/edge/config/edge-vars.ts";
import { parseCors } from "../../src/edge/config/parse-cors.ts";
import { compileCorsPolicy, type CorsPolicy } from "../../src/edge/cors/cors-policy.ts";
import { answerPreflight, type HeaderSource } from "../../src/edge/cors/preflight.ts";
import { isInternalRequestHeader } from "../../src/edge/headers/strip.ts";
import { ALLOW_LIST, callEdge, corsHeaderNames, fakeOrigin } from "./support/edge.ts";

const APP = "https://app.example.com";
/** Longest body any edge answer may have: one line saying what was wrong. */
const SMALL = 100;

async function edge(vars: EdgeVars, path: string, init?: RequestInit) {
  const origin = await fakeOrigin();
  const res = await callEdge({ ...ALLOW_LIST, ...vars, ORIGIN_URL: origin.url }, path, init);
  const body = await res.arrayBuffer();
  return { res, bodyBytes: body.byteLength, forwarded: await origin.requests() };
}

function policyOf(vars: EdgeVars): CorsPolicy {
  const problems: ConfigProblem[] = [];
  const policy = compileCorsPolicy(parseCors(withEdgeDefaults(vars), problems));
  expect(problems).toEqual([]);
  return policy;
}

function source(headers: Record<string, string>): HeaderSource {
  const map = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  return { get: (name) => map.get(name) ?? null };
}

/** UTF-8 bytes as latin1 characters: what a non-ASCII header value looks like once it has crossed the wire. */
function wireBytes(text: string): string {
  return String.fromCharCode(...new TextEncoder().encode(text));
}

describe("hostile item ids and paths: a small 400/404, nothing forwarded", () => {
  const BAD_IDS = [
    "x".repeat(10 * 1024),
    "%252F",
    "a%252Fb",
    "..%2F..%2Fetc%2Fpasswd",
    "%2e%2e%2f%2e%2e%2fadmin",
    "a%2F..%2Fadmin",
    "%5C..%5Cadmin",
    "%EF%BC%8F", // fullwidth solidus
    "%E2%80%AE", // right-to-left override
    "%F0%9F%98%80",
    "ｉｄ",
    "\u0130",
    "ß",
    "a;b=c",
    "a:b",
    "a@b",
    "a~b",
    "a+b",
    "a,b",
    "a'b",
    "a%22b",
    "%3Cscript%3E",
    "$(id)",
    "a|b",
    "%0d%0aX-Injected:%20x",
    "%0a",
    "%09",
    "%20",
    "1%00.json",
    "1/",
    "/1",
    "1/2",
  ];

  it.each(BAD_IDS.map((id) => [id.length > 40 ? `${id.slice(0, 12)}… (${id.length} chars)` : id, id]))(
    "/items/%s",
    async (_, id) => {
      const { res, bodyBytes, forwarded } = await edge({}, `/items/${id}`, { headers: { origin: APP } });
      expect([400, 404]).toContain(res.status);
      expect(bodyBytes).toBeLessThan(SMALL);
      expect(forwarded).toEqual([]);
      // Still an actual response with the policy's CORS treatment, so a page can read the 400.
      expect(res.headers.get("access-control-allow-origin")).toBe(APP);
    },
  );

  it.each(["/" + "a".repeat(64 * 1024), "/items", "/items/", "/items//", "/%69tems/1", "/items%2F1", "/items/1/../../admin"])(
    "%s → 404 or 400",
    async (path) => {
      const { res, bodyBytes, forwarded } = await edge({}, path);
      expect([400, 404]).toContain(res.status);
      expect(bodyBytes).toBeLessThan(SMALL);
      expect(forwarded).toEqual([]);
    },
  );

  it("a query string or fragment never travels to the origin: only /items/:id does", async () => {
    for (const suffix of ["?x=../../admin", "?id=2&id=3", "#../../admin", "?%00", `?${"q".repeat(16 * 1024)}`]) {
      const { res, forwarded } = await edge({}, `/items/1${suffix}`);
      expect(res.status).toBe(200);
      expect(forwarded.map((r) => r.path)).toEqual(["/items/1"]);
    }
  });
});

describe("hostile Access-Control-Request-Headers", () => {
  const preflight = (requested: string, vars: EdgeVars = {}) =>
    edge(vars, "/items/1", {
      method: "OPTIONS",
      headers: { origin: APP, "access-control-request-method": "PUT", "access-control-request-headers": requested },
    });

  it("10,000 allowed names: 204, each name echoed once, nothing forwarded", async () => {
    const requested = Array.from({ length: 10_000 }, (_, i) => ["x-request-id", "Content-Type", " authorization "][i % 3]).join(",");
    const { res, forwarded } = await preflight(requested);
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-headers")).toBe("x-request-id,content-type,authorization");
    expect(forwarded).toEqual([]);
  });

  it("10,000 distinct names under `*`: a one-byte answer", async () => {
    const requested = Array.from({ length: 10_000 }, (_, i) => `x-h${i}`).join(",");
    const { res, forwarded } = await preflight(requested, { CORS_ALLOW_HEADERS: "*" });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-headers")).toBe("*");
    expect(forwarded).toEqual([]);
  });

  it.each([
    ["10,000 names, the last one not allowed", `${"content-type,".repeat(9_999)}x-secret`],
    ["one 64 KB name", "a".repeat(64 * 1024)],
    ["a name between 32 KB runs of spaces, one of them not allowed", `content-type,${" ".repeat(32 * 1024)}x-secret${" ".repeat(32 * 1024)}`],
    ["a 64 KB list with a non-token in the middle", `${"content-type,".repeat(2_500)}x y,${"content-type,".repeat(2_500)}x-request-id`],
  ])("%s: 403 with no CORS headers, nothing forwarded", async (_, requested) => {
    const { res, bodyBytes, forwarded } = await preflight(requested);
    expect(res.status).toBe(403);
    expect(corsHeaderNames(res)).toEqual([]);
    expect(bodyBytes).toBe(0);
    expect(forwarded).toEqual([]);
  });

  // Empty members are no names (RFC 9110 §5.6.1.2): however many, they ask for nothing.
  it.each([
    ["64 KB of commas", ",".repeat(64 * 1024)],
    ["64 KB of spaces and commas", " ,".repeat(32 * 1024)],
  ])("%s: 204 allowing no header, nothing forwarded", async (_, requested) => {
    const { res, bodyBytes, forwarded } = await preflight(requested);
    expect(res.status).toBe(204);
    expect(corsHeaderNames(res).sort()).toEqual(["access-control-allow-methods", "access-control-allow-origin"]);
    expect(bodyBytes).toBe(0);
    expect(forwarded).toEqual([]);
  });

  it("a 64 KB Access-Control-Request-Method or Origin is refused the same way", async () => {
    for (const headers of [
      { origin: APP, "access-control-request-method": "P".repeat(64 * 1024) },
      { origin: `https://${"a".repeat(64 * 1024)}.preview.example.com`, "access-control-request-method": "GET" },
    ]) {
      const { res, forwarded } = await edge({}, "/items/1", { method: "OPTIONS", headers });
      expect(res.status).toBe(403);
      expect(corsHeaderNames(res)).toEqual([]);
      expect(forwarded).toEqual([]);
    }
  });

  // The one timing assertion the issue asks for. workerd's clock is coarse, so each side runs the pure
  // answerPreflight() many times over the same total number of names; the per-name cost of the 10,000-name
  // list must stay within a constant factor of the 10-name list's: a quadratic scan would be ~1,000×, so the
  // bound of 10× leaves room for a noisy machine (measured here: 0.7× and 1.9×).
  it("answers in linear time: per-name cost of 10,000 names ≈ that of 10 names", { timeout: 60_000 }, () => {
    const NAMES_PER_SIDE = 100_000;
    const cases: Array<[string, CorsPolicy, (n: number) => string[]]> = [
      ["allow-list, repeated allowed names", policyOf(ALLOW_LIST), (n) => Array.from({ length: n }, (_, i) => ["content-type", "x-request-id", "authorization"][i % 3]!)],
      ["`*`, distinct names", policyOf({ ...ALLOW_LIST, CORS_ALLOW_HEADERS: "*" }), (n) => Array.from({ length: n }, (_, i) => `x-h${i}`)],
    ];
    for (const [label, policy, names] of cases) {
      const perName = (count: number) => {
        const request = source({ origin: APP, "access-control-request-method": "PUT", "access-control-request-headers": names(count).join(", ") });
        const iterations = NAMES_PER_SIDE / count;
        expect(answerPreflight(policy, request).allowed).toBe(true);
        let best = Number.POSITIVE_INFINITY;
        for (let round = 0; round < 3; round++) {
          const started = performance.now();
          for (let i = 0; i < iterations; i++) answerPreflight(policy, request);
          best = Math.min(best, performance.now() - started);
        }
        return best / NAMES_PER_SIDE;
      };
      perName(10); // warm up both shapes before measuring
      perName(10_000);
      const small = perName(10);
      const large = perName(10_000);
      const ratio = large / Math.max(small, 1e-6);
      console.log(`preflight linearity (${label}): ${(small * 1e6).toFixed(0)} ns/name at 10 names, ${(large * 1e6).toFixed(0)} ns/name at 10,000 names, ratio ${ratio.toFixed(2)}`);
      expect(ratio, `${label}: per-name cost grew ${ratio.toFixed(1)}× from 10 to 10,000 names`).toBeLessThan(10);
    }
  });
});

describe("hostile Origin values: refused preflights (403, no CORS headers), actual responses with only Vary", () => {
  const HOSTILE_ORIGINS = [
    "https://user@app.example.com",
    "https://user:pass@app.example.com",
    "https://app.example.com@evil.example.net",
    "https://app.example.com#",
    "https://app.example.com#x",
    "https://app.example.com?",
    "https://app.example.com/",
    "https://app. example.com",
    "https ://app.example.com",
    "https://app.example.com x",
    "https://app.example.com\tx",
    "HTTPS://APP.EXAMPLE.COM",
    "https://App.example.com",
    "https://app.example.COM",
    "null",
    "NULL",
    "Null",
    "https://app.example.com.",
    "https://app.example.com:443",
    "https://app.example.com:0443",
    "http://app.example.com",
    "//app.example.com",
    "app.example.com",
    "*",
    "https://preview.example.com",
    "https://.preview.example.com",
    "https://a..preview.example.com",
    "https://x_y.preview.example.com",
    "https://x.preview.example.com.evil.net",
    "https://xpreview.example.com",
    "https://x.preview.example.com:8443",
    wireBytes("https://аpp.example.com"), // Cyrillic а, as UTF-8 bytes on the wire
    wireBytes("https://x.preview.exämple.com"),
    `https://${"a".repeat(10 * 1024)}.example.com`,
  ];

  it.each(HOSTILE_ORIGINS.map((origin) => [JSON.stringify(origin.length > 60 ? `${origin.slice(0, 30)}…` : origin), origin]))(
    "%s",
    async (_, origin) => {
      const refused = await edge({}, "/items/1", { method: "OPTIONS", headers: { origin, "access-control-request-method": "GET" } });
      expect(refused.res.status).toBe(403);
      expect(corsHeaderNames(refused.res)).toEqual([]);
      expect(refused.forwarded).toEqual([]);

      const actual = await edge({ CORS_ALLOW_CREDENTIALS: "true" }, "/items/1", { headers: { origin } });
      expect(actual.res.status).toBe(200);
      expect(corsHeaderNames(actual.res)).toEqual(["vary"]);
    },
  );

  it("surrounding whitespace is HTTP's optional whitespace, removed before the worker sees the value", async () => {
    const { res } = await edge({}, "/items/1", { method: "OPTIONS", headers: { origin: ` \t${APP} \t`, "access-control-request-method": "GET" } });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe(APP);
  });

  it("duplicate Origin headers (combined into one list value) are never allowed, even when both are", async () => {
    for (const second of [APP, "https://evil.example.net", "https://x.preview.example.com"]) {
      const headers = new Headers({ "access-control-request-method": "GET" });
      headers.append("origin", APP);
      headers.append("origin", second);
      const refused = await edge({}, "/items/1", { method: "OPTIONS", headers });
      expect(refused.res.status).toBe(403);
      expect(corsHeaderNames(refused.res)).toEqual([]);
      expect(refused.forwarded).toEqual([]);
      headers.delete("access-control-request-method");
      const actual = await edge({}, "/items/1", { headers });
      expect(corsHeaderNames(actual.res)).toEqual(["vary"]);
    }
  });
});

describe("spoofed internal and token headers", () => {
  const TOKEN = "edge-secret-0123456789abcdef";
  const SPOOFED: Record<string, string> = {
    "x-origin-token": "forged",
    "x-origin-verify": "forged",
    "x-forwarded-for": "10.0.0.1",
    "x-forwarded-host": "admin.internal",
    "x-forwarded-proto": "http",
    forwarded: "for=10.0.0.1;host=admin.internal",
    "x-real-ip": "10.0.0.1",
    "true-client-ip": "10.0.0.1",
    "x-client-ip": "10.0.0.1",
    "x-original-url": "/admin",
    "x-rewrite-url": "/admin",
    "x-original-method": "DELETE",
    "x-http-method-override": "DELETE",
    "x-internal-user": "admin",
    traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    baggage: "user=admin",
    via: "1.1 evil",
  };

  it("none reaches the origin; the origin gets exactly one x-origin-token, the configured one", async () => {
    const origin = await fakeOrigin();
    const headers = new Headers(SPOOFED);
    headers.append("X-Origin-Token", "forged-again");
    const res = await callEdge({ ...ALLOW_LIST, ORIGIN_URL: origin.url, ORIGIN_TOKEN: TOKEN }, "/items/1", { headers });
    expect(res.status).toBe(200);
    const [request, ...more] = await origin.requests();
    expect(more).toEqual([]);
    const received = request!.headers.map(([name, value]) => [name.toLowerCase(), value] as const);
    expect(received.filter(([name]) => name === "x-origin-token")).toEqual([["x-origin-token", TOKEN]]);
    for (const name of Object.keys(SPOOFED)) {
      if (name !== "x-origin-token") expect(received.map(([n]) => n), name).not.toContain(name);
    }
    expect(received.filter(([name]) => isInternalRequestHeader(name)).map(([name]) => name)).toEqual(["x-origin-token"]);
  });

  it("a Connection header naming the token cannot make the runtime drop it", async () => {
    const origin = await fakeOrigin();
    await callEdge({ ORIGIN_URL: origin.url, ORIGIN_TOKEN: TOKEN }, "/items/1", {
      headers: { connection: "keep-alive, x-origin-token", "x-origin-token": "forged" },
    });
    const [request] = await origin.requests();
    expect(request!.headers.filter(([name]) => name.toLowerCase() === "x-origin-token")).toEqual([["x-origin-token", TOKEN]]);
  });

  it("spoofed headers change nothing about a preflight, and it is still answered at the edge", async () => {
    const plain = await edge({}, "/items/1", { method: "OPTIONS", headers: { origin: APP, "access-control-request-method": "PUT" } });
    const spoofed = await edge({}, "/items/1", {
      method: "OPTIONS",
      headers: { ...SPOOFED, origin: APP, "access-control-request-method": "PUT" },
    });
    expect(spoofed.res.status).toBe(plain.res.status);
    expect([...spoofed.res.headers]).toEqual([...plain.res.headers]);
    expect(spoofed.forwarded).toEqual([]);
  });
});

describe("hostile methods", () => {
  it.each(["PATCH", "TRACE", "DELETE", "POST", "PUT"])("%s on an item path → 405 with Allow, nothing forwarded", async (method) => {
    const { res, bodyBytes, forwarded } = await edge({}, "/items/1", { method });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, HEAD");
    expect(bodyBytes).toBeLessThan(SMALL);
    expect(forwarded).toEqual([]);
  });

  // workerd departs from the Fetch standard here: it uppercases every known method (Fetch normalises only
  // DELETE GET HEAD OPTIONS POST PUT, so `patch` should stay `patch`), and it cannot even construct a Request
  // with CONNECT or TRACK. Over the wire, workerd's HTTP server answers `patch`, `trace` and TRACK with 501 and
  // CONNECT with 500 before the worker runs: test/browser/wire.ts checks that against wrangler dev.
  it("lowercase `patch` becomes PATCH inside workerd and gets the same 405", async () => {
    const { res, forwarded } = await edge({}, "/items/1", { method: "patch" });
    expect(res.status).toBe(405);
    expect(forwarded).toEqual([]);
  });

  it("CONNECT and TRACK cannot be constructed inside workerd at all", () => {
    for (const method of ["CONNECT", "TRACK"]) expect(() => new Request("https://edge.example.net/items/1", { method })).toThrow(TypeError);
  });

  it.each(["TRACE", "CONNECT", "TRACK", "patch", "Get", "GET,PUT", "PUT, PUT"])(
    "a preflight asking for %j under an allow-list is refused with no CORS headers",
    async (method) => {
      const { res, forwarded } = await edge({ CORS_ALLOW_METHODS: "GET,HEAD,PUT,PATCH" }, "/items/1", {
        method: "OPTIONS",
        headers: { origin: APP, "access-control-request-method": method },
      });
      expect(res.status).toBe(403);
      expect(corsHeaderNames(res)).toEqual([]);
      expect(forwarded).toEqual([]);
    },
  );
});
