// What an instance does when it becomes the purge leader, in order: the purger reads the store's newest changes
// for the repeats it inherits (purge-policy.ts) before the change log's pruner may delete any of them. Fixed
// leadership, an in-memory source whose read is held, a recording pruner, the Cloudflare stand-in on loopback.
import { afterEach, describe, expect, it } from "vitest";
import { startCloudflareApiStandIn, type CloudflareApiStandIn } from "../../scripts/lib/cloudflare-api-stand-in.ts";
import { startLeaderDuties, type LeaderDuties } from "../../src/origin/purge/leader-duties.ts";
import { FixedLeadership } from "../../src/origin/purge/leadership.ts";
import type { PurgeSource } from "../../src/origin/purge/purge-source.ts";
import { deferred, until } from "./harness.ts";

const ZONE = "0123456789abcdef0123456789abcdef";
const TOKEN = "duties-token-0123456789";

let standIn: CloudflareApiStandIn | undefined;
let duties: LeaderDuties | undefined;
const releases: (() => void)[] = [];
afterEach(async () => {
  for (const release of releases.splice(0)) release();
  await duties?.close();
  await standIn?.close();
  duties = standIn = undefined;
});

/** Lets every callback and timer already due run: what an immediate start would have done, it has done. */
async function turns(n = 5): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe("a new purge leader", () => {
  it("prunes the change log only once the purger has read the newest changes for the repeats it inherits", async () => {
    standIn = await startCloudflareApiStandIn({ token: TOKEN, zoneId: ZONE, plan: "enterprise" });
    const order: string[] = [];
    const read = deferred<void>();
    releases.push(() => read.resolve());
    const source: PurgeSource = {
      take: async () => [],
      markPurged: async () => {},
      cut: async () => ({ count: 0 }),
      markCut: async () => {},
      backlog: async () => 0,
      latest: async () => {
        order.push("read the newest changes");
        await read.promise;
        return [];
      },
    };
    const pruner = { pruneOnce: async () => (order.push("pruned"), 0) };
    const config = { zoneId: ZONE, token: TOKEN, apiBase: standIn.baseUrl, plan: "enterprise" as const, rate: 50, burst: 500, repeatAfterMs: 6_000 };
    duties = await startLeaderDuties({ leadership: new FixedLeadership(true), purge: { config, source }, pruner, closeables: [], log: () => {} });
    await until(() => order.length > 0, "the purger's first read", 5_000);
    await turns();
    expect(order).toEqual(["read the newest changes"]);
    read.resolve();
    await until(() => order.includes("pruned"), "the first pruning", 5_000);
    expect(order).toEqual(["read the newest changes", "pruned"]);
  });
});
