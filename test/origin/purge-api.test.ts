// The purge client against the loopback stand-in (real HTTP), and against hand-made answers for shapes the
// stand-in does not produce. Timeouts run on a manual clock: the test waits for the hanging call to arrive,
// then fires the deadline.

import { afterEach, describe, expect, it } from "vitest";
import { startCloudflareApiStandIn, type CloudflareApiStandIn, type StandInOptions } from "../../scripts/lib/cloudflare-api-stand-in.ts";
import { CloudflarePurgeApi, MAX_RETRY_AFTER_MS, VERIFY_TAG, type PurgeOutcome } from "../../src/origin/purge/cloudflare-purge-api.ts";
import { ManualTimers } from "../../src/origin/purge/timers.ts";

const ZONE = "023e105f4ecef8ad9ca31a8372d0c353";
const TOKEN = "good-token-0123456789";
const NO_PURGE = "read-only-token-0123456789";

const standIns: CloudflareApiStandIn[] = [];
afterEach(async () => {
  while (standIns.length > 0) await standIns.pop()!.close();
});

async function standIn(options: Partial<StandInOptions> = {}) {
  const s = await startCloudflareApiStandIn({ token: TOKEN, zoneId: ZONE, tokensWithoutPurge: [NO_PURGE], ...options });
  standIns.push(s);
  return s;
}

function client(base: string, overrides: Partial<ConstructorParameters<typeof CloudflarePurgeApi>[0]> = {}) {
  return new CloudflarePurgeApi({ base, zoneId: ZONE, token: TOKEN, timeoutMs: 5_000, ...overrides });
}

function answering(status: number, body: string, headers: Record<string, string> = {}): typeof fetch {
  return async () => new Response(body, { status, headers });
}

const detail = (o: PurgeOutcome) => ("detail" in o ? o.detail : "");

