// Purge on change with several instances on PostgreSQL: every committed change (through any instance, or
// any other writer of the table) is purged once, by the one instance that leads, and when the leader goes
// away another takes over and purges what was left pending. The Cloudflare API is the loopback stand-in.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startCloudflareApiStandIn, type CloudflareApiStandIn } from "../../scripts/lib/cloudflare-api-stand-in.ts";
import { startOnPostgres, usePostgres } from "./pg-harness.ts";

const postgres = usePostgres();
const ZONE = "fedcba9876543210fedcba9876543210";
const TOKEN = "purge-postgres-token-0123456789";
let standIn: CloudflareApiStandIn;

beforeAll(async () => {
  standIn = await startCloudflareApiStandIn({ token: TOKEN, zoneId: ZONE, plan: "enterprise" });
});
afterAll(async () => {
  await standIn?.close();
});

// Each purge call is counted here, so the repeat of each (test/node/purge-repeat.test.ts) is off.
const env = () => ({ CLOUDFLARE_ZONE_ID: ZONE, CLOUDFLARE_API_TOKEN: TOKEN, CLOUDFLARE_API_BASE: standIn.baseUrl, CLOUDFLARE_PURGE_PLAN: "enterprise", CLOUDFLARE_PURGE_REPEAT_MS: "0" });
/** How many accepted calls purged `item:<id>`. */
const purgesOf = (id: string) => standIn.calls.filter((c) => c.outcome === "accepted" && (c.body as { tags?: string[] }).tags?.includes(`item:${id}`)).length;

async function put(url: string, id: string, body: string): Promise<void> {
  const res = await fetch(`${url}/items/${id}`, { method: "PUT", headers: { "content-type": "application/json" }, body });
  expect(res.status).toBe(204);
}

describe("purge on change across instances (PostgreSQL)", () => {
  it("purges each change once, whichever instance or writer made it, and a new leader resumes", async () => {
    const url = await postgres.database();
    const a = await startOnPostgres(url, env());
    const b = await startOnPostgres(url, env());
    await vi.waitFor(() => expect([a.duties.leading, b.duties.leading].filter(Boolean)).toHaveLength(1), { timeout: 10_000, interval: 10 });
    const [leader, follower] = a.duties.leading ? [a, b] : [b, a];

    for (let i = 0; i < 10; i++) await put((i % 2 === 0 ? a : b).url, `p${i}`, `{"i":${i}}`);
    // Purged before the next change, so that change cannot share its call (coalescing would be right, but
    // would not show that a change from outside the origin is purged).
    await vi.waitFor(() => expect(purgesOf("p0")).toBe(1), { timeout: 10_000, interval: 10 });
    await postgres.pg.sql(`UPDATE slim_edge_items SET body = convert_to('{"by":"sql"}', 'UTF8'), version = version + 1 WHERE id = 'p0'`, url.slice(url.lastIndexOf("/") + 1));
    await vi.waitFor(() => expect(purgesOf("p0")).toBe(2), { timeout: 10_000, interval: 10 });
    for (let i = 1; i < 10; i++) expect(purgesOf(`p${i}`)).toBe(1);
    expect(follower.duties.purgeStats()!.calls).toBe(1); // its start-up check, nothing else
    // The purge gauges are the leader's: summed over instances, pending counts once and the state is one.
    const page = async (o: { metricsUrl: string | undefined }) => (await fetch(`${o.metricsUrl!}/metrics`)).text();
    expect(await page(leader)).toMatch(/^origin_purge_state\{state="ok"\} 1$/m);
    const followerPage = await page(follower);
    expect(followerPage).not.toMatch(/^origin_purge_state\{/m);
    expect(followerPage).toMatch(/^origin_purge_pending 0$/m);

    await leader.close();
    await vi.waitFor(() => expect(follower.duties.leading).toBe(true), { timeout: 20_000, interval: 20 });
    await put(follower.url, "after", '{"leader":"new"}');
    await vi.waitFor(() => expect(purgesOf("after")).toBe(1), { timeout: 10_000, interval: 10 });
  }, 60_000);

  it("a leader whose lead ends while it owes a repeat: the next leader sends that repeat", async () => {
    const url = await postgres.database();
    // Long enough that the old leader surely steps down before its own repeat falls due (10 s, plus
    // FEED_STALE_BOUND_MS on PostgreSQL).
    const withRepeats = { ...env(), CLOUDFLARE_PURGE_REPEAT_MS: "10000" };
    const first = await startOnPostgres(url, withRepeats);
    await vi.waitFor(() => expect(first.duties.leading).toBe(true), { timeout: 10_000, interval: 10 });
    const next = await startOnPostgres(url, withRepeats);
    await put(first.url, "owed", '{"v":1}');
    await vi.waitFor(() => expect(purgesOf("owed")).toBe(1), { timeout: 10_000, interval: 10 });
    // Its lock's session ends (as when its machine vanishes): it steps down owing the repeat, and keeps it in memory.
    expect(await postgres.pg.terminate("pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted)")).toBe(1);
    await vi.waitFor(() => expect(next.duties.leading).toBe(true), { timeout: 20_000, interval: 20 });
    // The stand-in records a call before the purger has its answer: wait for the purger's count.
    await vi.waitFor(() => expect(next.duties.purgeStats()!.repeatedTags).toBe(1), { timeout: 20_000, interval: 20 });
    expect(purgesOf("owed")).toBe(2);
    expect(first.duties.purgeStats()).toMatchObject({ repeatedTags: 0, repeatsOwed: 1 });
  }, 60_000);
});
