// The Cloudflare purge API stand-in answers as the documented contract says (see its header for sources):
// checked here with plain fetch, so the purge client's tests rest on a stand-in that was itself tested.

import { afterEach, describe, expect, it } from "vitest";
import { startCloudflareApiStandIn, type CloudflareApiStandIn, type StandInOptions } from "../../scripts/lib/cloudflare-api-stand-in.ts";

const ZONE = "023e105f4ecef8ad9ca31a8372d0c353";
const TOKEN = "good-token-0123456789";
const NO_PURGE = "read-only-token-0123456789";

const running: CloudflareApiStandIn[] = [];
afterEach(async () => {
  while (running.length > 0) await running.pop()!.close();
});

async function start(options: Partial<StandInOptions> = {}) {
  const s = await startCloudflareApiStandIn({ token: TOKEN, zoneId: ZONE, tokensWithoutPurge: [NO_PURGE], ...options });
  running.push(s);
  return s;
}

async function purge(s: CloudflareApiStandIn, body: unknown, { token = TOKEN, zone = ZONE } = {}) {
  const response = await fetch(`${s.baseUrl}/zones/${zone}/purge_cache`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: response.status, retryAfter: response.headers.get("retry-after"), body: (await response.json()) as Record<string, unknown> };
}

describe("Cloudflare API stand-in", () => {
  it("baseUrl is what CLOUDFLARE_API_BASE would be; an accepted purge is the documented envelope", async () => {
    const seen: string[][] = [];
    const s = await start({ onPurge: (tags) => void seen.push(tags) });
    expect(s.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/client\/v4$/);
    const answer = await purge(s, { tags: ["item:a", "items"] });
    expect(answer).toMatchObject({ status: 200, body: { success: true, errors: [], messages: [], result: { id: expect.stringMatching(/^[0-9a-f]{32}$/) } } });
    expect(seen).toEqual([["item:a", "items"]]);
    expect(s.calls).toMatchObject([{ method: "POST", status: 200, outcome: "accepted", body: { tags: ["item:a", "items"] } }]);
  });

  it("answers auth problems the way the real API is seen to: 400 6003/6111, 401 and 403 10000", async () => {
    const s = await start();
    const malformed = await fetch(`${s.baseUrl}/zones/${ZONE}/purge_cache`, { method: "POST", body: '{"tags":["a"]}' });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ success: false, errors: [{ code: 6003, error_chain: [{ code: 6111 }] }] });
    expect(await purge(s, { tags: ["a"] }, { token: "nope" })).toMatchObject({ status: 401, body: { success: false, errors: [{ code: 10000, message: "Authentication error" }] } });
    expect(await purge(s, { tags: ["a"] }, { token: NO_PURGE })).toMatchObject({ status: 403, body: { errors: [{ code: 10000 }] } });
    expect(await purge(s, { tags: ["a"] }, { zone: "f".repeat(32) })).toMatchObject({ status: 403 });
    expect(await purge(s, { tags: ["a"] }, { zone: "example.com" })).toMatchObject({ status: 400, body: { errors: [{ code: 7003 }, { code: 7000 }] } });
    s.grantPurge(NO_PURGE);
    expect((await purge(s, { tags: ["a"] }, { token: NO_PURGE })).status).toBe(200);
  });

  it("validates the body: a purge kind, non-empty lists of at most 30, tags without spaces and <= 1,024 chars", async () => {
    const s = await start();
    const bad = async (body: unknown) => (await purge(s, body)).body.errors as { code: number; message: string }[];
    expect(await bad({})).toEqual([{ code: 1012, message: 'Request must contain one of "purge_everything", "files", "tags", "hosts" or "prefixes"' }]);
    expect((await bad("{nope"))[0]!.message).toContain("not valid JSON");
    expect((await bad({ tags: [] }))[0]!.message).toContain("non-empty");
    expect((await bad({ tags: Array.from({ length: 31 }, (_, i) => `t${i}`) }))[0]!.message).toContain("at most 30");
    expect((await bad({ tags: ["a b"] }))[0]!.message).toContain("invalid item");
    expect((await bad({ tags: [7] }))[0]!.message).toContain("invalid item");
    expect((await bad({ tags: ["x".repeat(1025)] }))[0]!.message).toContain("invalid item");
    expect((await bad({ purge_everything: true, tags: ["a"] }))[0]!.message).toContain("cannot be combined");
    expect(s.calls.every((c) => c.status === 400 && c.outcome === "bad-request")).toBe(true);
  });

  it("accepts the other purge kinds, handing their body to onPurge with no tags", async () => {
    const seen: unknown[] = [];
    const s = await start({ onPurge: (tags, body) => void seen.push([tags, body]) });
    for (const body of [{ purge_everything: true }, { files: ["https://x/a", { url: "https://x/b", headers: { "CF-IPCountry": "US" } }] }, { hosts: ["x.example"] }, { prefixes: ["x.example/a/"] }]) {
      expect((await purge(s, body)).status).toBe(200);
    }
    expect(seen).toEqual([[[], { purge_everything: true }], [[], expect.objectContaining({ files: expect.any(Array) })], [[], { hosts: ["x.example"] }], [[], { prefixes: ["x.example/a/"] }]]);
  });

  it("keeps the plan's bucket: 429 with 971 and retry-after (whole seconds, rounded up) beyond it", async () => {
    let now = 0;
    const s = await start({ plan: "business", now: () => now });
    for (let i = 0; i < 50; i++) expect((await purge(s, { tags: [`t${i}`] })).status).toBe(200);
    const limited = await purge(s, { tags: ["over"] });
    expect(limited).toMatchObject({ status: 429, retryAfter: "1", body: { success: false, errors: [{ code: 971 }] } });
    now += 100; // business refills 10 a second
    expect((await purge(s, { tags: ["again"] })).status).toBe(200);
    expect(s.calls.filter((c) => c.outcome === "rate-limited").map((c) => c.at)).toEqual([0]);
  });

  it("a rejected body costs no token", async () => {
    const s = await start({ rate: 1, burst: 1, now: () => 0 });
    expect((await purge(s, {})).status).toBe(400);
    expect((await purge(s, { tags: ["a"] })).status).toBe(200);
  });

  it("injects faults for the next N calls: 5xx, malformed, 429, hang (until the client gives up or close)", async () => {
    const s = await start();
    s.setFault({ kind: "5xx", count: 2, status: 502 });
    for (let i = 0; i < 2; i++) {
      const r = await fetch(`${s.baseUrl}/zones/${ZONE}/purge_cache`, { method: "POST", body: "{}" });
      expect(r.status).toBe(502);
      expect(await r.text()).toContain("<html>");
    }
    expect((await purge(s, { tags: ["a"] })).status).toBe(200);
    s.setFault({ kind: "malformed" });
    const malformed = await fetch(`${s.baseUrl}/zones/${ZONE}/purge_cache`, { method: "POST", body: "{}" });
    expect(await malformed.text()).toBe('{"success":tru');
    s.setFault({ kind: "429", retryAfterS: 3 });
    expect(await purge(s, { tags: ["a"] })).toMatchObject({ status: 429, retryAfter: "3" });
    s.setFault({ kind: "hang" });
    const controller = new AbortController();
    const hanging = fetch(`${s.baseUrl}/zones/${ZONE}/purge_cache`, { method: "POST", body: "{}", signal: controller.signal });
    await s.waitForCalls(s.calls.length + 1);
    expect(s.calls.at(-1)).toMatchObject({ status: null, outcome: "fault", fault: "hang" });
    controller.abort();
    await expect(hanging).rejects.toThrow();
    expect((await purge(s, { tags: ["a"] })).status).toBe(200);
  });

  it("close() ends a hanging call and can be called twice", async () => {
    const s = await start();
    s.setFault({ kind: "hang" });
    const hanging = fetch(`${s.baseUrl}/zones/${ZONE}/purge_cache`, { method: "POST", body: "{}" });
    await s.waitForCalls(1);
    await s.close();
    await s.close();
    await expect(hanging).rejects.toThrow();
  });

  it("GET /user/tokens/verify says active for a known token, 1000 Invalid API Token otherwise", async () => {
    const s = await start();
    const verify = async (token: string) => {
      const r = await fetch(`${s.baseUrl}/user/tokens/verify`, { headers: { authorization: `Bearer ${token}` } });
      return { status: r.status, body: await r.json() };
    };
    expect(await verify(TOKEN)).toMatchObject({ status: 200, body: { success: true, result: { status: "active" }, messages: [{ code: 10000, message: "This API Token is valid and active" }] } });
    expect(await verify(NO_PURGE)).toMatchObject({ status: 200, body: { result: { status: "active" } } });
    expect(await verify("nope")).toMatchObject({ status: 401, body: { success: false, errors: [{ code: 1000, message: "Invalid API Token" }] } });
  });

  it("unknown routes answer 7003/7000 as the real API does", async () => {
    const s = await start();
    const r = await fetch(`${s.baseUrl}/zones/${ZONE}/dns_records`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ success: false, errors: [{ code: 7003 }, { code: 7000, message: "No route for that URI" }] });
  });
});
