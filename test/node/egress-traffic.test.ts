// The egress meter's traffic inputs: mix files and access logs are validated with errors that name the
// field or the line, the default mix loads, and generation is deterministic and follows the shares.
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { parseAccessLog } from "../../bench/egress/access-log.ts";
import { parseArgs, ArgsError } from "../../bench/egress/args.ts";
import { InputError } from "../../bench/egress/input-error.ts";
import { jsonErrorOffset } from "../../bench/egress/json-position.ts";
import { loadMix, parseMix } from "../../bench/egress/mix.ts";
import { generateTraffic } from "../../bench/egress/mix-traffic.ts";
import { DEFAULT_EDGE_START, edgeStartsOf, PREFILL_CLIENT, prefillEvents } from "../../bench/egress/prefill.ts";
import { Zipf } from "../../bench/lib/random.ts";
import { countRequests, itemBody, markFirstReads, type EdgeRequest, type TrafficEvent } from "../../bench/egress/traffic.ts";
import { sampleItem } from "../../src/origin/store/sample-items.ts";

const DEFAULT_MIX = resolve(import.meta.dirname, "../../bench/egress/mix.default.json");

function problemsOf(run: () => unknown): string[] {
  try {
    run();
  } catch (error) {
    if (error instanceof InputError) return [...error.problems];
    throw error;
  }
  throw new Error("expected an InputError");
}

describe("mix files", () => {
  it("loads the default mix", () => {
    const mix = loadMix(DEFAULT_MIX);
    expect(mix.requests).toBeGreaterThanOrEqual(10_000);
    expect(mix.shares.preflight + mix.shares.missing + mix.shares.other).toBeLessThan(1);
    expect(mix.worker.vars["CORS_ALLOW_ORIGINS"]).toContain("https://app.example.com");
  });

  it("names the line and column of a JSON syntax error", () => {
    const [problem] = problemsOf(() => parseMix('{\n  "seed": 1,\n  "requests": ,\n}'));
    expect(problem).toMatch(/^not valid JSON: line 3, column 15: Unexpected token/);
    expect(jsonErrorOffset('{"a": [1, 2,]}')).toBe(12);
    expect(jsonErrorOffset('{"a": "x\\n\u00e9"}')).toBeUndefined();
    expect(jsonErrorOffset('{"a": "x\n"}')).toBe(8);
    expect(jsonErrorOffset('{"a": 1} x')).toBe(9);
    expect(jsonErrorOffset('{"a": tru}')).toBe(6);
  });

  it("names every bad field at once, with a suggestion for a typo", () => {
    const problems = problemsOf(() =>
      parseMix(
        JSON.stringify({
          requets: 10,
          items: { count: 0, zipfExponent: "high" },
          shares: { preflight: 0.7, missing: 0.2, other: 0.2 },
          clients: { revalidatingshare: 0.5 },
          origins: [{ origin: "https://app.example.com/path", weight: 1 }],
          worker: { vars: { ORIGIN_URL: "http://x", EDGE_CACHE_TTL: 10 } },
        }),
      ),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^requets is not a known field/),
        expect.stringMatching(/^items\.count must be a whole number from 1/),
        expect.stringMatching(/^items\.zipfExponent must be a number/),
        expect.stringMatching(/^shares: preflight \+ missing \+ other = 1\.1\d* is more than 1/),
        expect.stringMatching(/^clients\.revalidatingshare is not a known field \(did you mean revalidatingShare\?\)/),
        expect.stringMatching(/^origins\[0\]\.origin must be a scheme:\/\/host/),
        expect.stringMatching(/^worker\.vars\.ORIGIN_URL: the meter sets ORIGIN_URL itself/),
        expect.stringMatching(/^worker\.vars\.EDGE_CACHE_TTL must be a string .* write "10"/),
      ]),
    );
    expect(problems).toHaveLength(8);
  });

  it("refuses preflights without any browser origin", () => {
    const problems = problemsOf(() => parseMix(JSON.stringify({ origins: [{ origin: null, weight: 1 }], shares: { preflight: 0.1 } })));
    expect(problems.join()).toMatch(/no origin sends an Origin header/);
  });

  it("accepts $-prefixed keys as comments", () => {
    expect(parseMix(JSON.stringify({ $doc: "hello", items: { $why: "small", count: 5 } })).items.count).toBe(5);
  });
});

