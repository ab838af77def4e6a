// The browser is the judge: each case loads a probe page under some origin in Chromium, lets it call a
// worker with fetch(), and asserts what the page could read, which preflight Chromium sent and how it was
// answered, and what (if anything) reached the origin.
import type { Browser, Page } from "playwright-core";
import { watchNetwork, type SeenRequest } from "./support/chromium.ts";
import type { ProbeResult, ProbeSpec } from "./support/pages.ts";
import { expectEqual, expectTrue, type Runner } from "./support/runner.ts";
import type { Stack } from "./support/stack.ts";

interface Case {
  name: string;
  /** Host name of the page (resolved to 127.0.0.1 by Chromium); its port is the page server's. */
  page: string;
  worker: "allowList" | "anyOrigin";
  /** Path on the worker; must be unique per case (it identifies the case in the network and origin logs). */
  path: string;
  init?: ProbeSpec["init"];
  read?: string[];
  expect: {
    /** undefined: the browser must refuse (fetch rejects); else the status the page must read. */
    status?: number;
    body?: (body: string) => boolean;
    /** Response headers as the page reads them: a value, null (unreadable or absent), or a pattern. */
    headers?: Record<string, string | null | RegExp>;
    /** The preflight Chromium must send and the status it must get; "none": no preflight at all. */
    preflight: "none" | 204 | 403;
    /** Whether the request reaches the origin (through the relay). */
    reachesOrigin: boolean;
  };
}

const itemBody = (id: string) => (body: string) => {
  try {
    return (JSON.parse(body) as { id?: string }).id === id;
  } catch {
    return false;
  }
};

