import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/shared/config/config-error.ts";
import type { EdgeVars } from "../../src/edge/config/edge-vars.ts";
import { parseEdgeConfig } from "../../src/edge/config/parse-edge-config.ts";
import { callEdge, corsHeaderNames, fakeOrigin } from "./support/edge.ts";

function problemsOf(vars: EdgeVars): string[] {
  try {
    parseEdgeConfig(vars);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((p) => `${p.variable}: ${p.message}`);
    throw error;
  }
  return [];
}

const CREDENTIALED = { CORS_ALLOW_CREDENTIALS: "true" };

// Each refused configuration: the vars, the var the error must name, and words of the fix it must give.
const REFUSED: Array<[string, EdgeVars, string, RegExp]> = [
  ["* with credentials", { CORS_ALLOW_ORIGINS: "*", ...CREDENTIALED }, "CORS_ALLOW_ORIGINS", /list the origins/],
  ["null with credentials", { CORS_ALLOW_ORIGINS: "null", ...CREDENTIALED }, "CORS_ALLOW_ORIGINS", /sandboxed/],
  ["* mixed with origins", { CORS_ALLOW_ORIGINS: "*,https://a.example.com" }, "CORS_ALLOW_ORIGINS", /remove/],
  ["wildcard over .com, credentialed", { CORS_ALLOW_ORIGINS: "https://*.com", ...CREDENTIALED }, "CORS_ALLOW_ORIGINS", /public suffix "com"/],
  ["wildcard over github.io, credentialed", { CORS_ALLOW_ORIGINS: "https://*.github.io", ...CREDENTIALED }, "CORS_ALLOW_ORIGINS", /public suffix "github.io"/],
  ["wildcard over co.uk, credentialed", { CORS_ALLOW_ORIGINS: "https://*.co.uk", ...CREDENTIALED }, "CORS_ALLOW_ORIGINS", /public suffix "co.uk"/],
  ["pattern with a trailing slash", { CORS_ALLOW_ORIGINS: "https://*.example.com/" }, "CORS_ALLOW_ORIGINS", /write "https:\/\/\*\.example\.com"/],
  ["uppercase pattern", { CORS_ALLOW_ORIGINS: "https://*.Example.com" }, "CORS_ALLOW_ORIGINS", /write "https:\/\/\*\.example\.com"/],
  ["pattern with a default port", { CORS_ALLOW_ORIGINS: "https://*.example.com:443" }, "CORS_ALLOW_ORIGINS", /write "https:\/\/\*\.example\.com"/],
  ["wildcard over a domain with public suffixes beneath it, credentialed", { CORS_ALLOW_ORIGINS: "https://*.amazonaws.com", ...CREDENTIALED }, "CORS_ALLOW_ORIGINS", /public suffix "s3\.amazonaws\.com"/],
  ["origin with a path", { CORS_ALLOW_ORIGINS: "https://a.example.com/app" }, "CORS_ALLOW_ORIGINS", /write "https:\/\/a.example.com"/],
  ["origin with a trailing slash", { CORS_ALLOW_ORIGINS: "https://a.example.com/" }, "CORS_ALLOW_ORIGINS", /trailing slash/],
  ["origin with a default port", { CORS_ALLOW_ORIGINS: "https://a.example.com:443" }, "CORS_ALLOW_ORIGINS", /default port 443/],
  ["http origin with port 80", { CORS_ALLOW_ORIGINS: "http://a.example.com:80" }, "CORS_ALLOW_ORIGINS", /default port 80/],
  ["uppercase origin", { CORS_ALLOW_ORIGINS: "https://App.example.com" }, "CORS_ALLOW_ORIGINS", /lowercase/],
  ["wildcard inside a label", { CORS_ALLOW_ORIGINS: "https://app-*.example.com" }, "CORS_ALLOW_ORIGINS", /whole first label/],
  ["wildcard not first", { CORS_ALLOW_ORIGINS: "https://a.*.example.com" }, "CORS_ALLOW_ORIGINS", /whole first label/],
  ["origin with user info", { CORS_ALLOW_ORIGINS: "https://u@a.example.com" }, "CORS_ALLOW_ORIGINS", /user info/],
  ["not an origin", { CORS_ALLOW_ORIGINS: "a.example.com" }, "CORS_ALLOW_ORIGINS", /scheme:\/\/host/],
  ["empty list item", { CORS_ALLOW_ORIGINS: "https://a.example.com,,https://b.example.com" }, "CORS_ALLOW_ORIGINS", /stray comma/],
  ["negative max-age", { CORS_MAX_AGE: "-1" }, "CORS_MAX_AGE", /whole number/],
  ["fractional max-age", { CORS_MAX_AGE: "1.5" }, "CORS_MAX_AGE", /whole number/],
  ["max-age above what browsers honour", { CORS_MAX_AGE: "604800" }, "CORS_MAX_AGE", /at most 86400/],
  ["* in methods with credentials", { CORS_ALLOW_METHODS: "*", ...CREDENTIALED }, "CORS_ALLOW_METHODS", /list the methods/],
  ["* in expose headers with credentials", { CORS_EXPOSE_HEADERS: "*", ...CREDENTIALED }, "CORS_EXPOSE_HEADERS", /list the headers/],
  ["CONNECT", { CORS_ALLOW_METHODS: "GET,CONNECT" }, "CORS_ALLOW_METHODS", /forbidden method/],
  ["TRACE", { CORS_ALLOW_METHODS: "TRACE" }, "CORS_ALLOW_METHODS", /forbidden method/],
  ["track in any case", { CORS_ALLOW_METHODS: "track" }, "CORS_ALLOW_METHODS", /forbidden method/],
  ["a method that is not a token", { CORS_ALLOW_METHODS: "GET,PU T" }, "CORS_ALLOW_METHODS", /not a valid method/],
  ["a method no registry knows (a typo)", { CORS_ALLOW_METHODS: "GET,PACTH" }, "CORS_ALLOW_METHODS", /"PACTH" is not an HTTP method .*check the spelling/],
  ["lowercase put never matches", { CORS_ALLOW_METHODS: "put" }, "CORS_ALLOW_METHODS", /write "PUT"/],
  ["allowed header that is not a token", { CORS_ALLOW_HEADERS: "x-a(b)" }, "CORS_ALLOW_HEADERS", /not a valid header name/],
  ["an allowed header listed twice in different case", { CORS_ALLOW_HEADERS: "X-Foo,x-foo" }, "CORS_ALLOW_HEADERS", /"X-Foo" and "x-foo" are the same header \(header names ignore case\); list it once/],
  ["an exposed header listed twice in different case", { CORS_EXPOSE_HEADERS: "ETag,etag" }, "CORS_EXPOSE_HEADERS", /"ETag" and "etag" are the same header/],
  ["exposed header that is not a token", { CORS_EXPOSE_HEADERS: "x:y" }, "CORS_EXPOSE_HEADERS", /not a valid header name/],
  ["credentials not a boolean", { CORS_ALLOW_CREDENTIALS: "yes" }, "CORS_ALLOW_CREDENTIALS", /"true" or "false"/],
  ["private network not a boolean", { CORS_ALLOW_PRIVATE_NETWORK: "1" }, "CORS_ALLOW_PRIVATE_NETWORK", /"true" or "false"/],
  ["origin url not a url", { ORIGIN_URL: "not a url" }, "ORIGIN_URL", /not a URL/],
  ["timeout not a number", { ORIGIN_TIMEOUT_MS: "5s" }, "ORIGIN_TIMEOUT_MS", /milliseconds/],
  ["origin url with another scheme", { ORIGIN_URL: "ftp://o.example.com" }, "ORIGIN_URL", /must be an http or https URL/],
  ["origin url with a query", { ORIGIN_URL: "https://o.example.com/?a=1" }, "ORIGIN_URL", /must not carry a query, fragment or credentials \(use the ORIGIN_TOKEN secret\)/],
  ["origin url with a fragment", { ORIGIN_URL: "https://o.example.com/#f" }, "ORIGIN_URL", /must not carry a query, fragment or credentials/],
  ["origin url with credentials", { ORIGIN_URL: "https://u:p@o.example.com" }, "ORIGIN_URL", /must not carry a query, fragment or credentials/],
  ["timeout 0", { ORIGIN_TIMEOUT_MS: "0" }, "ORIGIN_TIMEOUT_MS", /whole number of milliseconds from 1 to 3600000/],
  ["timeout above an hour", { ORIGIN_TIMEOUT_MS: "3600001" }, "ORIGIN_TIMEOUT_MS", /whole number of milliseconds from 1 to 3600000/],
  ["item TTL not a number", { EDGE_CACHE_TTL: "1d" }, "EDGE_CACHE_TTL", /whole number of seconds from 0 to 86400/],
  ["item TTL above a day", { EDGE_CACHE_TTL: "86401" }, "EDGE_CACHE_TTL", /whole number of seconds from 0 to 86400/],
  ["origin with another scheme", { CORS_ALLOW_ORIGINS: "ftp://a.example.com" }, "CORS_ALLOW_ORIGINS", /only http and https origins/],
  ["origin with an invalid port", { CORS_ALLOW_ORIGINS: "https://a.example.com:99999" }, "CORS_ALLOW_ORIGINS", /invalid port/],
  ["origin with an invalid host", { CORS_ALLOW_ORIGINS: "https://a_b.example.com" }, "CORS_ALLOW_ORIGINS", /invalid host "a_b\.example\.com"/],
  ["* mixed with methods", { CORS_ALLOW_METHODS: "*,GET" }, "CORS_ALLOW_METHODS", /already allows every method; remove the other methods, or remove "\*"/],
  ["* mixed with exposed headers", { CORS_EXPOSE_HEADERS: "*,x-a" }, "CORS_EXPOSE_HEADERS", /already exposes every header; remove the other names, or remove "\*"/],
  ["404 TTL not a number", { EDGE_CACHE_NOT_FOUND_TTL: "1d" }, "EDGE_CACHE_NOT_FOUND_TTL", /whole number of seconds from 0 to 86400/],
  ["negative 404 TTL", { EDGE_CACHE_NOT_FOUND_TTL: "-1" }, "EDGE_CACHE_NOT_FOUND_TTL", /whole number of seconds from 0 to 86400/],
  ["404 TTL above a day", { EDGE_CACHE_NOT_FOUND_TTL: "86401" }, "EDGE_CACHE_NOT_FOUND_TTL", /whole number of seconds from 0 to 86400/],
];

