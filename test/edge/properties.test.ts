// Property-based tests (fast-check), inside workerd.
//   - The origin matcher never allows an origin outside the policy, for random policies of exact origins and
//     `*.` patterns, probed with random origins built around each configured entry (and allows every one
//     inside it). test/edge/origin-matcher.test.ts has the same property for one fixed pattern.
//   - A preflight's answer is a pure function of (policy, the request's Origin and Access-Control-Request-*
//     headers): same inputs, same answer; other headers, header-name case, call order and recompiling the
//     policy change nothing; and the answer is the one the Fetch standard's CORS check implies.
//   - The compiled internal-header lookup equals a Set: test/edge/internal-headers.test.ts
//     ("compiled lookup == Set + prefix rules"), not repeated here.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ConfigProblem } from "../../src/shared/config/config-error.ts";
import { withEdgeDefaults, type EdgeVars } from "../../src/edge/config/edge-vars.ts";
import { parseCors } from "../../src/edge/config/parse-cors.ts";
import { compileCorsPolicy, type CorsPolicy } from "../../src/edge/cors/cors-policy.ts";
import { answerPreflight, type HeaderSource } from "../../src/edge/cors/preflight.ts";
import { callEdge, fakeOrigin } from "./support/edge.ts";

// --- policies -------------------------------------------------------------------------------------------

/** One configured origin entry, as data the oracle can read without the code under test. */
interface Entry {
  scheme: "http" | "https";
  /** Exact host, or for a pattern the domain under `*.`. */
  host: string;
  port: string;
  pattern: boolean;
}

const entryText = (e: Entry) => `${e.scheme}://${e.pattern ? "*." : ""}${e.host}${e.port ? `:${e.port}` : ""}`;

// A small alphabet so that random hosts overlap, nest and share suffixes (the interesting cases).
const LABELS = ["a", "b", "app", "api", "example", "ex-ample", "x1", "co", "preview", "internal"];
const TLDS = ["com", "net", "org", "io", "dev"];
const host = fc
  .tuple(fc.array(fc.constantFrom(...LABELS), { minLength: 1, maxLength: 3 }), fc.constantFrom(...TLDS))
  .map(([labels, tld]) => [...labels, tld].join("."));
const entry: fc.Arbitrary<Entry> = fc.record({
  scheme: fc.constantFrom("http" as const, "https" as const),
  host,
  port: fc.constantFrom("", "", "", "8080", "8443"),
  pattern: fc.boolean(),
});

interface Policy {
  entries: Entry[];
  nullOrigin: boolean;
  anyOrigin: boolean;
  methods: string[];
  anyMethod: boolean;
  headers: string[];
  /** `*` in CORS_ALLOW_HEADERS: any header but authorization without credentials, a literal `*` with them. */
  starHeader: boolean;
  anyHeader: boolean;
  credentials: boolean;
  maxAge: string;
  privateNetwork: boolean;
}

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "QUERY"];
const HEADER_NAMES = ["content-type", "x-request-id", "authorization", "x-api-key", "if-match", "x-a"];

const policyArb: fc.Arbitrary<Policy> = fc
  .record({
    entries: fc.uniqueArray(entry, { minLength: 1, maxLength: 5, selector: entryText }),
    nullOrigin: fc.boolean(),
    anyOrigin: fc.constantFrom(false, false, false, true),
    methods: fc.uniqueArray(fc.constantFrom(...METHODS), { maxLength: 4 }),
    anyMethod: fc.constantFrom(false, false, true),
    headers: fc.uniqueArray(fc.constantFrom(...HEADER_NAMES), { maxLength: 4 }),
    starHeader: fc.constantFrom(false, true),
    credentials: fc.boolean(),
    maxAge: fc.constantFrom("", "0", "600"),
    privateNetwork: fc.boolean(),
  })
  // Only what the config validation accepts: it refuses `*` origins, `null` and `*` methods with credentials
  // (varsOf never mixes `*` with other origins).
  .map((p) => ({
    ...p,
    anyOrigin: p.anyOrigin && !p.credentials,
    nullOrigin: p.nullOrigin && !p.credentials,
    anyMethod: p.anyMethod && !p.credentials,
    anyHeader: p.starHeader && !p.credentials,
  }));

