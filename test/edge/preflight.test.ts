import { describe, expect, it } from "vitest";
import type { EdgeVars } from "../../src/edge/config/edge-vars.ts";
import { ALLOW_LIST, callEdge, corsHeaderNames, fakeOrigin } from "./support/edge.ts";

const APP = "https://app.example.com";

/** Sends a preflight through the worker and checks that nothing reached the origin. */
async function preflight(vars: EdgeVars, headers: Record<string, string>, path = "/items/1") {
  const origin = await fakeOrigin();
  const res = await callEdge({ ...vars, ORIGIN_URL: origin.url }, path, { method: "OPTIONS", headers });
  expect(await origin.requests()).toEqual([]);
  return res;
}

function corsHeaders(res: Response): Record<string, string> {
  return Object.fromEntries([...res.headers].filter(([name]) => name.startsWith("access-control-") || name === "vary"));
}

async function expectRefused(res: Response) {
  expect(res.status).toBe(403);
  expect(corsHeaderNames(res)).toEqual([]);
  expect(await res.arrayBuffer()).toHaveProperty("byteLength", 0);
}

describe("preflight, answered at the edge", () => {
  it("allows PUT with two requested headers with exactly the headers the browser needs", async () => {
    const res = await preflight(ALLOW_LIST, {
      origin: APP,
      "access-control-request-method": "PUT",
      "access-control-request-headers": "content-type,x-request-id",
    });
    expect(res.status).toBe(204);
    expect(corsHeaders(res)).toEqual({
      "access-control-allow-origin": APP,
      "access-control-allow-methods": "PUT",
      "access-control-allow-headers": "content-type,x-request-id",
    });
  });

  it("omits Allow-Methods for a safelisted method and Allow-Headers when none were requested", async () => {
    const res = await preflight(ALLOW_LIST, { origin: APP, "access-control-request-method": "GET" });
    expect(res.status).toBe(204);
    expect(corsHeaders(res)).toEqual({ "access-control-allow-origin": APP });
  });

  it("answers a preflight for any path, not only item paths", async () => {
    const res = await preflight(ALLOW_LIST, { origin: APP, "access-control-request-method": "GET" }, "/anything/else");
    expect(res.status).toBe(204);
  });

  it("refuses a disallowed origin with 403 and no CORS headers", async () => {
    await expectRefused(await preflight(ALLOW_LIST, { origin: "https://evil.example.net", "access-control-request-method": "GET" }));
  });

  it("refuses every preflight when CORS is off", async () => {
    await expectRefused(await preflight({}, { origin: APP, "access-control-request-method": "GET" }));
  });

  it("refuses a method not in the list, and matches methods byte for byte", async () => {
    await expectRefused(await preflight(ALLOW_LIST, { origin: APP, "access-control-request-method": "DELETE" }));
    await expectRefused(await preflight(ALLOW_LIST, { origin: APP, "access-control-request-method": "put" }));
    const patch = { ...ALLOW_LIST, CORS_ALLOW_METHODS: "PATCH" };
    await expectRefused(await preflight(patch, { origin: APP, "access-control-request-method": "patch" }));
    const res = await preflight(patch, { origin: APP, "access-control-request-method": "PATCH" });
    expect(res.headers.get("access-control-allow-methods")).toBe("PATCH");
  });

  it("never refuses a safelisted method, listed or not: Fetch never asks permission for it", async () => {
    const putOnly = { ...ALLOW_LIST, CORS_ALLOW_METHODS: "PUT" };
    const res = await preflight(putOnly, { origin: APP, "access-control-request-method": "GET", "access-control-request-headers": "authorization" });
    expect(res.status).toBe(204);
    expect(res.headers.has("access-control-allow-methods")).toBe(false);
  });

  it("refuses when any one requested header is not allowed", async () => {
    await expectRefused(
      await preflight(ALLOW_LIST, {
        origin: APP,
        "access-control-request-method": "GET",
        "access-control-request-headers": "content-type,x-secret",
      }),
    );
  });

  it("refuses malformed requested headers and methods", async () => {
    for (const [method, requested] of [
      ["GET", "content type"],
      ["GET", "content-type\u00a0"], // OWS is spaces and tabs, nothing else
      ["GET", "\u00a0"],
      ["G T", ""],
      ["", ""],
    ] as const) {
      await expectRefused(
        await preflight(ALLOW_LIST, {
          origin: APP,
          "access-control-request-method": method,
          "access-control-request-headers": requested,
        }),
      );
    }
  });

  it("skips empty members of the requested headers (RFC 9110 §5.6.1.2) and the spaces and tabs around names", async () => {
    for (const [requested, allowed] of [
      ["content-type,,x-request-id", "content-type,x-request-id"],
      [" , content-type,\t", "content-type"],
      [",", null],
      ["  ", null],
    ] as const) {
      const res = await preflight(ALLOW_LIST, { origin: APP, "access-control-request-method": "GET", "access-control-request-headers": requested });
      expect(res.status, requested).toBe(204);
      expect(res.headers.get("access-control-allow-headers"), requested).toBe(allowed);
    }
  });

  it("compares requested header names case-insensitively and echoes them once, lowercase", async () => {
    const res = await preflight(ALLOW_LIST, {
      origin: APP,
      "access-control-request-method": "GET",
      "access-control-request-headers": "X-Request-ID, content-type ,x-request-id",
    });
    expect(res.headers.get("access-control-allow-headers")).toBe("x-request-id,content-type");
  });

  describe("* in CORS_ALLOW_HEADERS", () => {
    const ANY_HEADER = { ...ALLOW_LIST, CORS_ALLOW_HEADERS: "*" };

    it("allows any header with a one-byte answer", async () => {
      const res = await preflight(ANY_HEADER, {
        origin: APP,
        "access-control-request-method": "GET",
        "access-control-request-headers": "x-anything,x-else",
      });
      expect(res.headers.get("access-control-allow-headers")).toBe("*");
    });

    it("never covers authorization", async () => {
      await expectRefused(
        await preflight(ANY_HEADER, {
          origin: APP,
          "access-control-request-method": "GET",
          "access-control-request-headers": "authorization",
        }),
      );
    });

    it("echoes the names when authorization is allowed explicitly, because * would not cover it", async () => {
      const res = await preflight({ ...ANY_HEADER, CORS_ALLOW_HEADERS: "*,authorization" }, {
        origin: APP,
        "access-control-request-method": "GET",
        "access-control-request-headers": "authorization,x-else",
      });
      expect(res.headers.get("access-control-allow-headers")).toBe("authorization,x-else");
    });

    it("means a literal * when credentials are on", async () => {
      const credentialed = { ...ANY_HEADER, CORS_ALLOW_CREDENTIALS: "true" };
      await expectRefused(
        await preflight(credentialed, {
          origin: APP,
          "access-control-request-method": "GET",
          "access-control-request-headers": "x-anything",
        }),
      );
    });
  });

  it("sends credentials and max-age only when configured", async () => {
    const plain = await preflight(ALLOW_LIST, { origin: APP, "access-control-request-method": "GET" });
    expect(plain.headers.has("access-control-allow-credentials")).toBe(false);
    expect(plain.headers.has("access-control-max-age")).toBe(false);

    const res = await preflight(
      { ...ALLOW_LIST, CORS_ALLOW_CREDENTIALS: "true", CORS_MAX_AGE: "600" },
      { origin: APP, "access-control-request-method": "GET" },
    );
    expect(res.headers.get("access-control-allow-credentials")).toBe("true");
    expect(res.headers.get("access-control-max-age")).toBe("600");
  });

  it("answers Private Network Access only when configured and asked for", async () => {
    const asked = { origin: APP, "access-control-request-method": "GET", "access-control-request-private-network": "true" };
    await expectRefused(await preflight(ALLOW_LIST, asked));
    const pna = { ...ALLOW_LIST, CORS_ALLOW_PRIVATE_NETWORK: "true" };
    expect((await preflight(pna, asked)).headers.get("access-control-allow-private-network")).toBe("true");
    const notAsked = await preflight(pna, { origin: APP, "access-control-request-method": "GET" });
    expect(notAsked.headers.has("access-control-allow-private-network")).toBe(false);
  });

  it("answers * under the any-origin policy, and never adds Vary to a preflight", async () => {
    const res = await preflight({ CORS_ALLOW_ORIGINS: "*" }, { origin: "https://any.example.org", "access-control-request-method": "HEAD" });
    expect(corsHeaders(res)).toEqual({ "access-control-allow-origin": "*" });
    const listed = await preflight(ALLOW_LIST, { origin: APP, "access-control-request-method": "GET" });
    expect(listed.headers.has("vary")).toBe(false);
  });

  it("refuses the literal null origin unless it is listed", async () => {
    await expectRefused(await preflight(ALLOW_LIST, { origin: "null", "access-control-request-method": "GET" }));
    const res = await preflight({ ...ALLOW_LIST, CORS_ALLOW_ORIGINS: "null" }, { origin: "null", "access-control-request-method": "GET" });
    expect(res.headers.get("access-control-allow-origin")).toBe("null");
  });

  it("treats an OPTIONS without Access-Control-Request-Method as an ordinary request", async () => {
    const item = await preflight(ALLOW_LIST, { origin: APP });
    expect(item.status).toBe(405);
    expect(item.headers.get("allow")).toBe("GET, HEAD");
    expect(item.headers.get("access-control-allow-origin")).toBe(APP);
    const other = await preflight(ALLOW_LIST, { origin: APP }, "/elsewhere");
    expect(other.status).toBe(404);
    const noOrigin = await preflight(ALLOW_LIST, { "access-control-request-method": "GET" });
    expect(noOrigin.status).toBe(405);
  });
});