describe("traffic generation", () => {
  const mix = parseMix(
    JSON.stringify({
      seed: 7,
      requests: 20_000,
      warmupRequests: 1000,
      items: { count: 500, zipfExponent: 1 },
      clients: { count: 200, revalidatingShare: 1, revisitShare: 0.5 },
      shares: { preflight: 0.2, missing: 0.05, other: 0.05 },
      origins: [
        { origin: "https://app.example.com", weight: 3 },
        { origin: null, weight: 1 },
      ],
      writes: { perThousandRequests: 10 },
    }),
  );

  it("is deterministic in (mix, seed)", () => {
    const a = generateTraffic(mix, "a");
    const b = generateTraffic(mix, "b");
    expect(JSON.stringify(a.events)).toBe(JSON.stringify(b.events));
    const c = generateTraffic(mix, "c", { seed: 8 });
    expect(JSON.stringify(c.events)).not.toBe(JSON.stringify(a.events));
  });

  it("follows the shares, flags the warm-up and interleaves writes", () => {
    const traffic = generateTraffic(mix, "mix");
    const counts = countRequests(traffic.events);
    expect(counts).toMatchObject({ warmup: 1000, measured: 20_000 });
    expect(counts.writes).toBeGreaterThan(150);
    expect(counts.writes).toBeLessThan(270);
    const requests = traffic.events.filter((e): e is EdgeRequest => e.kind === "request" && !e.warmup);
    const share = (cls: string) => requests.filter((r) => r.class === cls).length / requests.length;
    expect(share("preflight")).toBeCloseTo(0.2, 1);
    expect(share("missing")).toBeCloseTo(0.05, 1);
    expect(share("other")).toBeCloseTo(0.05, 1);
    expect(share("revalidate")).toBeGreaterThan(0.1);
    for (const r of requests) {
      if (r.class === "preflight") {
        expect(r.method).toBe("OPTIONS");
        expect(r.headers.map(([n]) => n)).toEqual(["Origin", "Access-Control-Request-Method"]);
      }
      if (r.class === "missing") expect(Number(r.id)).toBeGreaterThan(500);
      if (r.class === "revalidate") expect(r.ifNoneMatch).toEqual({ prev: true });
      if (r.class === "read") expect(r.ifNoneMatch).toBeUndefined();
    }
  });

  it("uses the origin's own sample bodies for the initial items", () => {
    for (const n of [1, 42, 9999]) expect(itemBody(String(n), 0)).toBe(sampleItem(n));
    expect(itemBody("7", 3)).not.toBe(sampleItem(7));
    expect(itemBody("abc", 0, 500)).toHaveLength(500);
  });

  it("samples Zipf ranks with the right weights", () => {
    const zipf = new Zipf(100, 1);
    expect(zipf.p(0) / zipf.p(1)).toBeCloseTo(2, 6);
    expect(zipf.sample(0)).toBe(0);
    expect(zipf.sample(0.999999)).toBe(99);
  });
});

