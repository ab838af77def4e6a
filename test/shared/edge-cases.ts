// One table of edge behaviour, run against both deployments: the Worker (test/edge/shared-cases.test.ts,
// through callEdge) and the built Snippet (test/edge/snippet.test.ts, dist/test/snippet-*.js inside workerd).
// Pure data: the Node-side test setup imports it to bake each policy into a Snippet build.
import type { EdgeVars } from "../../src/edge/config/edge-vars.ts";
import type { Scenario } from "../support/fake-origin-protocol.ts";

/**
 * The policies the table uses. Kept few on purpose: the Snippet bakes its configuration, so each one is a
 * separate Snippet build. ORIGIN_URL is not here: the Worker gets the fake origin's URL per test, the
 * Snippet continues to "the zone's origin" (routed to the same fake origin by the test harness).
 */
export const EDGE_POLICIES = {
  /** An allow-list with a subdomain pattern, a non-safelisted method, and no credentials. */
  allowList: {
    CORS_ALLOW_ORIGINS: "https://app.example.com,https://*.preview.example.com",
    CORS_ALLOW_METHODS: "GET,HEAD,PUT,PATCH",
    CORS_ALLOW_HEADERS: "content-type,x-request-id,authorization",
    CORS_EXPOSE_HEADERS: "etag",
  },
  /** Credentials, max-age, Private Network Access, a literal `*` header name, and the origin token. */
  credentialed: {
    CORS_ALLOW_ORIGINS: "https://app.example.com",
    CORS_ALLOW_METHODS: "GET,HEAD",
    CORS_ALLOW_HEADERS: "authorization,*",
    CORS_EXPOSE_HEADERS: "etag",
    CORS_ALLOW_CREDENTIALS: "true",
    CORS_MAX_AGE: "7200",
    CORS_ALLOW_PRIVATE_NETWORK: "true",
    ORIGIN_TOKEN: "shared-cases-origin-token",
  },
  /** `*` everywhere it is allowed: any origin, method and header (never authorization). */
  anyOrigin: {
    CORS_ALLOW_ORIGINS: "*",
    CORS_ALLOW_METHODS: "*",
    CORS_ALLOW_HEADERS: "*",
    CORS_EXPOSE_HEADERS: "etag",
  },
  /** No CORS_* set: CORS off, internal headers and routing still apply. */
  off: {},
} as const satisfies Record<string, EdgeVars>;

export type PolicyName = keyof typeof EDGE_POLICIES;

export interface EdgeCaseRequest {
  /** Default GET. */
  method?: string;
  /** Path and query, sent to the edge's own host. */
  path: string;
  headers?: Record<string, string>;
}

/** What reached the origin: exactly one request with this method and path (query included). */
export interface Forwarded {
  method: "GET" | "HEAD";
  path: string;
  /** Header name (lowercase) → its one expected value, or null for "not sent at all". */
  headers?: Record<string, string | null>;
}

export interface EdgeCase {
  name: string;
  policy: PolicyName;
  request: EdgeCaseRequest;
  /** How the origin answers; default: the fake origin's 200, `ETag: "v1"`, `{"id":"1"}`. */
  origin?: Scenario;
  expect: {
    status: number;
    /** Every `access-control-*` and `vary` header of the response, exactly: {} means none at all. */
    cors: Record<string, string>;
    /** Other response headers: a value, or null for "absent". */
    headers?: Record<string, string | null>;
    /** The whole body as text ("" for none). */
    body: string;
    /** false: nothing reached the origin. */
    forwarded: false | Forwarded;
  };
}

const APP = "https://app.example.com";
const EVIL = "https://evil.example.net";
const ITEM = '{"id":"1"}';
const BAD_ID = "bad item id: use 1-128 characters of A-Z a-z 0-9 _ -\n";
const GET_ITEM: Forwarded = { method: "GET", path: "/items/1" };
/** What an allowed Origin gets on an actual response under the allow-list policy. */
const ALLOWED = { "access-control-allow-origin": APP, "access-control-expose-headers": "etag", vary: "origin" };
/** The same for an answer without an ETag: no exposed name it does not carry. */
const ALLOWED_NO_ETAG = { "access-control-allow-origin": APP, vary: "origin" };
const preflight = (origin: string, method: string, more: Record<string, string> = {}) => ({
  origin,
  "access-control-request-method": method,
  ...more,
});
const refused = { status: 403, cors: {}, body: "", forwarded: false } as const;