describe("CloudflarePurgeApi against the stand-in", () => {
  it("purges tags: POST {base}/zones/{zone}/purge_cache with a Bearer token; 200 is accepted", async () => {
    const purged: string[][] = [];
    const s = await standIn({ onPurge: (tags) => void purged.push(tags) });
    const outcome = await client(s.baseUrl).purgeTags(["item:a", "item:b"]);
    expect(outcome).toMatchObject({ kind: "accepted", purgeId: expect.stringMatching(/^[0-9a-f]{32}$/) });
    expect(purged).toEqual([["item:a", "item:b"]]);
    expect(s.calls).toMatchObject([{ method: "POST", path: `/client/v4/zones/${ZONE}/purge_cache`, body: { tags: ["item:a", "item:b"] }, status: 200 }]);
  });

  it("a wrong token is refused with Cloudflare's code and the fix, and the token is never echoed", async () => {
    const s = await standIn();
    const outcome = await client(s.baseUrl, { token: "wrong-secret-token" }).purgeTags(["item:a"]);
    expect(outcome).toMatchObject({ kind: "refused", status: 401 });
    expect(detail(outcome)).toContain("10000 Authentication error");
    expect(detail(outcome)).toContain(`Zone → Cache Purge → Purge for the zone ${ZONE}`);
    expect(detail(outcome)).not.toContain("wrong-secret-token");
  });

  it("a token without the purge permission is refused (403) with the fix", async () => {
    const s = await standIn();
    const outcome = await client(s.baseUrl, { token: NO_PURGE }).purgeTags(["item:a"]);
    expect(outcome).toMatchObject({ kind: "refused", status: 403 });
    expect(detail(outcome)).toMatch(/10000 Authentication error\. Fix: create an API token with the permission Zone → Cache Purge → Purge/);
  });

  it("a zone id that is not one is refused with the zone fix", async () => {
    const s = await standIn();
    const outcome = await client(s.baseUrl, { zoneId: "example.com" }).purgeTags(["item:a"]);
    expect(outcome).toMatchObject({ kind: "refused", status: 400 });
    expect(detail(outcome)).toContain("7003 Could not route");
    expect(detail(outcome)).toContain('CLOUDFLARE_ZONE_ID "example.com" does not name a zone');
  });

  it("a malformed token is refused with the token-format fix", async () => {
    const s = await standIn();
    const outcome = await client(s.baseUrl, { token: "has space" }).purgeTags(["item:a"]);
    expect(outcome).toMatchObject({ kind: "refused", status: 400 });
    expect(detail(outcome)).toContain("6111 Invalid format for Authorization header");
    expect(detail(outcome)).toContain("not in the form of an API token");
  });

  it("verify() purges the sentinel tag: accepted for a good token, refused with the fix otherwise", async () => {
    const s = await standIn();
    expect(await client(s.baseUrl).verify()).toMatchObject({ kind: "accepted" });
    expect(s.calls.at(-1)?.body).toEqual({ tags: [VERIFY_TAG] });
    expect(await client(s.baseUrl, { token: "wrong" }).verify()).toMatchObject({ kind: "refused", status: 401 });
    const noPermission = await client(s.baseUrl, { token: NO_PURGE }).verify();
    expect(noPermission).toMatchObject({ kind: "refused", status: 403 });
    expect(detail(noPermission)).toContain("Zone → Cache Purge → Purge");
  });

  it("429 is rate-limited with Retry-After in ms", async () => {
    const s = await standIn({ plan: "free" });
    s.setFault({ kind: "429", retryAfterS: 1 });
    const outcome = await client(s.baseUrl).purgeTags(["item:a"]);
    expect(outcome).toMatchObject({ kind: "rate-limited", retryAfterMs: 1000 });
    expect(detail(outcome)).toContain("971 Please wait");
  });

  it("the stand-in's own bucket answers 429 beyond the burst, with the seconds until a token", async () => {
    let now = 0;
    const s = await standIn({ plan: "free", now: () => now });
    const api = client(s.baseUrl);
    for (let i = 0; i < 25; i++) expect((await api.purgeTags([`item:${i}`])).kind).toBe("accepted");
    expect(await api.purgeTags(["item:x"])).toMatchObject({ kind: "rate-limited", retryAfterMs: 12_000 });
    now += 12_000;
    expect((await api.purgeTags(["item:x"])).kind).toBe("accepted");
  });

  it("5xx and a malformed body are retryable, saying what was wrong", async () => {
    const s = await standIn();
    s.setFault({ kind: "5xx", status: 502 });
    const gateway = await client(s.baseUrl).purgeTags(["item:a"]);
    expect(gateway).toMatchObject({ kind: "retryable" });
    expect(detail(gateway)).toContain("HTTP 502");
    s.setFault({ kind: "malformed" });
    const malformed = await client(s.baseUrl).purgeTags(["item:a"]);
    expect(malformed).toMatchObject({ kind: "retryable" });
    expect(detail(malformed)).toContain("not Cloudflare's JSON envelope");
  });

  it("a hanging API is a retryable timeout, and the deadline timer is gone afterwards", async () => {
    const s = await standIn();
    const timers = new ManualTimers();
    s.setFault({ kind: "hang" });
    const pending = client(s.baseUrl, { timers, timeoutMs: 3_000 }).purgeTags(["item:a"]);
    await s.waitForCalls(1);
    expect(timers.pending).toBe(1);
    timers.runNext();
    const outcome = await pending;
    expect(outcome).toMatchObject({ kind: "retryable" });
    expect(detail(outcome)).toContain("no answer from the purge API within 3000 ms");
    expect(timers.pending).toBe(0);
  });

  it("an unreachable API is retryable, naming the cause", async () => {
    const s = await standIn();
    const base = s.baseUrl;
    await standIns.pop()!.close();
    const outcome = await client(base).purgeTags(["item:a"]);
    expect(outcome).toMatchObject({ kind: "retryable" });
    expect(detail(outcome)).toContain("ECONNREFUSED");
  });

  it("a cancelled call is retryable and says so", async () => {
    const s = await standIn();
    s.setFault({ kind: "hang" });
    const controller = new AbortController();
    const pending = client(s.baseUrl).purgeTags(["item:a"], controller.signal);
    await s.waitForCalls(1);
    controller.abort();
    expect(detail(await pending)).toContain("cancelled");
  });
});