describe("access logs", () => {
  const options = { warmupRequests: 1, concurrency: 4, ratePerSecond: 0, workerVars: {} };

  it("reads text and JSON lines, classifies, seeds the items reads mention", () => {
    const traffic = parseAccessLog(
      [
        "# a comment",
        "GET /items/a origin=https://app.example.com client=u1",
        "",
        "OPTIONS /items/a origin=https://app.example.com acrh=x-client-version",
        'GET /items/a client=u1 inm=prev',
        '{"method":"GET","path":"/items/b","inm":"W/\\"v1\\"","size":300}',
        "GET /items/gone status=404",
        "PUT /items/a",
        "GET /favicon.ico",
      ].join("\n"),
      "log test",
      options,
    );
    const requests = traffic.events.filter((e): e is EdgeRequest => e.kind === "request");
    expect(requests.map((r) => r.class)).toEqual(["read", "preflight", "revalidate", "revalidate", "missing", "other"]);
    expect(requests[0]!.warmup).toBe(true);
    expect(requests[1]!.headers).toEqual([
      ["Origin", "https://app.example.com"],
      ["Access-Control-Request-Method", "GET"],
      ["Access-Control-Request-Headers", "x-client-version"],
    ]);
    expect(requests[3]!.ifNoneMatch).toEqual({ value: 'W/"v1"' });
    expect(traffic.events.filter((e) => e.kind === "write")).toHaveLength(1);
    expect(traffic.items.kind).toBe("explicit");
    if (traffic.items.kind === "explicit") {
      expect([...traffic.items.bodies.keys()].sort()).toEqual(["a", "b"]);
      expect(traffic.items.bodies.get("b")).toHaveLength(300);
    }
  });

  it("names the line of every bad entry", () => {
    const problems = problemsOf(() =>
      parseAccessLog(
        [
          "GET /items/1",
          "get /items/1",
          "GET items/1",
          "GET /items/1 orign=https://a.example",
          "GET /items/1 inm=v1",
          "{not json",
          '{"method":"GET","path":"/x","extra":1}',
          "PUT /other",
          "GET /items/1 origin=https://a.example/x size=big",
        ].join("\n"),
        "log bad.log",
        options,
      ),
    );
    expect(problems).toEqual([
      expect.stringMatching(/^line 2: method "get" must be an upper-case HTTP method/),
      expect.stringMatching(/^line 3: path "items\/1" must start with "\/"/),
      expect.stringMatching(/^line 4: unknown key "orign"/),
      expect.stringMatching(/^line 5: inm v1 must be prev, \* or entity-tags/),
      expect.stringMatching(/^line 6: not valid JSON/),
      expect.stringMatching(/^line 7: unknown key "extra"/),
      expect.stringMatching(/^line 8: PUT is a write and must target \/items\/ID/),
      expect.stringMatching(/^line 9: origin "https:\/\/a.example\/x" must be scheme/),
      expect.stringMatching(/^line 9: size "big" must be a byte count/),
    ]);
  });

  it("refuses a log with no requests", () => {
    expect(problemsOf(() => parseAccessLog("# nothing\n\n", "log empty", options))).toEqual([expect.stringMatching(/no requests/)]);
  });
});

describe("command line", () => {
  it("parses values and refuses unknown or malformed options", () => {
    const args = parseArgs(["--requests", "5000", "--requests-per-day=2e9", "--usd-per-gb", "0.05", "--json", "out.json", "--check"]);
    expect(args).toMatchObject({ requests: 5000, requestsPerDay: 2e9, usdPerGb: 0.05, json: "out.json", check: true, mix: "bench/egress/mix.default.json" });
    expect(() => parseArgs(["--requests", "-3"])).toThrow(ArgsError);
    expect(() => parseArgs(["--usd-per-gb", "free"])).toThrow(/expected a number above 0/);
    expect(() => parseArgs(["--json"])).toThrow(/needs a value/);
    expect(() => parseArgs(["--fast"])).toThrow(/unknown option --fast/);
  });

  it("takes purge mode's plan, pro by default", () => {
    expect(parseArgs([]).purgePlan).toBe("pro");
    expect(parseArgs(["--purge-plan", "enterprise"]).purgePlan).toBe("enterprise");
    expect(() => parseArgs(["--purge-plan", "gold"])).toThrow(/--purge-plan gold: expected one of free, pro, business, enterprise/);
  });
});