export const EDGE_CASES: readonly EdgeCase[] = [
  // --- preflights: answered at the edge, never forwarded -------------------------------------------------
  {
    name: "preflight: PUT with two requested headers gets exactly what the browser needs",
    policy: "allowList",
    request: { method: "OPTIONS", path: "/items/1", headers: preflight(APP, "PUT", { "access-control-request-headers": "content-type,x-request-id" }) },
    expect: {
      status: 204,
      cors: { "access-control-allow-origin": APP, "access-control-allow-methods": "PUT", "access-control-allow-headers": "content-type,x-request-id" },
      body: "",
      forwarded: false,
    },
  },
  {
    name: "preflight: a safelisted method and no requested headers get Allow-Origin alone, no Vary",
    policy: "allowList",
    request: { method: "OPTIONS", path: "/items/1", headers: preflight(APP, "GET") },
    expect: { status: 204, cors: { "access-control-allow-origin": APP }, body: "", forwarded: false },
  },
  {
    name: "preflight: a subdomain matching the pattern is echoed",
    policy: "allowList",
    request: { method: "OPTIONS", path: "/items/1", headers: preflight("https://pr-7.preview.example.com", "GET") },
    expect: { status: 204, cors: { "access-control-allow-origin": "https://pr-7.preview.example.com" }, body: "", forwarded: false },
  },
  {
    name: "preflight: the pattern never matches the apex",
    policy: "allowList",
    request: { method: "OPTIONS", path: "/items/1", headers: preflight("https://preview.example.com", "GET") },
    expect: refused,
  },
  {
    name: "preflight: answered for any path, not only item paths",
    policy: "allowList",
    request: { method: "OPTIONS", path: "/anything/else?x=1", headers: preflight(APP, "GET") },
    expect: { status: 204, cors: { "access-control-allow-origin": APP }, body: "", forwarded: false },
  },
  {
    name: "preflight: a disallowed origin gets 403 with no CORS headers",
    policy: "allowList",
    request: { method: "OPTIONS", path: "/items/1", headers: preflight(EVIL, "GET") },
    expect: refused,
  },
  {
    name: "preflight: the literal null origin is refused unless listed",
    policy: "allowList",
    request: { method: "OPTIONS", path: "/items/1", headers: preflight("null", "GET") },
    expect: refused,
  },
  {
    name: "preflight: every preflight is refused when CORS is off",
    policy: "off",
    request: { method: "OPTIONS", path: "/items/1", headers: preflight(APP, "GET") },
    expect: refused,
  },
  {
    name: "preflight: a method not in the list is refused",
    policy: "allowList",
    request: { method: "OPTIONS", path: "/items/1", headers: preflight(APP, "DELETE") },
    expect: refused,
  },
  {
    name: "preflight: methods match byte for byte (patch is not PATCH)",
    policy: "allowList",
    request: { method: "OPTIONS", path: "/items/1", headers: preflight(APP, "patch") },
    expect: refused,
  },
  {
    name: "preflight: PATCH as listed is echoed",
    policy: "allowList",
    request: { method: "OPTIONS", path: "/items/1", headers: preflight(APP, "PATCH") },
    expect: { status: 204, cors: { "access-control-allow-origin": APP, "access-control-allow-methods": "PATCH" }, body: "", forwarded: false },
  },
  {
    name: "preflight: one requested header not allowed refuses the whole preflight",
    policy: "allowList",
    request: { method: "OPTIONS", path: "/items/1", headers: preflight(APP, "GET", { "access-control-request-headers": "content-type,x-secret" }) },
    expect: refused,
  },
  {
    name: "preflight: requested names compare case-insensitively and are echoed once, lowercase",
    policy: "allowList",
    request: {
      method: "OPTIONS",
      path: "/items/1",
      headers: preflight(APP, "GET", { "access-control-request-headers": "X-Request-ID, content-type ,x-request-id" }),
    },
    expect: { status: 204, cors: { "access-control-allow-origin": APP, "access-control-allow-headers": "x-request-id,content-type" }, body: "", forwarded: false },
  },
  {
    name: "preflight: * allows any header with a one-byte answer, and any method",
    policy: "anyOrigin",
    request: { method: "OPTIONS", path: "/items/1", headers: preflight("https://x.example.org", "DELETE", { "access-control-request-headers": "x-anything,x-else" }) },
    expect: {
      status: 204,
      cors: { "access-control-allow-origin": "*", "access-control-allow-methods": "DELETE", "access-control-allow-headers": "*" },
      body: "",
      forwarded: false,
    },
  },
  {
    name: "preflight: * in allowed headers never covers authorization",
    policy: "anyOrigin",
    request: { method: "OPTIONS", path: "/items/1", headers: preflight("https://x.example.org", "GET", { "access-control-request-headers": "authorization" }) },
    expect: refused,
  },
  {
    name: "preflight: * is a literal header name when credentials are on",
    policy: "credentialed",
    request: { method: "OPTIONS", path: "/items/1", headers: preflight(APP, "GET", { "access-control-request-headers": "x-anything" }) },
    expect: refused,
  },
  {
    name: "preflight: credentials and max-age when configured, PNA only when asked",
    policy: "credentialed",
    request: { method: "OPTIONS", path: "/items/1", headers: preflight(APP, "GET", { "access-control-request-headers": "authorization" }) },
    expect: {
      status: 204,
      cors: {
        "access-control-allow-origin": APP,
        "access-control-allow-credentials": "true",
        "access-control-allow-headers": "authorization",
        "access-control-max-age": "7200",
      },
      body: "",
      forwarded: false,
    },
  },
  {
    name: "preflight: Private Network Access answered when configured and asked for",
    policy: "credentialed",
    request: { method: "OPTIONS", path: "/items/1", headers: preflight(APP, "GET", { "access-control-request-private-network": "true" }) },
    expect: {
      status: 204,
      cors: {
        "access-control-allow-origin": APP,
        "access-control-allow-credentials": "true",
        "access-control-max-age": "7200",
        "access-control-allow-private-network": "true",
      },
      body: "",
      forwarded: false,
    },
  },
  {
    name: "preflight: Private Network Access refused when not configured",
    policy: "allowList",
    request: { method: "OPTIONS", path: "/items/1", headers: preflight(APP, "GET", { "access-control-request-private-network": "true" }) },
    expect: refused,
  },
  {
    name: "not a preflight: OPTIONS without Access-Control-Request-Method is 405 with Allow, decorated",
    policy: "allowList",
    request: { method: "OPTIONS", path: "/items/1", headers: { origin: APP } },
    expect: { status: 405, cors: ALLOWED_NO_ETAG, headers: { allow: "GET, HEAD" }, body: "method not allowed: use GET or HEAD\n", forwarded: false },
  },
  {
    name: "not a preflight: OPTIONS without Origin is 405",
    policy: "allowList",
    request: { method: "OPTIONS", path: "/items/1", headers: { "access-control-request-method": "GET" } },
    expect: { status: 405, cors: { vary: "origin" }, headers: { allow: "GET, HEAD" }, body: "method not allowed: use GET or HEAD\n", forwarded: false },
  },

  // --- actual responses: the edge's CORS is the only CORS -------------------------------------------------
  {
    name: "GET: an allowed origin gets its origin, exposed headers and Vary",
    policy: "allowList",
    request: { path: "/items/1", headers: { origin: APP } },
    expect: { status: 200, cors: ALLOWED, headers: { etag: '"v1"', "content-type": "application/json" }, body: ITEM, forwarded: GET_ITEM },
  },
  {
    name: "GET: no Origin gets only Vary under an allow-list",
    policy: "allowList",
    request: { path: "/items/1" },
    expect: { status: 200, cors: { vary: "origin" }, body: ITEM, forwarded: GET_ITEM },
  },
  {
    name: "GET: a disallowed origin gets only Vary",
    policy: "allowList",
    request: { path: "/items/1", headers: { origin: EVIL } },
    expect: { status: 200, cors: { vary: "origin" }, body: ITEM, forwarded: GET_ITEM },
  },
  {
    name: "GET: an uppercase Origin is not the listed origin",
    policy: "allowList",
    request: { path: "/items/1", headers: { origin: "https://APP.example.com" } },
    expect: { status: 200, cors: { vary: "origin" }, body: ITEM, forwarded: GET_ITEM },
  },
  {
    name: "GET: credentials go to an allowed origin, with the origin token to the origin",
    policy: "credentialed",
    request: { path: "/items/1", headers: { origin: APP } },
    expect: {
      status: 200,
      cors: { ...ALLOWED, "access-control-allow-credentials": "true" },
      body: ITEM,
      forwarded: { ...GET_ITEM, headers: { "x-origin-token": "shared-cases-origin-token" } },
    },
  },
  {
    name: "GET: credentials never leak to a disallowed origin",
    policy: "credentialed",
    request: { path: "/items/1", headers: { origin: EVIL } },
    expect: { status: 200, cors: { vary: "origin" }, body: ITEM, forwarded: GET_ITEM },
  },
  {
    name: "GET: * answers * with exposed headers and no Vary",
    policy: "anyOrigin",
    request: { path: "/items/1", headers: { origin: "https://x.example.org" } },
    expect: { status: 200, cors: { "access-control-allow-origin": "*", "access-control-expose-headers": "etag" }, body: ITEM, forwarded: GET_ITEM },
  },
  {
    name: "GET: nothing added when CORS is off",
    policy: "off",
    request: { path: "/items/1", headers: { origin: APP } },
    expect: { status: 200, cors: {}, body: ITEM, forwarded: GET_ITEM },
  },
  {
    name: "GET: the origin's own Access-Control-* are removed under an allow-list",
    policy: "allowList",
    request: { path: "/items/1", headers: { origin: EVIL } },
    origin: {
      headers: [
        ["Access-Control-Allow-Origin", "*"],
        ["Access-Control-Allow-Credentials", "true"],
        ["Access-Control-Allow-Methods", "GET, PUT, POST, DELETE, PATCH, OPTIONS"],
        ["ETag", '"v1"'],
      ],
      body: ITEM,
    },
    expect: { status: 200, cors: { vary: "origin" }, headers: { etag: '"v1"' }, body: ITEM, forwarded: GET_ITEM },
  },
  {
    name: "GET: the origin's own Access-Control-* are removed when CORS is off",
    policy: "off",
    request: { path: "/items/1", headers: { origin: EVIL } },
    origin: { headers: [["Access-Control-Allow-Origin", "*"], ["Access-Control-Expose-Headers", "*"]], body: ITEM },
    expect: { status: 200, cors: {}, body: ITEM, forwarded: GET_ITEM },
  },
  {
    name: "GET: origin is merged into the origin's Vary",
    policy: "allowList",
    request: { path: "/items/1", headers: { origin: APP } },
    origin: { headers: [["Vary", "Accept-Encoding"]], body: ITEM },
    expect: { status: 200, cors: { ...ALLOWED_NO_ETAG, vary: "Accept-Encoding, origin" }, body: ITEM, forwarded: GET_ITEM },
  },
  {
    name: "GET: an origin's Vary that already names Origin is kept as is",
    policy: "allowList",
    request: { path: "/items/1", headers: { origin: APP } },
    origin: { headers: [["Vary", "Accept-Encoding, Origin"]], body: ITEM },
    expect: { status: 200, cors: { ...ALLOWED_NO_ETAG, vary: "Accept-Encoding, Origin" }, body: ITEM, forwarded: GET_ITEM },
  },
  {
    name: "GET: Vary * stays *",
    policy: "allowList",
    request: { path: "/items/1", headers: { origin: APP } },
    origin: { headers: [["Vary", "*"]], body: ITEM },
    expect: { status: 200, cors: { ...ALLOWED_NO_ETAG, vary: "*" }, body: ITEM, forwarded: GET_ITEM },
  },

  // --- internal headers, both ways ------------------------------------------------------------------------
  {
    name: "internal request headers are stripped; authorization and conditionals pass; a forged token is dropped",
    policy: "allowList",
    request: {
      path: "/items/1",
      headers: {
        "x-forwarded-for": "6.6.6.6",
        "x-internal-user": "admin",
        traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "x-http-method-override": "DELETE",
        "x-origin-token": "forged",
        authorization: "Bearer user-token",
        "if-none-match": '"v0"',
      },
    },
    expect: {
      status: 200,
      cors: { vary: "origin" },
      body: ITEM,
      forwarded: {
        ...GET_ITEM,
        headers: {
          "x-forwarded-for": null,
          "x-internal-user": null,
          traceparent: null,
          "x-http-method-override": null,
          "x-origin-token": null,
          authorization: "Bearer user-token",
          "if-none-match": '"v0"',
        },
      },
    },
  },
  {
    name: "a client-sent x-origin-token is replaced by the configured one",
    policy: "credentialed",
    request: { path: "/items/1", headers: { "x-origin-token": "forged" } },
    expect: { status: 200, cors: { vary: "origin" }, body: ITEM, forwarded: { ...GET_ITEM, headers: { "x-origin-token": "shared-cases-origin-token" } } },
  },
  {
    name: "internal response headers are stripped; ETag and Cache-Control stay",
    policy: "allowList",
    request: { path: "/items/1", headers: { origin: APP } },
    origin: {
      headers: [
        ["ETag", '"v1"'],
        ["Cache-Control", "max-age=60"],
        ["Server", "nginx/1.25.3"],
        ["X-Powered-By", "Express"],
        ["X-Internal-Debug", "cache=miss shard=3"],
        ["X-Envoy-Upstream-Service-Time", "4"],
        ["X-Origin-Token", "echoed-secret"],
        ["Server-Timing", "db;dur=2"],
      ],
      body: ITEM,
    },
    expect: {
      status: 200,
      cors: ALLOWED,
      headers: {
        etag: '"v1"',
        "cache-control": "max-age=60",
        server: null,
        "x-powered-by": null,
        "x-internal-debug": null,
        "x-envoy-upstream-service-time": null,
        "x-origin-token": null,
        "server-timing": null,
      },
      body: ITEM,
      forwarded: GET_ITEM,
    },
  },

  // --- item proxy -------------------------------------------------------------------------------------------
  {
    name: "conditional GET: If-None-Match reaches the origin and its 304 passes through",
    policy: "allowList",
    request: { path: "/items/1", headers: { origin: APP, "if-none-match": '"v1"' } },
    origin: { status: 304, headers: [["ETag", '"v1"']], body: "" },
    expect: { status: 304, cors: ALLOWED, headers: { etag: '"v1"' }, body: "", forwarded: { ...GET_ITEM, headers: { "if-none-match": '"v1"' } } },
  },
  {
    name: "the query string is not forwarded",
    policy: "off",
    request: { path: "/items/abc_1-Z?cachebust=1&x=y" },
    expect: { status: 200, cors: {}, body: ITEM, forwarded: { method: "GET", path: "/items/abc_1-Z" } },
  },
  {
    name: "a 128-character id is forwarded",
    policy: "off",
    request: { path: `/items/${"x".repeat(128)}` },
    expect: { status: 200, cors: {}, body: ITEM, forwarded: { method: "GET", path: `/items/${"x".repeat(128)}` } },
  },
  {
    name: "HEAD is forwarded as HEAD and answered without a body",
    policy: "allowList",
    request: { method: "HEAD", path: "/items/1", headers: { origin: APP } },
    expect: { status: 200, cors: ALLOWED, headers: { etag: '"v1"' }, body: "", forwarded: { method: "HEAD", path: "/items/1" } },
  },
  {
    name: "HEAD with a bad id is 400 without a body",
    policy: "allowList",
    request: { method: "HEAD", path: "/items/a.b" },
    expect: { status: 400, cors: { vary: "origin" }, body: "", forwarded: false },
  },
  ...["a.b", "a%2Fb", "a%2e%2e", "a%00", "%C3%A9", "a%20b", "1/2", "", "x".repeat(129)].map(
    (id): EdgeCase => ({
      name: `a bad id (${id.length > 20 ? `${id.length} characters` : JSON.stringify(id)}) is 400 at the edge, decorated`,
      policy: "allowList",
      request: { path: `/items/${id}`, headers: { origin: APP } },
      expect: { status: 400, cors: ALLOWED_NO_ETAG, body: BAD_ID, forwarded: false },
    }),
  ),
  ...["POST", "PUT", "DELETE", "PATCH", "patch"].map(
    (method): EdgeCase => ({
      name: `${method} on an item path is 405 with Allow, decorated`,
      policy: "allowList",
      request: { method, path: "/items/1", headers: { origin: APP } },
      expect: { status: 405, cors: ALLOWED_NO_ETAG, headers: { allow: "GET, HEAD" }, body: "method not allowed: use GET or HEAD\n", forwarded: false },
    }),
  ),
  ...["/", "/items", "/item/1", "/items-1", "/ITEMS/1", "/admin", "/items/.."].map(
    (path): EdgeCase => ({
      name: `${path} is 404 at the edge`,
      policy: "allowList",
      request: { path, headers: { origin: APP } },
      expect: { status: 404, cors: ALLOWED_NO_ETAG, body: "not found\n", forwarded: false },
    }),
  ),
  {
    name: "an origin error status is kept and decorated",
    policy: "allowList",
    request: { path: "/items/1", headers: { origin: APP } },
    origin: { status: 503, headers: [["Retry-After", "5"]], body: "down" },
    expect: { status: 503, cors: ALLOWED_NO_ETAG, headers: { "retry-after": "5" }, body: "down", forwarded: GET_ITEM },
  },
  {
    name: "an origin 404 is kept and decorated",
    policy: "credentialed",
    request: { path: "/items/404", headers: { origin: APP } },
    origin: { status: 404, body: "" },
    expect: {
      status: 404,
      cors: { ...ALLOWED, "access-control-allow-credentials": "true" },
      body: "",
      forwarded: { method: "GET", path: "/items/404", headers: { "x-origin-token": "shared-cases-origin-token" } },
    },
  },
  {
    name: "an origin redirect is passed on, not followed",
    policy: "off",
    request: { path: "/items/old" },
    origin: { status: 301, headers: [["Location", "/items/new"]], body: "" },
    expect: { status: 301, cors: {}, headers: { location: "/items/new" }, body: "", forwarded: { method: "GET", path: "/items/old" } },
  },
];
