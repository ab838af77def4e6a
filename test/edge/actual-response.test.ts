import { describe, expect, it } from "vitest";
import type { EdgeVars } from "../../src/edge/config/edge-vars.ts";
import { ALLOW_LIST, callEdge, type Scenario, fakeOrigin } from "./support/edge.ts";

const APP = "https://app.example.com";

async function get(vars: EdgeVars, headers: Record<string, string>, scenario: Scenario = {}, path = "/items/1") {
  const origin = await fakeOrigin(scenario);
  return callEdge({ ...vars, ORIGIN_URL: origin.url }, path, { headers });
}

function corsHeaders(res: Response): Record<string, string> {
  return Object.fromEntries([...res.headers].filter(([name]) => name.startsWith("access-control-") || name === "vary"));
}

describe("actual responses", () => {
  it("gives an allowed origin its origin, exposed headers and Vary", async () => {
    const res = await get(ALLOW_LIST, { origin: APP });
    expect(res.status).toBe(200);
    expect(corsHeaders(res)).toEqual({
      "access-control-allow-origin": APP,
      "access-control-expose-headers": "etag",
      vary: "origin",
    });
  });

  it("lists etag only on an answer with an ETag; every other exposed name always (Cloudflare may add it later); `*` stays `*`", async () => {
    const exposing = (expose: string) => ({ ...ALLOW_LIST, CORS_EXPOSE_HEADERS: expose });
    const tagged: Scenario = { headers: [["ETag", '"v1"']], body: "{}" };
    const untagged: Scenario = { status: 503, headers: [], body: "down" };
    const exposed = async (expose: string, scenario: Scenario) => (await get(exposing(expose), { origin: APP }, scenario)).headers.get("access-control-expose-headers");
    expect(await exposed("x-total-count,etag,cf-ray", tagged)).toBe("x-total-count,etag,cf-ray");
    expect(await exposed("x-total-count,etag,cf-ray", untagged)).toBe("x-total-count,cf-ray");
    expect(await exposed("etag", untagged)).toBeNull();
    const anyOrigin = { CORS_ALLOW_ORIGINS: "*", CORS_EXPOSE_HEADERS: "*" };
    expect((await get(anyOrigin, { origin: APP }, { status: 503, headers: [], body: "down" })).headers.get("access-control-expose-headers")).toBe("*");
    expect((await get({ CORS_ALLOW_ORIGINS: "*", CORS_EXPOSE_HEADERS: "etag" }, { origin: APP }, { status: 503, headers: [], body: "down" })).headers.has("access-control-expose-headers")).toBe(false);
  });

  it("gives a disallowed origin and a request without Origin only Vary under an allow-list", async () => {
    for (const headers of [{ origin: "https://evil.example.net" }, {}] as Record<string, string>[]) {
      expect(corsHeaders(await get({ ...ALLOW_LIST, CORS_ALLOW_CREDENTIALS: "true" }, headers))).toEqual({ vary: "origin" });
    }
  });

  it("sends credentials only to an allowed origin", async () => {
    const vars = { ...ALLOW_LIST, CORS_ALLOW_CREDENTIALS: "true" };
    expect((await get(vars, { origin: APP })).headers.get("access-control-allow-credentials")).toBe("true");
    expect((await get(vars, { origin: "https://evil.example.net" })).headers.has("access-control-allow-credentials")).toBe(false);
  });

  it("answers * without Vary under the any-origin policy", async () => {
    expect(corsHeaders(await get({ CORS_ALLOW_ORIGINS: "*" }, { origin: "https://x.example.org" }))).toEqual({
      "access-control-allow-origin": "*",
    });
  });

  it("adds nothing when CORS is off", async () => {
    expect(corsHeaders(await get({}, { origin: APP }))).toEqual({});
  });

  it("removes the origin's own CORS headers, so the edge policy is the only one a browser sees", async () => {
    const scenario: Scenario = {
      headers: [
        ["Access-Control-Allow-Origin", "*"],
        ["Access-Control-Allow-Credentials", "true"],
        ["Access-Control-Allow-Methods", "GET, PUT, POST, DELETE, PATCH, OPTIONS"],
        ["ETag", '"v1"'],
      ],
    };
    expect(corsHeaders(await get(ALLOW_LIST, { origin: "https://evil.example.net" }, scenario))).toEqual({ vary: "origin" });
    expect(corsHeaders(await get({}, { origin: "https://evil.example.net" }, scenario))).toEqual({});
  });

  it("merges origin into the origin's Vary without duplicating it", async () => {
    const vary = async (value: string) =>
      (await get(ALLOW_LIST, { origin: APP }, { headers: [["Vary", value]] })).headers.get("vary");
    expect(await vary("Accept-Encoding")).toBe("Accept-Encoding, origin");
    expect(await vary("Accept-Encoding, Origin")).toBe("Accept-Encoding, Origin");
    expect(await vary("*")).toBe("*");
  });

  it("keeps error statuses and gives them the same CORS treatment", async () => {
    const res = await get(ALLOW_LIST, { origin: APP }, { status: 503, body: "down" });
    expect(res.status).toBe(503);
    expect(res.headers.get("access-control-allow-origin")).toBe(APP);
    for (const path of ["/nope", "/items/a.b"]) {
      const edge = await get(ALLOW_LIST, { origin: APP }, {}, path);
      expect(edge.status).toBeGreaterThanOrEqual(400);
      // Expose-Headers lists only what an answer carries: an edge error has no ETag.
      expect(corsHeaders(edge)).toEqual({ "access-control-allow-origin": APP, vary: "origin" });
    }
  });

  // (Surrounding whitespace is not in this list: Fetch strips it from every header value before we see it.)
  it("does not answer an uppercase, duplicated or path-carrying Origin as allowed", async () => {
    for (const origin of ["https://APP.example.com", `${APP}, ${APP}`, `${APP}/`, `${APP}#x`, "https://u@app.example.com"]) {
      expect(corsHeaders(await get(ALLOW_LIST, { origin }))).toEqual({ vary: "origin" });
    }
  });
});