function varsOf(p: Policy): EdgeVars {
  const origins = p.anyOrigin ? ["*"] : [...p.entries.map(entryText), ...(p.nullOrigin ? ["null"] : [])];
  return {
    CORS_ALLOW_ORIGINS: origins.join(","),
    CORS_ALLOW_METHODS: p.anyMethod ? "*" : p.methods.join(","),
    CORS_ALLOW_HEADERS: [...(p.starHeader ? ["*"] : []), ...p.headers].join(","),
    CORS_ALLOW_CREDENTIALS: String(p.credentials),
    CORS_MAX_AGE: p.maxAge,
    CORS_ALLOW_PRIVATE_NETWORK: String(p.privateNetwork),
  };
}

/** The policy as the worker compiles it; a credentialed wildcard over a public suffix is (rightly) refused. */
function compile(vars: EdgeVars): CorsPolicy {
  const problems: ConfigProblem[] = [];
  const policy = compileCorsPolicy(parseCors(withEdgeDefaults(vars), problems));
  const unexpected = problems.filter((problem) => !problem.message.includes("public suffix"));
  if (unexpected.length > 0) throw new Error(`generated an invalid policy ${JSON.stringify(vars)}: ${JSON.stringify(unexpected)}`);
  fc.pre(problems.length === 0);
  return policy;
}

// --- the oracle: what a policy allows, decided through the URL parser, not through the matcher ----------------

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

function entryAllows(e: Entry, origin: string): boolean {
  if (!e.pattern) return origin === entryText(e);
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  // A browser's Origin is the URL's serialised origin; anything else (case, userinfo, path, default port,
  // IDN, trailing junk) is not what a browser sends and is never allowed.
  if (url.origin !== origin || url.protocol !== `${e.scheme}:` || url.port !== e.port) return false;
  if (!url.hostname.endsWith(`.${e.host}`)) return false;
  const labels = url.hostname.slice(0, -(e.host.length + 1)).split(".");
  return labels.length >= 1 && labels.every((label) => LABEL.test(label));
}

function oracleAllowsOrigin(p: Policy, origin: string): boolean {
  if (p.anyOrigin) return true;
  if (p.nullOrigin && origin === "null") return true;
  return p.entries.some((e) => entryAllows(e, origin));
}

/** Random origins built around the policy's entries: inside, just outside, and nowhere near. */
function originAround(p: Policy): fc.Arbitrary<string> {
  const near = fc
    .record({
      e: fc.constantFrom(...p.entries),
      scheme: fc.constantFrom("same", "same", "same", "http", "https", "HTTPS", "wss", ""),
      labels: fc.array(fc.constantFrom("a", "b1", "x-y", "", "-a", "a-", "A", "a_b", "xn--bcher-kva", "ä", "a".repeat(64), "a".repeat(63)), {
        maxLength: 3,
      }),
      sep: fc.constantFrom(".", ".", ".", "", "-", ".."),
      hostCase: fc.constantFrom("same", "same", "upper", "drop-first-label", "extra-suffix"),
      port: fc.constantFrom("same", "same", "", ":443", ":80", ":8080", ":8443", ":", ":08080"),
      tail: fc.constantFrom("", "", "", ".", "/", "#", "?", "@evil.net", ".evil.net", " ", "/x"),
      userinfo: fc.constantFrom("", "", "", "user@", "a:b@"),
    })
    .map(({ e, scheme, labels, sep, hostCase, port, tail, userinfo }) => {
      let h = e.host;
      if (hostCase === "upper") h = h.toUpperCase();
      if (hostCase === "drop-first-label") h = h.split(".").slice(1).join(".");
      if (hostCase === "extra-suffix") h = `${h}.com`;
      const sub = labels.length > 0 ? `${labels.join(".")}${sep}` : "";
      const s = scheme === "same" ? `${e.scheme}://` : scheme === "" ? "//" : `${scheme}://`;
      const prt = port === "same" ? (e.port ? `:${e.port}` : "") : port;
      return `${s}${userinfo}${sub}${h}${prt}${tail}`;
    });
  return fc.oneof(
    { weight: 8, arbitrary: near },
    { weight: 1, arbitrary: fc.constantFrom(...p.entries.map(entryText), "null", "*", "") },
    { weight: 1, arbitrary: fc.stringMatching(/^[\x20-\x7e]{0,30}$/) },
  );
}