describe("configuration", () => {
  it.each(REFUSED)("refuses %s, naming the var and the fix", (_, vars, variable, fix) => {
    const problems = problemsOf(vars);
    expect(problems.length).toBeGreaterThan(0);
    expect(problems.some((p) => p.startsWith(`${variable}: `) && fix.test(p))).toBe(true);
  });

  it.each(REFUSED)("answers 500 with no CORS headers and forwards nothing under %s", async (_, vars) => {
    const origin = await fakeOrigin();
    for (const [method, headers] of [
      ["GET", { origin: "https://a.example.com" }],
      ["OPTIONS", { origin: "https://a.example.com", "access-control-request-method": "GET" }],
    ] as const) {
      const res = await callEdge({ ORIGIN_URL: origin.url, ...vars }, "/items/1", { method, headers });
      expect(res.status).toBe(500);
      expect(corsHeaderNames(res)).toEqual([]);
      expect(await res.text()).toMatch(/misconfigured/);
    }
    expect(await origin.requests()).toEqual([]);
  });

  it("says each duplicate once: a name repeated as written, and each other spelling of it", () => {
    expect(problemsOf({ CORS_EXPOSE_HEADERS: "ETag,etag,etag,ETAG" })).toEqual([
      'CORS_EXPOSE_HEADERS: "etag" is listed twice; list it once.',
      'CORS_EXPOSE_HEADERS: "ETag" and "etag" are the same header (header names ignore case); list it once.',
      'CORS_EXPOSE_HEADERS: "ETag" and "ETAG" are the same header (header names ignore case); list it once.',
    ]);
  });

  it("suggests an origin that is accepted as it stands, not refused for the next problem in turn", () => {
    for (const written of [
      "HTTPS://App.example.com:443/",
      "https://App.example.com/",
      "https://app.example.com:443/",
      "http://A.example.com:80/path",
      "https://*.Example.com:443/",
      "https://App.example.com:8443/",
    ]) {
      const [problem] = problemsOf({ CORS_ALLOW_ORIGINS: written });
      const suggested = /write "([^"]+)"/.exec(problem ?? "")?.[1];
      expect(suggested, `${written}: ${problem}`).toBeDefined();
      expect(problemsOf({ CORS_ALLOW_ORIGINS: suggested! }), `${written} → ${suggested}`).toEqual([]);
    }
  });

  it("lists every problem at once", () => {
    const problems = problemsOf({ CORS_ALLOW_ORIGINS: "*", CORS_ALLOW_CREDENTIALS: "true", CORS_MAX_AGE: "x" });
    expect(problems.map((p) => p.split(":")[0])).toEqual(["CORS_ALLOW_ORIGINS", "CORS_MAX_AGE"]);
  });

  it("accepts the shipped defaults and a full allow-list", () => {
    expect(problemsOf({})).toEqual([]);
    expect(
      problemsOf({
        CORS_ALLOW_ORIGINS: "https://app.example.com,http://localhost:5173,https://*.preview.example.com,null",
        CORS_ALLOW_METHODS: "GET,HEAD,PUT,PATCH,patch,DELETE",
        CORS_ALLOW_HEADERS: "Content-Type,x-request-id,*",
        CORS_EXPOSE_HEADERS: "*",
        CORS_MAX_AGE: "86400",
        CORS_ALLOW_PRIVATE_NETWORK: "true",
        ORIGIN_URL: "https://origin.example.com/base/",
        ORIGIN_TIMEOUT_MS: "250",
      }),
    ).toEqual([]);
  });

  it("accepts a wildcard over a public suffix only without credentials", () => {
    expect(problemsOf({ CORS_ALLOW_ORIGINS: "https://*.github.io" })).toEqual([]);
    expect(problemsOf({ CORS_ALLOW_ORIGINS: "https://*.example.com", ...CREDENTIALED })).toEqual([]);
    expect(problemsOf({ CORS_ALLOW_ORIGINS: "https://*.amazonaws.com" })).toEqual([]);
    expect(problemsOf({ CORS_ALLOW_ORIGINS: "https://*.mybucket.s3.amazonaws.com", ...CREDENTIALED })).toEqual([]);
  });

  it("reads EDGE_CACHE_NOT_FOUND_TTL in seconds, 0 (404s not cached) by default", () => {
    expect(parseEdgeConfig({}).edgeCacheNotFoundTtlSeconds).toBe(0);
    expect(parseEdgeConfig({ EDGE_CACHE_NOT_FOUND_TTL: "" }).edgeCacheNotFoundTtlSeconds).toBe(0);
    expect(parseEdgeConfig({ EDGE_CACHE_NOT_FOUND_TTL: "86400", EDGE_CACHE_TTL: "86400" })).toMatchObject({
      edgeCacheNotFoundTtlSeconds: 86400,
      edgeCacheTtlSeconds: 86400,
    });
  });

  it("reads an empty CORS_ALLOW_METHODS as the default, like every other var", () => {
    expect(parseEdgeConfig({ CORS_ALLOW_METHODS: "" }).cors.methods).toEqual(["GET", "HEAD"]);
  });

  it("normalises header names to lowercase and the origin URL to no trailing slash", () => {
    const spec = parseEdgeConfig({ CORS_ALLOW_HEADERS: "X-Request-ID", ORIGIN_URL: "https://o.example.com/base/" });
    expect(spec.cors.headers).toEqual(["x-request-id"]);
    expect(spec.origin.url).toBe("https://o.example.com/base");
  });
});