describe("CloudflarePurgeApi on answers the stand-in does not give", () => {
  it("200 with success:false is retryable, with Cloudflare's errors", async () => {
    const body = JSON.stringify({ success: false, errors: [{ code: 1234, message: "odd" }], messages: [], result: null });
    const outcome = await client("https://api.invalid/client/v4", { fetch: answering(200, body) }).purgeTags(["item:a"]);
    expect(outcome).toMatchObject({ kind: "retryable" });
    expect(detail(outcome)).toContain('"success" is false: 1234 odd');
  });

  it("an HTML 200 (a proxy's page) is retryable", async () => {
    const outcome = await client("https://api.invalid/client/v4", { fetch: answering(200, "<html>hi</html>") }).purgeTags(["item:a"]);
    expect(detail(outcome)).toContain("not Cloudflare's JSON envelope");
  });

  it("Retry-After as an HTTP-date is honoured too; a 429 without it has no retryAfterMs", async () => {
    const date = new Date(Date.now() + 60_000).toUTCString();
    const dated = await client("https://api.invalid/client/v4", { fetch: answering(429, "", { "retry-after": date }) }).purgeTags(["item:a"]);
    expect(dated.kind).toBe("rate-limited");
    expect((dated as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(50_000);
    const bare = await client("https://api.invalid/client/v4", { fetch: answering(429, "") }).purgeTags(["item:a"]);
    expect(bare).toEqual({ kind: "rate-limited", detail: "HTTP 429 (over the account's purge rate)" });
  });

  it("a redirect is refused: the base URL is wrong, retrying will not fix it", async () => {
    const outcome = await client("https://api.invalid/client/v4", { fetch: answering(301, "", { location: "https://elsewhere/" }) }).purgeTags(["item:a"]);
    expect(outcome).toMatchObject({ kind: "refused", status: 301 });
    expect(detail(outcome)).toContain("CLOUDFLARE_API_BASE");
  });

  it("408 is retryable; another 4xx is refused with Cloudflare's words", async () => {
    expect((await client("https://x.invalid", { fetch: answering(408, "") }).purgeTags(["a"])).kind).toBe("retryable");
    const body = JSON.stringify({ success: false, errors: [{ code: 1012, message: "bad body" }] });
    const refused = await client("https://x.invalid", { fetch: answering(400, body) }).purgeTags(["a"]);
    expect(refused).toMatchObject({ kind: "refused", status: 400 });
    expect(detail(refused)).toContain("1012 bad body");
  });

  it("a 2xx that is JSON but not the envelope, or an envelope without \"success\", is retryable, saying which", async () => {
    for (const body of ["[]", '{"result":{}}', '"ok"']) {
      const outcome = await client("https://x.invalid", { fetch: answering(200, body) }).purgeTags(["a"]);
      expect(outcome).toMatchObject({ kind: "retryable" });
      expect(detail(outcome)).toContain("not Cloudflare's JSON envelope");
    }
    const noSuccess = await client("https://x.invalid", { fetch: answering(200, '{"errors":[],"result":{"id":"x"}}') }).purgeTags(["a"]);
    expect(noSuccess).toMatchObject({ kind: "retryable" });
    expect(detail(noSuccess)).toContain('"success" is missing');
  });

  it("an answer whose body breaks off is retryable, saying it failed reading the answer", async () => {
    const broken: typeof fetch = async () =>
      new Response(new ReadableStream({ start: (controller) => controller.error(new Error("connection reset")) }), { status: 200 });
    const outcome = await client("https://x.invalid", { fetch: broken }).purgeTags(["a"]);
    expect(outcome).toMatchObject({ kind: "retryable" });
    expect(detail(outcome)).toContain("reading the answer");
  });

  it("a 404 without Cloudflare's codes is refused with the zone fix", async () => {
    const outcome = await client("https://x.invalid", { fetch: answering(404, "Not Found") }).purgeTags(["a"]);
    expect(outcome).toMatchObject({ kind: "refused", status: 404 });
    expect(detail(outcome)).toContain(`CLOUDFLARE_ZONE_ID "${ZONE}" does not name a zone this API knows`);
  });

  it("Retry-After that cannot be read is ignored, and one beyond five minutes is read as five minutes", async () => {
    const odd = await client("https://x.invalid", { fetch: answering(429, "", { "retry-after": "soon" }) }).purgeTags(["a"]);
    expect(odd).toEqual({ kind: "rate-limited", detail: "HTTP 429 (over the account's purge rate)" });
    const long = await client("https://x.invalid", { fetch: answering(429, "", { "retry-after": "86400" }) }).purgeTags(["a"]);
    expect(long).toMatchObject({ kind: "rate-limited", retryAfterMs: MAX_RETRY_AFTER_MS });
    const far = new Date(Date.now() + 86_400_000).toUTCString();
    expect(await client("https://x.invalid", { fetch: answering(429, "", { "retry-after": far }) }).purgeTags(["a"])).toMatchObject({ retryAfterMs: MAX_RETRY_AFTER_MS });
  });

  it("more than 30 tags, or none, is the caller's bug", () => {
    const api = client("https://x.invalid");
    expect(() => api.purgeTags([])).toThrow(RangeError);
    expect(() => api.purgeTags(Array.from({ length: 31 }, (_, i) => `t${i}`))).toThrow(/1-30 tags/);
  });
});
