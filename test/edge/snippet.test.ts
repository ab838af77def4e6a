// The built Snippet inside workerd: the shared edge cases (the same table the Worker passes, in
// test/edge/shared-cases.test.ts), what only the Snippet does, and the 32 KB limit. The Snippets are
// dist/test/snippet-*.js, built with the shared policies baked in by test/snippet/build-snippets-setup.ts.
import { env } from "cloudflare:workers";
import { describe, expect, it, inject } from "vitest";
import { SNIPPET_LIMIT_BYTES } from "../../src/snippet/limits.ts";
import { checkEdgeCase, requestInit } from "../shared/check-edge-case.ts";
import { EDGE_CASES, type EdgeCase, type PolicyName } from "../shared/edge-cases.ts";
import { SNIPPET_ZONE_HOST, snippetTestBuild } from "../snippet/snippet-test-vars.ts";
import { fakeOrigin, type FakeOrigin, type Scenario } from "./support/edge.ts";

/** Sends a request to the Snippet built with `policy`, on a host whose item reads reach `origin`. */
function callSnippet(policy: PolicyName, origin: FakeOrigin, path: string, init?: RequestInit): Promise<Response> {
  const scenario = origin.url.slice(origin.url.lastIndexOf("/") + 1);
  const snippet = (env as unknown as Record<string, Fetcher>)[snippetTestBuild(policy).binding];
  if (!snippet) throw new Error(`no service binding for the ${policy} Snippet: see vitest.config.ts`);
  // redirect: "manual", or the service binding would follow a redirect the Snippet returns (as a browser would).
  return snippet.fetch(new Request(`https://${scenario}.${SNIPPET_ZONE_HOST}${path}`, { ...init, redirect: "manual" }));
}

describe("shared edge cases: the Snippet", () => {
  it.each(EDGE_CASES)("$name", (edgeCase: EdgeCase) =>
    checkEdgeCase(edgeCase, (c, origin) => callSnippet(c.policy, origin, c.request.path, requestInit(c.request))),
  );
});

describe("the Snippet's own behaviour", () => {
  async function read(scenario: Scenario) {
    const origin = await fakeOrigin(scenario);
    const response = await callSnippet("allowList", origin, "/items/1", { headers: { origin: "https://app.example.com" } });
    return { response, body: await response.text(), forwarded: await origin.requests() };
  }

  it.each([
    [520, 502, "origin unreachable\n"],
    [521, 502, "origin unreachable\n"],
    [522, 504, "origin timed out\n"],
    [523, 502, "origin unreachable\n"],
    [524, 504, "origin timed out\n"],
    [525, 502, "origin unreachable\n"],
    [526, 502, "origin unreachable\n"],
    [530, 502, "origin unreachable\n"],
  ])("turns Cloudflare's %i for the zone's origin into the Worker's small %i, decorated", async (status, expected, text) => {
    const { response, body, forwarded } = await read({ status, headers: [["Content-Type", "text/html"]], body: "<html>cloudflare error page</html>" });
    expect(response.status).toBe(expected);
    expect(body).toBe(text);
    expect(response.headers.get("content-type")).toBeNull();
    expect(response.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(forwarded).toHaveLength(1);
  });

  it("restores Content-Type on a 206 the zone's cache cut for a Range, as on a 200", async () => {
    const { response, body } = await read({ status: 206, headers: [["ETag", '"v1"'], ["Content-Range", "bytes 0-3/7"]], body: '{"v"' });
    expect(response.status).toBe(206);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(body).toBe('{"v"');
  });

  it("never serves the origin's Cache-Tag, as the Worker does not", async () => {
    const { response } = await read({ status: 200, headers: [["ETag", '"v1"'], ["Cache-Tag", "item:1,items"]], body: '{"v":1}' });
    expect(response.headers.get("cache-tag")).toBeNull();
    expect(response.headers.get("etag")).toBe('"v1"');
  });

  it("passes other 5xx statuses from the origin through", async () => {
    const { response, body } = await read({ status: 502, body: "bad gateway" });
    expect(response.status).toBe(502);
    expect(body).toBe("bad gateway");
  });
});

describe("Snippet size", () => {
  const builds = inject("snippetBuilds");

  it("builds the test Snippets and every configuration in wrangler.toml", () => {
    expect(builds.filter((build) => build.error !== undefined)).toEqual([]);
    expect(builds.map((build) => build.name)).toContain("wrangler.toml [vars]");
  });

  it.each(builds.map((build) => [build.name, build] as const))("%s fits in a Snippet (32,768 bytes)", (_name, build) => {
    expect(build.bytes).toBeGreaterThan(0);
    expect(build.bytes).toBeLessThanOrEqual(SNIPPET_LIMIT_BYTES);
  });

  it.each(builds.map((build) => [build.name, build] as const))("%s bundles no config validation (tldts, parse-*)", (_name, build) => {
    expect(build.inputs.filter((input) => /tldts|\/config\/parse-|public-suffix|hono/.test(input))).toEqual([]);
    expect(build.inputs).toContain("src/edge/respond.ts");
  });
});
