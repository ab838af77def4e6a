import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/shared/config/config-error.ts";
import { ORIGIN_VAR_DOCS } from "../../src/origin/config/origin-vars.ts";
import { configWarnings, parseOriginConfig } from "../../src/origin/config/parse-origin-config.ts";

const CWD = "/srv/app";
const parse = (env: Record<string, string>, argv: string[] = []) => parseOriginConfig(env, argv, CWD);
function problems(env: Record<string, string>, argv: string[] = []): string[] {
  try {
    parse(env, argv);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((p) => `${p.variable}: ${p.message}`);
    throw error;
  }
  throw new Error("expected a ConfigError");
}

describe("origin configuration", () => {
  it("has documented defaults", () => {
    expect(parse({})).toEqual({
      host: "127.0.0.1",
      port: 8788,
      database: { kind: "sqlite", path: "/srv/app/data/items.sqlite" },
      userTable: undefined,
      poolSize: 10,
      storeTimeoutMs: 1000,
      feedPollMs: 250,
      feedStaleBoundMs: 1000,
      token: undefined,
      maxItemBytes: 65536,
      cacheMaxBytes: 64 * 2 ** 20,
      idFilterCapacity: "auto",
      cacheTtlMs: 86_400_000,
      sendDate: false,
      reasonPhrase: true,
      fastPath: true,
      keepAliveTimeoutMs: 910_000,
      metricsHost: "127.0.0.1",
      metricsPort: 8789,
      purge: undefined,
      seedItems: 0,
      processes: 1,
    });
    const names = ORIGIN_VAR_DOCS.map((v) => v.name);
    for (const name of [
      "HOST", "PORT", "DATABASE_URL", "ORIGIN_TOKEN", "MAX_ITEM_BYTES", "CACHE_MAX_BYTES", "CACHE_TTL_SECONDS",
      "ORIGIN_SEND_DATE", "ORIGIN_REASON_PHRASE", "ORIGIN_FAST_PATH", "KEEP_ALIVE_TIMEOUT_SECONDS", "METRICS_HOST", "METRICS_PORT",
      "SEED_SAMPLE_ITEMS",
    ]) expect(names).toContain(name);
  });

  it("reads every var", () => {
    const c = parse({
      HOST: "0.0.0.0",
      PORT: "9000",
      DATABASE_URL: "sqlite:///var/lib/origin/items.db",
      ORIGIN_TOKEN: "abcdefghijklmnopqrstuvwxyz",
      MAX_ITEM_BYTES: "128KiB",
      CACHE_MAX_BYTES: "1GiB",
      CACHE_TTL_SECONDS: "2.5",
      ORIGIN_SEND_DATE: "true",
      ORIGIN_REASON_PHRASE: "false",
      ORIGIN_FAST_PATH: "false",
      KEEP_ALIVE_TIMEOUT_SECONDS: "1000",
      METRICS_HOST: "10.0.0.1",
      METRICS_PORT: "off",
      SEED_SAMPLE_ITEMS: "42",
    });
    expect(c).toMatchObject({
      host: "0.0.0.0",
      port: 9000,
      database: { kind: "sqlite", path: "/var/lib/origin/items.db" },
      token: "abcdefghijklmnopqrstuvwxyz",
      maxItemBytes: 131072,
      cacheMaxBytes: 2 ** 30,
      cacheTtlMs: 2500,
      sendDate: true,
      reasonPhrase: false,
      fastPath: false,
      keepAliveTimeoutMs: 1_000_000,
      metricsHost: "10.0.0.1",
      metricsPort: undefined,
      seedItems: 42,
    });
  });

  it.each([
    ["data/x.sqlite", "/srv/app/data/x.sqlite"],
    ["/abs/x.sqlite", "/abs/x.sqlite"],
    ["sqlite:./data/x.sqlite", "/srv/app/data/x.sqlite"],
    ["sqlite:data/x.sqlite", "/srv/app/data/x.sqlite"],
    ["sqlite:///abs/x.sqlite", "/abs/x.sqlite"],
    ["sqlite://localhost/abs/x.sqlite", "/abs/x.sqlite"],
    ["file:///abs/my%20items.sqlite", "/abs/my items.sqlite"],
    ["file:rel.sqlite", "/srv/app/rel.sqlite"],
  ])("DATABASE_URL=%s → %s", (url, path) => {
    expect(parse({ DATABASE_URL: url }).database).toEqual({ kind: "sqlite", path });
  });

  it("selects PostgreSQL for postgres:// URLs, and never echoes the password", () => {
    expect(parse({ DATABASE_URL: "postgres://u:secret@db:5432/items" }).database).toEqual({
      kind: "postgres",
      url: "postgres://u:secret@db:5432/items",
      display: "postgres://u:***@db:5432/items",
    });
    expect(parse({ DATABASE_URL: "postgresql://db/items" }).database).toMatchObject({ kind: "postgres" });
    // A password with a reserved character left as is: `@` still parses (the last one ends it), `/` does not.
    expect(parse({ DATABASE_URL: "postgres://u:se@cret@db:5432/items" }).database).toMatchObject({ display: "postgres://u:***@db:5432/items" });
    // A user with an unencoded @ (Azure's user@server), and a password passed as sslpassword.
    expect(parse({ DATABASE_URL: "postgres://me@corp:secret@corp.example.net/items" }).database).toMatchObject({ display: "postgres://me@corp:***@corp.example.net/items" });
    expect(parse({ DATABASE_URL: "postgres://u@db/items?sslpassword=secret" }).database).toMatchObject({ display: "postgres://u@db/items?sslpassword=***" });
    for (const [url, why] of [
      ["postgres://u:secret@db", /names no database/],
      ["postgres://u:secret@[/items", /is not a valid URL/],
      ["postgres://u:sec/ret@db/items", /is not a valid URL; .*percent-encoded \(@ as %40, \/ as %2F\)/],
      ["postgres:///items?user=u&password=secret", /names no host/],
      ["postgres:///items?host=/var/run/postgresql&user=u&password=secret", /names a Unix socket \(\?host=\/…\), .*connect over TCP/],
      ["sqlite://u:secret@dbhost/x.sqlite", /names a host \(u:\*\*\*@dbhost\)/],
      ["file://u:secret@host/x.sqlite", /is not a usable file: URL/],
    ] as const) {
      const [p] = problems({ DATABASE_URL: url });
      expect(p).toMatch(/^DATABASE_URL: /);
      expect(p).toMatch(why);
      expect(p).not.toMatch(/sec\/?ret/);
    }
  });

  it("reads booleans with the same grammar as the worker: true or false, nothing else", () => {
    for (const raw of ["1", "0", "yes", "TRUE"]) {
      expect(problems({ ORIGIN_SEND_DATE: raw })[0]).toBe(`ORIGIN_SEND_DATE: "${raw}" is not a boolean; write "true" or "false".`);
    }
    expect(parse({ ORIGIN_SEND_DATE: " true " }).sendDate).toBe(true);
  });

  it.each([
    ["PORT", "http", /^PORT: "http" is not a port/],
    ["PORT", "65536", /^PORT: .*0 to 65535/],
    ["METRICS_PORT", "on", /^METRICS_PORT: "on" is not a port; write a whole number from 0 to 65535, or "off" for no separate listener \(PORT serves \/metrics too\)\.$/],
    ["DATABASE_URL", "mysql://db/x", /^DATABASE_URL: .*unsupported scheme "mysql:"/],
    ["DATABASE_URL", "sqlite://dbhost/x.sqlite", /^DATABASE_URL: .*names a host \(dbhost\)/],
    ["DATABASE_URL", "sqlite:x.sqlite?mode=ro", /^DATABASE_URL: .*URL parameters/],
    ["DATABASE_URL", ":memory:", /^DATABASE_URL: .*not a file/],
    ["ORIGIN_TOKEN", "", /^ORIGIN_TOKEN: is set but empty/],
    ["ORIGIN_TOKEN", "has space", /^ORIGIN_TOKEN: must be printable ASCII/],
    ["ORIGIN_TOKEN", "change-me-to-a-long-random-secret", /^ORIGIN_TOKEN: is a placeholder from an example file: generate a secret/],
    ["DATABASE_URL", "file:///tmp/items.sqlite?mode=ro", /^DATABASE_URL: "file:\/\/\/tmp\/items\.sqlite\?mode=ro" has URL parameters, .*remove "\?…" and "#…"/],
    ["DATABASE_URL", "file:///tmp/items.sqlite#x", /^DATABASE_URL: .*has URL parameters/],
    ["MAX_ITEM_BYTES", "64 KB", /^MAX_ITEM_BYTES: .*not a size/],
    ["MAX_ITEM_BYTES", "0", /^MAX_ITEM_BYTES: .*out of range/],
    ["CACHE_MAX_BYTES", "lots", /^CACHE_MAX_BYTES: .*not a size/],
    ["CACHE_TTL_SECONDS", "5m", /^CACHE_TTL_SECONDS: .*not a duration/],
    ["KEEP_ALIVE_TIMEOUT_SECONDS", "0", /^KEEP_ALIVE_TIMEOUT_SECONDS: .*from 1 to/],
    ["ORIGIN_SEND_DATE", "yes", /^ORIGIN_SEND_DATE: "yes" is not a boolean; write "true" or "false"/],
    ["ORIGIN_REASON_PHRASE", "maybe", /^ORIGIN_REASON_PHRASE: /],
    ["SEED_SAMPLE_ITEMS", "many", /^SEED_SAMPLE_ITEMS: .*not a whole number of items/],
  ])("%s=%j is refused with a message naming it", (name, raw, message) => {
    const found = problems({ [name]: raw });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(message);
  });

  it.each([
    [{ DATABASE_URL: "postgres://u@db/items", FEED_POLL_MS: "1000", FEED_STALE_BOUND_MS: "1000" }, [], /^FEED_POLL_MS: 1000 must be below FEED_STALE_BOUND_MS \(1000\)/],
    [{ CLOUDFLARE_API_TOKEN: "t" }, [], /^CLOUDFLARE_ZONE_ID: is needed too: purge on change takes both/],
    [{}, ["--seed=abc"], /^--seed: "abc" is not a whole number of items from 0 to 100000000; write e\.g\. "1000"\.$/],
    [{ CLOUDFLARE_PURGE_RATE: "fast" }, [], /^CLOUDFLARE_PURGE_RATE: "fast" is not a rate; write calls per second as a positive number/],
    [{ CLOUDFLARE_PURGE_RATE: "0" }, [], /^CLOUDFLARE_PURGE_RATE: "0" is not a rate/],
    [{ CLOUDFLARE_PURGE_BURST: "0" }, [], /^CLOUDFLARE_PURGE_BURST: "0" is not a whole number of calls from 1 to 10000/],
    [{ DATABASE_URL: "sqlite:" }, [], /^DATABASE_URL: has no path: set it to a SQLite file/],
    [{ DATABASE_URL: "sqlite:x%zz.sqlite" }, [], /^DATABASE_URL: "sqlite:x%zz\.sqlite" has a broken %-escape: write the path plainly\.$/],
    [{ DATABASE_URL: "file://host/x.sqlite" }, [], /^DATABASE_URL: "file:\/\/host\/x\.sqlite" is not a usable file: URL .*use file:\/\/\/absolute\/path\.sqlite or a plain path\.$/],
    [{ DATABASE_URL: "x\u0000.sqlite" }, [], /^DATABASE_URL: .* is not a file: the origin needs a file/],
    [{ DATABASE_URL: "postgres://u@db/items", DATABASE_POOL_SIZE: "0" }, [], /^DATABASE_POOL_SIZE: "0" is not a whole number of connections from 1 to 1000/],
    [{ STORE_TIMEOUT_MS: "5" }, [], /^STORE_TIMEOUT_MS: "5" is not a whole number of milliseconds from 10 to 600000/],
  ] as [Record<string, string>, string[], RegExp][])("refuses %j %j, naming the variable and the fix", (env, argv, message) => {
    const found = problems(env, argv);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(message);
  });

  it("refuses the example environment file's token as it ships (scripts/origin-service/origin.env.example)", () => {
    const example = readFileSync(new URL("../../scripts/origin-service/origin.env.example", import.meta.url), "utf8");
    const token = /^ORIGIN_TOKEN=(.*)$/m.exec(example)?.[1];
    expect(token).toBeDefined();
    expect(problems({ ORIGIN_TOKEN: token! })).toEqual([expect.stringMatching(/^ORIGIN_TOKEN: is a placeholder from an example file/)]);
  });

  it("refuses a misspelt variable, naming the one meant; leaves other programs' variables alone", () => {
    const meant = (name: string, origin: string) => `${name}: is not a variable of the origin (did you mean ${origin}?): rename it, or unset it if it is another program's.`;
    // ORIGN_TOKEN would have served with no token check.
    expect(problems({ ORIGN_TOKEN: "abcdefghijklmnopqrstuvwxyz" })).toEqual([meant("ORIGN_TOKEN", "ORIGIN_TOKEN")]);
    expect(problems({ CACHE_MAX_BYTE: "1GiB", DATABASE_UR: "x.sqlite", METRIC_PORT: "off", origin_token: "t" })).toEqual([
      meant("CACHE_MAX_BYTE", "CACHE_MAX_BYTES"),
      meant("DATABASE_UR", "DATABASE_URL"),
      meant("METRIC_PORT", "METRICS_PORT"),
      meant("origin_token", "ORIGIN_TOKEN"),
    ]);
    // Short names (HOME is two typos from HOST) and names far from every variable are another program's.
    expect(() => parse({ HOME: "/root", HOSTNAME: "box", PWD: "/srv", LANG: "C.UTF-8", DATABASE_PASSWORD: "x", NODE_OPTIONS: "", ORIGIN_URL: "http://o" })).not.toThrow();
  });

  it("reports every problem at once", () => {
    expect(problems({ PORT: "x", METRICS_PORT: "y", CACHE_TTL_SECONDS: "z" })).toHaveLength(3);
  });

  it("refuses a keep-alive timeout below the store's deadline (a waiting request would lose its connection)", () => {
    expect(problems({ KEEP_ALIVE_TIMEOUT_SECONDS: "5", STORE_TIMEOUT_MS: "10000" })).toEqual([
      "KEEP_ALIVE_TIMEOUT_SECONDS: 5 s is below STORE_TIMEOUT_MS (10000 ms): a request waiting that long on the store would lose its connection, not get a 503; raise it above the store's deadline.",
    ]);
    expect(parse({ KEEP_ALIVE_TIMEOUT_SECONDS: "10", STORE_TIMEOUT_MS: "10000" }).keepAliveTimeoutMs).toBe(10_000);
  });

  it("rejects METRICS_PORT equal to PORT", () => {
    expect(problems({ PORT: "9000", METRICS_PORT: "9000" })[0]).toMatch(/^METRICS_PORT: 9000 is the same as PORT/);
  });

  it("--seed and --seed=N", () => {
    expect(parse({}, ["--seed"]).seedItems).toBe(1000);
    expect(parse({}, ["--seed=7"]).seedItems).toBe(7);
    expect(parse({ SEED_SAMPLE_ITEMS: "3" }, ["--seed=9"]).seedItems).toBe(9);
    expect(problems({}, ["--sed"])[0]).toMatch(/unknown argument "--sed"/);
  });

  it("warns about weak but legal setups", () => {
    const w = configWarnings(parse({ ORIGIN_TOKEN: "short", KEEP_ALIVE_TIMEOUT_SECONDS: "60" }));
    expect(w.join("\n")).toMatch(/shorter than 16/);
    expect(w.join("\n")).toMatch(/not above 900/);
    expect(configWarnings(parse({ HOST: "0.0.0.0" }))[0]).toMatch(/without ORIGIN_TOKEN/);
    expect(configWarnings(parse({}))).toEqual([]);
    const purging = { CLOUDFLARE_ZONE_ID: "0123456789abcdef0123456789abcdef", CLOUDFLARE_API_TOKEN: "t0k" };
    expect(configWarnings(parse({ ...purging, CLOUDFLARE_PURGE_REPEAT_MS: "6", ORIGIN_PROCESSES: "2" }))).toEqual([
      "CLOUDFLARE_PURGE_REPEAT_MS=6 (milliseconds) is below the Worker's default ORIGIN_TIMEOUT_MS plus 1000 (6000): an edge fill slower than 6 ms can land after both purges; use at least the Worker's ORIGIN_TIMEOUT_MS plus 1000",
    ]);
    expect(configWarnings(parse({ ...purging }))).toEqual([]);
    expect(configWarnings(parse({ ...purging, CLOUDFLARE_PURGE_REPEAT_MS: "0" }))).toEqual([]);
  });

  it("refuses a CACHE_MAX_BYTES the machine cannot hold, saying how much it can", () => {
    const fourGiB = { bytes: 4 * 2 ** 30, source: "the cgroup's memory.max" };
    expect(() => parseOriginConfig({ CACHE_MAX_BYTES: "6GiB" }, [], CWD, fourGiB)).toThrow(
      /CACHE_MAX_BYTES: 6 GiB is more than this machine can hold \(4 GiB, the cgroup's memory.max, less 256 MiB for the process itself\): set at most 3840MiB\./,
    );
    expect(parseOriginConfig({ CACHE_MAX_BYTES: "3GiB" }, [], CWD, fourGiB).cacheMaxBytes).toBe(3 * 2 ** 30);
    expect(problems({ CACHE_MAX_BYTES: "4KiB" })[0]).toMatch(/^CACHE_MAX_BYTES: "4KiB" is out of range; set between 64 KiB and 1 TiB/);
  });

  it("refuses an ID_FILTER_CAPACITY whose filter, beside the cache, the machine cannot hold, saying how many ids fit", () => {
    const fourGiB = { bytes: 4 * 2 ** 30, source: "the cgroup's memory.max" };
    const refusal = (env: Record<string, string>) => {
      try {
        parseOriginConfig(env, [], CWD, fourGiB);
      } catch (error) {
        return (error as ConfigError).problems.map((p) => `${p.variable}: ${p.message}`);
      }
      return [];
    };
    // About 1.27 bytes per id: 10 billion ids are 11.8 GiB.
    const [tooMany] = refusal({ ID_FILTER_CAPACITY: "10000000000", CACHE_MAX_BYTES: "1GiB" });
    expect(tooMany).toMatch(/^ID_FILTER_CAPACITY: 10000000000 ids need a 11\.8 GiB membership filter, which with the 1 GiB cache \(CACHE_MAX_BYTES\) is more than this machine can hold \(4 GiB, .*\): set at most \d+, or auto\.$/);
    const fit = Number(/set at most (\d+)/.exec(tooMany!)![1]);
    expect(fit).toBeGreaterThan(2_000_000_000);
    expect(refusal({ ID_FILTER_CAPACITY: String(fit), CACHE_MAX_BYTES: "1GiB" })).toEqual([]);
    // Each process has its own.
    expect(refusal({ ID_FILTER_CAPACITY: "1000000000", ORIGIN_PROCESSES: "4" })).toEqual([
      expect.stringMatching(/^ORIGIN_PROCESSES: 4 processes with a 64 MiB cache each \(CACHE_MAX_BYTES\), a 1\.2 GiB membership filter each \(ID_FILTER_CAPACITY\) .*run at most 2, or lower CACHE_MAX_BYTES or ID_FILTER_CAPACITY\.$/),
    ]);
  });

  it("reads purge on change: both the zone and the token, the plan's rate unless overridden", () => {
    const zone = "0123456789abcdef0123456789abcdef";
    expect(parse({ CLOUDFLARE_ZONE_ID: zone, CLOUDFLARE_API_TOKEN: "t0k" }).purge).toEqual({
      zoneId: zone,
      token: "t0k",
      apiBase: "https://api.cloudflare.com/client/v4",
      plan: "free",
      rate: 5 / 60,
      burst: 25,
      repeatAfterMs: 6000,
    });
    expect(parse({ CLOUDFLARE_ZONE_ID: zone, CLOUDFLARE_API_TOKEN: "t", CLOUDFLARE_PURGE_PLAN: "pro", CLOUDFLARE_PURGE_RATE: "2.5" }).purge).toMatchObject({ rate: 2.5, burst: 25 });
    expect(parse({ CLOUDFLARE_ZONE_ID: zone, CLOUDFLARE_API_TOKEN: "t", CLOUDFLARE_PURGE_REPEAT_MS: "0" }).purge).toMatchObject({ repeatAfterMs: 0 });
    // Other processes may serve the old version for up to the feed's bounds after the write: added.
    const purging = { CLOUDFLARE_ZONE_ID: zone, CLOUDFLARE_API_TOKEN: "t" };
    expect(parse({ ...purging, ORIGIN_PROCESSES: "2" }).purge).toMatchObject({ repeatAfterMs: 7000 });
    expect(parse({ ...purging, ORIGIN_PROCESSES: "2", CLOUDFLARE_PURGE_REPEAT_MS: "0" }).purge).toMatchObject({ repeatAfterMs: 0 });
    expect(parse({ ...purging, DATABASE_URL: "postgres://u@db/items", FEED_STALE_BOUND_MS: "2000" }).purge).toMatchObject({ repeatAfterMs: 8000 });
    expect(parse({ ...purging, DATABASE_URL: "postgres://u@db/items" }).purge).toMatchObject({ repeatAfterMs: 7000 });
    expect(problems({ CLOUDFLARE_PURGE_REPEAT_MS: "6s" })[0]).toMatch(/^CLOUDFLARE_PURGE_REPEAT_MS: "6s" is not a whole number of milliseconds/);
    expect(problems({ CLOUDFLARE_PURGE_REPEAT_MS: "200000" })[0]).toBe('CLOUDFLARE_PURGE_REPEAT_MS: "200000" is not a whole number of milliseconds from 0 to 120000; write e.g. "6000".');
    expect(problems({ CLOUDFLARE_ZONE_ID: zone })).toEqual(["CLOUDFLARE_API_TOKEN: is needed too: purge on change takes both CLOUDFLARE_ZONE_ID and CLOUDFLARE_API_TOKEN (or neither, for no purging)."]);
    // A malformed zone id is that problem alone, not also a missing one.
    const malformed = problems({ CLOUDFLARE_ZONE_ID: "example.com", CLOUDFLARE_API_TOKEN: "t" });
    expect(malformed).toHaveLength(1);
    expect(malformed[0]).toMatch(/^CLOUDFLARE_ZONE_ID: "example.com" is not a zone id/);
    expect(problems({ CLOUDFLARE_PURGE_PLAN: "gold" })[0]).toBe('CLOUDFLARE_PURGE_PLAN: "gold" is not one of "free", "pro", "business", "enterprise".');
    expect(problems({ CLOUDFLARE_API_BASE: "ftp://x" })[0]).toMatch(/^CLOUDFLARE_API_BASE: "ftp:\/\/x" is not an http\(s\) URL/);
    expect(parse({}).purge).toBeUndefined();
  });

  it("reads the membership filter's capacity: auto, a number, or 0 for none", () => {
    expect(parse({}).idFilterCapacity).toBe("auto");
    expect(parse({ ID_FILTER_CAPACITY: "5000000" }).idFilterCapacity).toBe(5_000_000);
    expect(parse({ ID_FILTER_CAPACITY: "0" }).idFilterCapacity).toBe(0);
    expect(problems({ ID_FILTER_CAPACITY: "lots" })[0]).toMatch(/^ID_FILTER_CAPACITY: "lots" is not a whole number of ids/);
  });

  it("reads ORIGIN_PROCESSES: a whole number, or auto for one per core", () => {
    expect(parse({}).processes).toBe(1);
    expect(parse({ ORIGIN_PROCESSES: "4" }).processes).toBe(4);
    expect(parse({ ORIGIN_PROCESSES: " auto " }).processes).toBe(availableParallelism());
    for (const raw of ["0", "-2", "two", "1.5", "1025"]) {
      expect(problems({ ORIGIN_PROCESSES: raw })).toEqual([`ORIGIN_PROCESSES: "${raw}" is not a whole number of processes (or auto) from 1 to 1024; write e.g. "4".`]);
    }
    // SQLite is fine with several processes (the primary relays changes), and so is PostgreSQL.
    expect(parse({ ORIGIN_PROCESSES: "3", DATABASE_URL: "./items.sqlite" }).processes).toBe(3);
    expect(parse({ ORIGIN_PROCESSES: "3", DATABASE_URL: "postgres://u@db/items" }).processes).toBe(3);
  });

  it("refuses more processes than the machine can hold, each with its own cache", () => {
    const fourGiB = { bytes: 4 * 2 ** 30, source: "the cgroup's memory.max" };
    expect(parseOriginConfig({ ORIGIN_PROCESSES: "3", CACHE_MAX_BYTES: "1GiB" }, [], CWD, fourGiB).processes).toBe(3);
    expect(() => parseOriginConfig({ ORIGIN_PROCESSES: "4", CACHE_MAX_BYTES: "1GiB" }, [], CWD, fourGiB)).toThrow(
      /ORIGIN_PROCESSES: 4 processes with a 1 GiB cache each \(CACHE_MAX_BYTES\) and 256 MiB for each process itself need more than this machine can hold \(4 GiB, the cgroup's memory.max\): run at most 3, or lower CACHE_MAX_BYTES\./,
    );
  });
});