export function browserCases(): Case[] {
  const app = "app.test";
  return [
    {
      name: "simple GET from an allowed origin: readable, no preflight",
      page: app,
      worker: "allowList",
      path: "/items/1",
      read: ["content-type"],
      expect: { status: 200, body: itemBody("1"), headers: { "content-type": "application/json" }, preflight: "none", reachesOrigin: true },
    },
    {
      name: "GET with an allowed custom header: preflight answered 204 at the edge, then readable",
      page: app,
      worker: "allowList",
      path: "/items/2",
      init: { headers: { "x-request-id": "case-2" } },
      expect: { status: 200, body: itemBody("2"), preflight: 204, reachesOrigin: true },
    },
    {
      name: "credentials: 'include' from an allowed origin under a credentialed allow-list: readable",
      page: app,
      worker: "allowList",
      path: "/items/3",
      init: { credentials: "include" },
      expect: { status: 200, body: itemBody("3"), preflight: "none", reachesOrigin: true },
    },
    {
      name: "credentials: 'include' against `*` (no credentials configured): the browser refuses",
      page: app,
      worker: "anyOrigin",
      path: "/items/4",
      init: { credentials: "include" },
      expect: { preflight: "none", reachesOrigin: true },
    },
    {
      name: "PUT: preflight allowed (204), the PUT itself answered 405 by the edge and readable",
      page: app,
      worker: "allowList",
      path: "/items/5",
      init: { method: "PUT", headers: { "content-type": "application/json" }, body: "{}" },
      read: ["allow"],
      expect: { status: 405, body: (b) => b.startsWith("method not allowed"), headers: { allow: null }, preflight: 204, reachesOrigin: false },
    },
    {
      name: "DELETE (not in CORS_ALLOW_METHODS): preflight refused (403), the DELETE is never sent",
      page: app,
      worker: "allowList",
      path: "/items/6",
      init: { method: "DELETE" },
      expect: { preflight: 403, reachesOrigin: false },
    },
    {
      name: "simple GET from a disallowed origin: the page cannot read it",
      page: "evil.test",
      worker: "allowList",
      path: "/items/7",
      expect: { preflight: "none", reachesOrigin: true },
    },
    {
      name: "GET with a custom header from a disallowed origin: preflight refused (403), nothing reaches the origin",
      page: "evil.test",
      worker: "allowList",
      path: "/items/8",
      init: { headers: { "x-request-id": "case-8" } },
      expect: { preflight: 403, reachesOrigin: false },
    },
    {
      name: "a disallowed request header: preflight refused (403), nothing reaches the origin",
      page: app,
      worker: "allowList",
      path: "/items/9",
      init: { headers: { "x-secret": "s" } },
      expect: { preflight: 403, reachesOrigin: false },
    },
    {
      name: "one allowed and one disallowed header together: refused",
      page: app,
      worker: "allowList",
      path: "/items/10",
      init: { headers: { "x-request-id": "case-10", "x-secret": "s" } },
      expect: { preflight: 403, reachesOrigin: false },
    },
    {
      name: "wildcard-subdomain origin (two labels under *.preview.test), with a preflight: readable",
      page: "a.b.preview.test",
      worker: "allowList",
      path: "/items/11",
      init: { headers: { "x-request-id": "case-11" } },
      expect: { status: 200, body: itemBody("11"), preflight: 204, reachesOrigin: true },
    },
    {
      name: "wildcard-subdomain origin, simple GET with credentials: readable",
      page: "x.preview.test",
      worker: "allowList",
      path: "/items/12",
      init: { credentials: "include" },
      expect: { status: 200, body: itemBody("12"), preflight: "none", reachesOrigin: true },
    },
    {
      name: "the pattern's apex (preview.test) is not a subdomain: refused",
      page: "preview.test",
      worker: "allowList",
      path: "/items/13",
      init: { headers: { "x-request-id": "case-13" } },
      expect: { preflight: 403, reachesOrigin: false },
    },
    {
      name: "a look-alike (x.preview.test.evil.test) is refused",
      page: "x.preview.test.evil.test",
      worker: "allowList",
      path: "/items/14",
      expect: { preflight: "none", reachesOrigin: true },
    },
    {
      name: "a look-alike (evilpreview.test) is refused",
      page: "evilpreview.test",
      worker: "allowList",
      path: "/items/15",
      init: { headers: { "x-request-id": "case-15" } },
      expect: { preflight: 403, reachesOrigin: false },
    },
    {
      name: "an error status from the origin (404 for an unknown id) is readable by the page",
      page: app,
      worker: "allowList",
      path: "/items/999999",
      expect: { status: 404, preflight: "none", reachesOrigin: true },
    },
    {
      name: "an error status from the edge (400 for a bad id) is readable by the page",
      page: app,
      worker: "allowList",
      path: "/items/bad.id",
      expect: { status: 400, body: (b) => b.startsWith("bad item id"), preflight: "none", reachesOrigin: false },
    },
    {
      name: "an error status from the edge (404 for another path) is readable by the page",
      page: app,
      worker: "allowList",
      path: "/elsewhere",
      expect: { status: 404, preflight: "none", reachesOrigin: false },
    },
    {
      name: "an exposed header (ETag) is readable; an unexposed one (Vary) is not",
      page: app,
      worker: "allowList",
      path: "/items/16",
      read: ["etag", "vary"],
      expect: { status: 200, headers: { etag: /^"[^"]+"$/, vary: null }, preflight: "none", reachesOrigin: true },
    },
    {
      name: "without CORS_EXPOSE_HEADERS the page cannot read ETag (but reads the body and safelisted headers)",
      page: app,
      worker: "anyOrigin",
      path: "/items/17",
      read: ["etag", "content-type"],
      expect: { status: 200, body: itemBody("17"), headers: { etag: null, "content-type": "application/json" }, preflight: "none", reachesOrigin: true },
    },
    {
      name: "`*` origin and `*` headers: any origin, any custom header, one-byte Allow-Headers",
      page: "anything.test",
      worker: "anyOrigin",
      path: "/items/18",
      init: { headers: { "x-anything": "1", "x-else": "2" } },
      expect: { status: 200, body: itemBody("18"), preflight: 204, reachesOrigin: true },
    },
    {
      name: "`*` in allowed headers never covers Authorization: the browser agrees and refuses",
      page: app,
      worker: "anyOrigin",
      path: "/items/19",
      init: { headers: { authorization: "Bearer x" } },
      expect: { preflight: 403, reachesOrigin: false },
    },
    {
      name: "a credentialed request from a disallowed origin: refused",
      page: "evil.test",
      worker: "allowList",
      path: "/items/20",
      init: { credentials: "include" },
      expect: { preflight: "none", reachesOrigin: true },
    },
    {
      name: "HEAD from an allowed origin: readable status, empty body",
      page: app,
      worker: "allowList",
      path: "/items/21",
      init: { method: "HEAD" },
      expect: { status: 200, body: (b) => b === "", preflight: "none", reachesOrigin: true },
    },
  ];
}

async function probe(page: Page, spec: ProbeSpec): Promise<ProbeResult> {
  return page.evaluate((s) => (globalThis as unknown as { probe(s: ProbeSpec): Promise<ProbeResult> }).probe(s), spec);
}

/** Runs every case in its own page (a fresh origin each time), then the whole-run assertions. */
export async function runBrowserCases(runner: Runner, browser: Browser, stack: Stack): Promise<void> {
  const context = await browser.newContext();
  const allSeen: SeenRequest[] = [];
  const cases = browserCases();
  for (const c of cases) {
    await runner.check(c.name, async () => {
      const page = await context.newPage();
      try {
        const network = await watchNetwork(page);
        await page.goto(`${stack.pageOrigin(c.page)}/`);
        const url = `${stack.workers[c.worker].apiUrl}${c.path}`;
        const relayBefore = stack.relay.requests.length;
        const result = await probe(page, { url, init: c.init, read: c.read });
        const seen = await network.settled(url);
        allSeen.push(...seen);

        if (c.expect.status === undefined) {
          expectEqual(result.ok, false, "the browser refuses the response (fetch rejects)");
        } else {
          expectTrue(result.ok, `the page can read the response (fetch resolved): ${JSON.stringify(result)}`);
          if (result.ok) {
            expectEqual(result.status, c.expect.status, "status the page reads");
            if (c.expect.body) expectTrue(c.expect.body(result.body), `body the page reads: ${JSON.stringify(result.body)}`);
            for (const [name, value] of Object.entries(c.expect.headers ?? {})) {
              const read = result.headers[name];
              if (value instanceof RegExp) expectTrue(read != null && value.test(read), `response header ${name} as the page reads it: ${read}`);
              else expectEqual(read, value, `response header ${name} as the page reads it`);
            }
          }
        }

        const preflights = seen.filter((r) => r.preflight);
        if (c.expect.preflight === "none") {
          expectEqual(preflights.length, 0, "preflights Chromium sent");
        } else {
          expectEqual(preflights.length, 1, "preflights Chromium sent");
          expectEqual(preflights[0]!.status, c.expect.preflight, "status Chromium got for its preflight");
          if (c.expect.preflight === 403) {
            const actual = seen.filter((r) => !r.preflight && r.status !== undefined);
            expectEqual(actual, [], "no actual request completed after a refused preflight");
          }
        }

        const reached = stack.relay.requests.slice(relayBefore).filter((r) => r.target.split("?")[0] === c.path);
        expectEqual(reached.length > 0, c.expect.reachesOrigin, `request for ${c.path} reached the origin`);
        expectEqual(
          reached.filter((r) => r.method === "OPTIONS"),
          [],
          "OPTIONS requests that reached the origin",
        );
      } finally {
        await page.close();
      }
    });
  }

  await runner.check("every preflight Chromium sent was answered at the edge: none reached the origin", async () => {
    const preflights = allSeen.filter((r) => r.preflight);
    const expected = cases.filter((c) => c.expect.preflight !== "none").length;
    expectEqual(preflights.length, expected, "preflights Chromium sent over the whole run");
    const atOrigin = stack.relay.requests.filter((r) => r.method !== "GET" && r.method !== "HEAD");
    expectEqual(atOrigin, [], "non-GET/HEAD requests in the origin's request log");
    const origins = new Set(preflights.map((r) => r.headers["origin"]));
    expectTrue(origins.size >= 4, `preflights came from several page origins: ${[...origins].join(", ")}`);
    process.stdout.write(
      `      (${preflights.length} preflights from ${origins.size} page origins; the origin saw ${stack.relay.requests.length} requests, all GET/HEAD)\n`,
    );
  });

  await context.close();
}