describe("origin matcher, random policies", () => {
  it("never allows an origin outside the policy, and allows every origin inside it", () => {
    let inside = 0;
    let total = 0;
    fc.assert(
      fc.property(
        policyArb.chain((p) => fc.tuple(fc.constant(p), fc.array(originAround(p), { minLength: 20, maxLength: 40 }))),
        ([p, origins]) => {
          const policy = compile(varsOf(p));
          for (const origin of origins) {
            const expected = oracleAllowsOrigin(p, origin);
            const got = policy.allowsOrigin(origin);
            if (got && !expected) throw new Error(`allowed ${JSON.stringify(origin)} outside ${varsOf(p).CORS_ALLOW_ORIGINS}`);
            if (!got && expected) throw new Error(`refused ${JSON.stringify(origin)} inside ${varsOf(p).CORS_ALLOW_ORIGINS}`);
            total++;
            if (expected) inside++;
          }
        },
      ),
      { numRuns: 1_500 },
    );
    // The generator must actually reach both sides of the boundary.
    expect(inside / total).toBeGreaterThan(0.05);
    expect(inside / total).toBeLessThan(0.95);
  });
});

// --- preflight purity -----------------------------------------------------------------------------------------

interface PreflightRequest {
  origin: string;
  method: string;
  requestHeaders: string | null;
  privateNetwork: string | null;
  /** Anything else a browser or an attacker might send along. */
  others: Array<[string, string]>;
}

const NOT_CORS_HEADER = fc
  .constantFrom("cookie", "authorization", "x-forwarded-for", "user-agent", "referer", "accept", "sec-fetch-mode", "x-origin-token", "vary", "access-control-allow-origin", "content-type", "host", "if-none-match", "x-random");
const headerValue = fc.stringMatching(/^[\x21-\x7e]([\x20-\x7e]{0,20}[\x21-\x7e])?$/);

function requestAround(p: Policy): fc.Arbitrary<PreflightRequest> {
  const anyNames = fc
    .array(fc.tuple(fc.constantFrom(...HEADER_NAMES, "x-other", "Content-Type", "AUTHORIZATION", "", "bad name", "*"), fc.constantFrom("", " ", "\t")), {
      maxLength: 5,
    })
    .map((items) => items.map(([name, ws]) => `${ws}${name}${ws}`).join(","));
  // Biased towards what the policy allows, so that both answers are common.
  const allowedNames = fc.subarray(p.headers).map((names) => names.join(", "));
  return fc.record({
    origin: fc.oneof({ weight: 1, arbitrary: originAround(p) }, { weight: 1, arbitrary: fc.constantFrom(...p.entries.filter((e) => !e.pattern).map(entryText), "null") }),
    method: fc.oneof(
      { weight: 2, arbitrary: fc.constantFrom("GET", ...p.methods) },
      { weight: 1, arbitrary: fc.constantFrom(...METHODS, "get", "patch", "G T", "", "*", "OPTIONS") },
    ),
    requestHeaders: fc.option(fc.oneof({ weight: 2, arbitrary: allowedNames }, { weight: 1, arbitrary: anyNames }), { nil: null }),
    privateNetwork: fc.option(fc.constantFrom("true", "false", "TRUE"), { nil: null, freq: 3 }),
    others: fc.array(fc.tuple(NOT_CORS_HEADER, headerValue), { maxLength: 4 }),
  });
}

function sourceOf(r: PreflightRequest, withOthers: boolean): HeaderSource {
  const headers = new Headers();
  if (withOthers) for (const [name, value] of r.others) headers.append(name, value);
  headers.set("Origin", r.origin.trim());
  headers.set("Access-Control-Request-Method", r.method);
  if (r.requestHeaders !== null) headers.set("Access-Control-Request-Headers", r.requestHeaders);
  if (r.privateNetwork !== null) headers.set("Access-Control-Request-Private-Network", r.privateNetwork);
  return headers;
}