describe("edge start (--edge-start) and the prefill", () => {
  it("starts warm by default, takes cold and both, and refuses anything else by name", () => {
    expect(DEFAULT_EDGE_START).toBe("warm");
    expect(parseArgs([]).edgeStart).toBe("warm");
    expect(parseArgs(["--edge-start", "cold"]).edgeStart).toBe("cold");
    expect(parseArgs(["--edge-start=both"]).edgeStart).toBe("both");
    expect(() => parseArgs(["--edge-start", "tepid"])).toThrow(ArgsError);
    expect(() => parseArgs(["--edge-start", "tepid"])).toThrow("--edge-start tepid: expected one of warm, cold, both");
    expect(() => parseArgs(["--edge-start"])).toThrow("--edge-start needs a value");
    expect(() => parseArgs(["--edge-start", "--check"])).toThrow("--edge-start needs a value");
    // Warm is the headline; both measures a cold pair after it.
    expect(edgeStartsOf("warm")).toEqual(["warm"]);
    expect(edgeStartsOf("cold")).toEqual(["cold"]);
    expect(edgeStartsOf("both")).toEqual(["warm", "cold"]);
  });

  it("reads every id the traffic reads once (existing or not, warm-up included), plainly, in first-read order", () => {
    const req = (method: string, id: string | undefined, cls: EdgeRequest["class"], warmup = false): EdgeRequest => ({
      kind: "request",
      method,
      path: id === undefined ? "/robots.txt" : `/items/${id}`,
      id,
      class: cls,
      client: "c1",
      ifNoneMatch: cls === "revalidate" ? { prev: true } : undefined,
      headers: [["Origin", "https://app.example.com"]],
      warmup,
    });
    const events: TrafficEvent[] = [
      req("OPTIONS", "9", "preflight", true),
      { kind: "write", method: "PUT", id: "8", body: "{}", warmup: true },
      req("GET", "3", "read", true),
      req("GET", "3", "revalidate"),
      req("GET", "10001", "missing"),
      req("HEAD", "4", "read"),
      req("GET", undefined, "other"),
      req("GET", "3", "read"),
    ];
    const prefill = prefillEvents(events);
    expect(prefill.map((e) => [e.method, e.path, e.class])).toEqual([
      ["GET", "/items/3", "read"],
      ["GET", "/items/10001", "missing"],
      ["GET", "/items/4", "read"],
    ]);
    for (const e of prefill) expect(e).toMatchObject({ client: PREFILL_CLIENT, ifNoneMatch: undefined, headers: [], warmup: true });
    expect(prefillEvents([])).toEqual([]);
  });

  it("covers exactly the ids the default mix reads, far fewer than its requests", () => {
    const traffic = generateTraffic(loadMix(DEFAULT_MIX), "mix default");
    const read = new Set(traffic.events.flatMap((e) => (e.kind === "request" && e.id !== undefined && e.method !== "OPTIONS" ? [e.id] : [])));
    const prefill = prefillEvents(traffic.events);
    expect(new Set(prefill.map((e) => e.id))).toEqual(read);
    expect(prefill.length).toBe(read.size);
    expect(prefill.length).toBeLessThan(countRequests(traffic.events).measured);
  });
});

describe("first reads", () => {
  it("marks the first GET/HEAD of each id (warm-up included), never a preflight or a write", () => {
    const req = (method: string, id: string | undefined, warmup = false): TrafficEvent => ({
      kind: "request",
      method,
      path: id === undefined ? "/" : `/items/${id}`,
      id,
      class: method === "OPTIONS" ? "preflight" : id === undefined ? "other" : "read",
      client: "c1",
      ifNoneMatch: undefined,
      headers: [],
      warmup,
    });
    const events: TrafficEvent[] = [
      req("OPTIONS", "1", true),
      { kind: "write", method: "PUT", id: "1", body: "{}", warmup: true },
      req("GET", "1", true),
      req("GET", "1"),
      req("HEAD", "2"),
      req("GET", "2"),
      req("GET", undefined),
    ];
    markFirstReads(events);
    expect(events.map((e) => (e.kind === "request" && e.firstRead === true ? 1 : 0))).toEqual([0, 0, 1, 0, 1, 0, 0]);
  });
});