/** The same request as a plain lowercase-keyed lookup (no Headers semantics at all). */
function plainSourceOf(r: PreflightRequest): HeaderSource {
  const h = sourceOf(r, false);
  const map = new Map<string, string>();
  for (const name of ["origin", "access-control-request-method", "access-control-request-headers", "access-control-request-private-network"]) {
    const value = h.get(name);
    if (value !== null) map.set(name, value);
  }
  return { get: (name) => map.get(name.toLowerCase()) ?? null };
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const SAFELISTED = new Set(["GET", "HEAD", "POST"]);

/** What the Fetch standard's CORS check implies for this policy and request: the headers, or null for 403. */
function expectedAnswer(p: Policy, r: PreflightRequest): Array<[string, string]> | null {
  const h = sourceOf(r, false);
  const origin = h.get("origin") ?? "";
  const method = h.get("access-control-request-method") ?? "";
  if (!oracleAllowsOrigin(p, origin)) return null;
  // Fetch never needs a safelisted method allowed, so a policy cannot refuse one.
  if (!TOKEN.test(method) || !(p.anyMethod || p.methods.includes(method) || SAFELISTED.has(method))) return null;
  const requested = h.get("access-control-request-headers");
  const names: string[] = [];
  if (requested !== null) {
    // RFC 9110 §5.6.1.2: empty members are skipped; OWS is spaces and tabs only.
    for (const raw of requested.split(",")) {
      const name = raw.replace(/^[ \t]+|[ \t]+$/g, "").toLowerCase();
      if (name === "") continue;
      const literalStar = name === "*" && p.starHeader && p.credentials;
      if (!TOKEN.test(name)) return null;
      if (!(p.headers.includes(name) || literalStar || (p.anyHeader && name !== "authorization"))) return null;
      if (!names.includes(name)) names.push(name);
    }
  }
  const pna = h.get("access-control-request-private-network") === "true";
  if (pna && !p.privateNetwork) return null;
  const out: Array<[string, string]> = [["Access-Control-Allow-Origin", p.anyOrigin ? "*" : origin]];
  if (p.credentials) out.push(["Access-Control-Allow-Credentials", "true"]);
  if (!SAFELISTED.has(method)) out.push(["Access-Control-Allow-Methods", method]);
  if (names.length > 0) out.push(["Access-Control-Allow-Headers", p.anyHeader && !names.includes("authorization") ? "*" : names.join(",")]);
  if (p.maxAge !== "") out.push(["Access-Control-Max-Age", p.maxAge]);
  if (pna) out.push(["Access-Control-Allow-Private-Network", "true"]);
  return out;
}

const answerOf = (policy: CorsPolicy, source: HeaderSource) => {
  const answer = answerPreflight(policy, source);
  return answer.allowed ? Object.entries(answer.headers) : null;
};

describe("preflight answers are a pure function of (policy, request headers)", () => {
  const scenario = policyArb.chain((p) => fc.tuple(fc.constant(p), fc.array(requestAround(p), { minLength: 5, maxLength: 15 })));

  it("same inputs give the same answer; other headers, name case, call order and recompiling change nothing", () => {
    fc.assert(
      fc.property(scenario, ([p, requests]) => {
        const vars = varsOf(p);
        const policy = compile(vars);
        const first = requests.map((r) => answerOf(policy, sourceOf(r, false)));
        // Reverse order, extra headers, a plain lookup instead of Headers, a second compilation of the same vars.
        const recompiled = compile({ ...vars });
        const reversed = [...requests].reverse().map((r) => answerOf(recompiled, sourceOf(r, true))).reverse();
        const plain = requests.map((r) => answerOf(policy, plainSourceOf(r)));
        const again = requests.map((r) => answerOf(policy, sourceOf(r, true)));
        expect(reversed).toEqual(first);
        expect(plain).toEqual(first);
        expect(again).toEqual(first);
      }),
      { numRuns: 1_000 },
    );
  });

  it("and it is the answer the CORS protocol implies (an independent oracle)", () => {
    let allowed = 0;
    let total = 0;
    fc.assert(
      fc.property(scenario, ([p, requests]) => {
        const policy = compile(varsOf(p));
        for (const r of requests) {
          const expected = expectedAnswer(p, r);
          expect(answerOf(policy, sourceOf(r, true)), JSON.stringify({ vars: varsOf(p), r })).toEqual(expected);
          total++;
          if (expected !== null) allowed++;
        }
      }),
      { numRuns: 1_000 },
    );
    expect(allowed / total).toBeGreaterThan(0.1);
  });

  it("the worker answers exactly that, at the edge, for random policies and requests", async () => {
    await fc.assert(
      fc.asyncProperty(
        policyArb.chain((p) => fc.tuple(fc.constant(p), requestAround(p))),
        async ([p, r]) => {
          compile(varsOf(p)); // skips the (rightly refused) credentialed wildcards over a public suffix
          const origin = await fakeOrigin();
          const headers = sourceOf(r, true) as Headers;
          const res = await callEdge({ ...varsOf(p), ORIGIN_URL: origin.url }, "/items/1", { method: "OPTIONS", headers });
          const expected = expectedAnswer(p, r);
          const cors = [...res.headers].filter(([name]) => name.startsWith("access-control-") || name === "vary");
          if (expected === null) {
            expect(res.status).toBe(403);
            expect(cors).toEqual([]);
          } else {
            expect(res.status).toBe(204);
            expect(cors.sort()).toEqual(expected.map(([k, v]) => [k.toLowerCase(), v]).sort());
          }
          expect(await origin.requests()).toEqual([]);
        },
      ),
      { numRuns: 60 },
    );
  });
});
