// The purge loop end to end over real HTTP on loopback: an in-memory PurgeSource, the real client, and the
// Cloudflare stand-in. Time is a ManualTimers clock shared by the loop, its bucket, the client's deadline
// and the stand-in's bucket and record, so backoff and pacing run in virtual time: the test advances it only
// when the loop is parked (`whenIdle`) or, for a hanging call, once the stand-in has the call.

import { afterEach, describe, expect, it } from "vitest";
import { startCloudflareApiStandIn, type CloudflareApiStandIn, type StandInFault, type StandInOptions, type StandInPlan } from "../../scripts/lib/cloudflare-api-stand-in.ts";
import { ALL_ITEMS_TAG } from "../../src/shared/cache-tag.ts";
import { CloudflarePurgeApi, type PurgeApi } from "../../src/origin/purge/cloudflare-purge-api.ts";
import { inheritedRepeats } from "../../src/origin/purge/purge-policy.ts";
import { Purger, type PurgerOptions } from "../../src/origin/purge/purger.ts";
import type { PendingChange, PurgeCut, PurgeSource, RecentChange } from "../../src/origin/purge/purge-source.ts";
import { ManualTimers } from "../../src/origin/purge/timers.ts";
import { PURGE_PLANS, TokenBucket, type PurgeRate } from "../../src/origin/purge/token-bucket.ts";

const ZONE = "023e105f4ecef8ad9ca31a8372d0c353";
const TOKEN = "good-token-0123456789";
const NO_PURGE = "read-only-token-0123456789";

/** The outbox in memory: keys in commit order; a cut remembers the last key it covers. A change not pending is purged. */
class MemorySource implements PurgeSource {
  readonly pending = new Map<string, string>();
  readonly #changes: { key: string; id: string; changedAt: number }[] = [];
  readonly #now: () => number;
  #seq = 0;
  constructor(now: () => number) {
    this.#now = now;
  }
  add(...ids: string[]): void {
    for (const id of ids) {
      const key = String(++this.#seq);
      this.pending.set(key, id);
      this.#changes.push({ key, id, changedAt: this.#now() });
    }
  }
  async latest(limit: number): Promise<RecentChange[]> {
    return this.#changes
      .slice(-limit)
      .reverse()
      .map(({ key, id, changedAt }) => ({ id, purged: !this.pending.has(key), changedAt }));
  }
  async take(limit: number): Promise<PendingChange[]> {
    return [...this.pending].slice(0, limit).map(([key, id]) => ({ key, id }));
  }
  async markPurged(keys: string[]): Promise<void> {
    for (const key of keys) this.pending.delete(key);
  }
  async cut(): Promise<PurgeCut & { upTo: number }> {
    return { count: this.pending.size, upTo: this.#seq };
  }
  async markCut(cut: PurgeCut): Promise<void> {
    for (const key of [...this.pending.keys()]) if (Number(key) <= (cut as PurgeCut & { upTo: number }).upTo) this.pending.delete(key);
  }
  /** The upTo of each call: the purger must count past its bound to compare with it. */
  backlogAsked: number[] = [];
  async backlog(upTo: number): Promise<number> {
    this.backlogAsked.push(upTo);
    return Math.min(upTo, this.pending.size);
  }
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

interface Setup {
  plan?: StandInPlan;
  purgerPlan?: PurgeRate;
  /** Tokens our bucket starts with (default: full). */
  initialTokens?: number;
  token?: string;
  standIn?: Partial<StandInOptions>;
  purger?: Partial<PurgerOptions>;
  timeoutMs?: number;
  wrapApi?: (api: PurgeApi) => PurgeApi;
}

async function setup(options: Setup = {}) {
  const timers = new ManualTimers(1_000);
  const source = new MemorySource(() => timers.now());
  const applied: string[][] = [];
  const hooks = { onPurge: (_tags: string[]): void => {} };
  const standIn: CloudflareApiStandIn = await startCloudflareApiStandIn({
    token: TOKEN,
    zoneId: ZONE,
    plan: options.plan ?? "pro",
    tokensWithoutPurge: [NO_PURGE],
    now: () => timers.now(),
    onPurge: (tags) => {
      applied.push(tags);
      hooks.onPurge(tags);
    },
    ...options.standIn,
  });
  const real = new CloudflarePurgeApi({ base: standIn.baseUrl, zoneId: ZONE, token: options.token ?? TOKEN, timeoutMs: options.timeoutMs ?? 2_000, timers });
  const api = options.wrapApi?.(real) ?? real;
  const bucket = new TokenBucket({ ...(options.purgerPlan ?? PURGE_PLANS[options.plan ?? "pro"]), now: () => timers.now(), initial: options.initialTokens });
  const lines: string[] = [];
  // Repeats are off unless a test turns them on: the others count calls, and a repeat owed would hold stop() back.
  const purger = new Purger({ source, api, bucket, timers, log: (line) => void lines.push(line), random: () => 0.5, repeatAfterMs: 0, ...options.purger });
  /** Stops the purger, running virtual time while it stops (and, with `drain`, sends the repeats it owes). */
  const stop = async (options: { drain?: boolean } = {}) => {
    let stopped = false;
    const stopping = purger.stop(options).then(() => (stopped = true));
    while (!stopped) {
      await purger.whenIdle();
      if (!timers.runNext()) await stopping;
    }
  };
  cleanups.push(async () => {
    await stop();
    await standIn.close();
  });
  /** Advances virtual time, one parked timer at a time, until `done()` holds. */
  const runUntil = async (done: () => boolean, maxSteps = 5_000) => {
    for (let step = 0; step < maxSteps; step++) {
      await purger.whenIdle();
      if (done()) return;
      if (!timers.runNext()) throw new Error("nothing scheduled and the condition does not hold");
    }
    throw new Error(`condition not reached in ${maxSteps} steps`);
  };
  const tagCalls = () => standIn.calls.filter((c) => (c.body as { tags?: unknown } | undefined)?.tags !== undefined);
  return {
    timers, source, applied, standIn, purger, lines, runUntil, tagCalls, stop,
    /** Runs inside the stand-in after each accepted purge, before it answers. */
    set onPurge(fn: (tags: string[]) => void) {
      hooks.onPurge = fn;
    },
  };
}

/** Whether a sequence of call times could pass a bucket of `burst` refilled at `rate`/s: for every i <= j, j - i + 1 <= burst + rate × (t_j - t_i). */
function overRate(times: readonly number[], { rate, burst }: PurgeRate): string | null {
  for (let i = 0; i < times.length; i++) {
    for (let j = i; j < times.length; j++) {
      if (j - i + 1 > burst + (rate * (times[j]! - times[i]!)) / 1000 + 1e-6) return `calls ${i}..${j} (${j - i + 1} calls in ${times[j]! - times[i]!} ms)`;
    }
  }
  return null;
}

const ids = (n: number, prefix = "id") => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

describe("Purger", () => {
  it("purges a change: one call with its tag, then the change is marked purged", async () => {
    const t = await setup();
    t.source.add("a");
    t.purger.start();
    await t.runUntil(() => t.source.pending.size === 0);
    expect(t.applied).toEqual([["item:a"]]);
    expect(t.purger.stats()).toMatchObject({ state: "ok", calls: 1, purgedTags: 1, retried: 0, refused: 0, dropped: 0, pending: 0 });
    expect(t.lines).toEqual([]);
  });

  it("a burst of writes to one id is one tag in one call, sent when the coalescing window closes", async () => {
    const t = await setup();
    t.purger.start();
    await t.runUntil(() => t.purger.stats().calls === 0);
    const wokeAt = t.timers.now();
    for (let i = 0; i < 5; i++) {
      t.source.add("hot");
      t.purger.wake();
    }
    await t.purger.whenIdle();
    t.timers.advance(40);
    t.source.add("hot");
    t.purger.wake();
    await t.runUntil(() => t.source.pending.size === 0);
    expect(t.tagCalls().map((c) => c.body)).toEqual([{ tags: ["item:hot"] }]);
    expect(t.tagCalls()[0]!.at).toBe(wokeAt + 100);
  });

  it("40 ids are 2 calls: 30 tags, then 10", async () => {
    const t = await setup();
    t.source.add(...ids(40));
    t.purger.start();
    await t.runUntil(() => t.source.pending.size === 0);
    expect(t.applied.map((tags) => tags.length)).toEqual([30, 10]);
    expect(t.applied.flat()).toEqual(ids(40).map((id) => `item:${id}`));
  });

  it("ids that differ only in case share one tag, as Cloudflare's tags ignore case", async () => {
    const t = await setup();
    t.source.add("Abc", "abc", "ABC");
    t.purger.start();
    await t.runUntil(() => t.source.pending.size === 0);
    expect(t.applied).toEqual([["item:Abc"]]);
  });

  it("never sends faster than the configured rate: 2,000 ids on Pro go out as 67 calls within the bucket", async () => {
    const t = await setup({ plan: "pro" });
    t.source.add(...ids(2000));
    t.purger.start();
    await t.runUntil(() => t.source.pending.size === 0);
    expect(t.standIn.calls).toHaveLength(67);
    expect(t.standIn.calls.every((c) => c.outcome === "accepted")).toBe(true);
    expect(overRate(t.standIn.calls.map((c) => c.at), PURGE_PLANS.pro)).toBeNull();
  });

  it("429 and 5xx are retried with backoff, Retry-After honoured, and retries never exceed the rate", async () => {
    const t = await setup({ plan: "pro" });
    t.source.add(...ids(300));
    t.standIn.setFault({ kind: "429", count: 3, retryAfterS: 1 });
    t.purger.start();
    await t.runUntil(() => t.purger.stats().retried === 3);
    t.standIn.setFault({ kind: "5xx", count: 2, status: 503 });
    await t.runUntil(() => t.source.pending.size === 0);
    const calls = t.standIn.calls;
    expect(calls.filter((c) => c.fault === "429")).toHaveLength(3);
    expect(calls.filter((c) => c.fault === "5xx")).toHaveLength(2);
    for (let i = 1; i < 3; i++) expect(calls[i]!.at - calls[i - 1]!.at).toBeGreaterThanOrEqual(1000);
    expect(overRate(calls.map((c) => c.at), PURGE_PLANS.pro)).toBeNull();
    expect(t.purger.stats()).toMatchObject({ state: "ok", retried: 5, refused: 0, fallbacks: 0, purgedTags: 300 });
    // One line per state change: five failures in a row are one "retrying", then one "ok".
    expect(t.lines).toEqual([
      expect.stringMatching(/^purge: retrying with backoff: HTTP 429 .*971 Please wait/),
      expect.stringMatching(/^purge: ok: purging by tag again/),
    ]);
    expect(t.purger.stats().lastError).toContain("HTTP 503");
  });

  it("when the account's bucket is smaller than ours (others purge too), 429s pace us down and everything is purged", async () => {
    const t = await setup({ plan: "free", purgerPlan: PURGE_PLANS.enterprise });
    t.source.add(...ids(900));
    t.purger.start();
    await t.runUntil(() => t.source.pending.size === 0);
    const accepted = t.standIn.calls.filter((c) => c.outcome === "accepted");
    expect(accepted).toHaveLength(30);
    expect(t.standIn.calls.some((c) => c.outcome === "rate-limited")).toBe(true);
    expect(overRate(accepted.map((c) => c.at), PURGE_PLANS.free)).toBeNull();
    expect(t.purger.stats()).toMatchObject({ state: "ok", fallbacks: 0, purgedTags: 900 });
  });

  it("a bad token is refused loudly once, with the fix, and retried slowly; the token is not logged", async () => {
    const t = await setup({ token: "wrong-secret-token" });
    t.source.add("a");
    t.purger.start();
    await t.runUntil(() => t.purger.stats().refused === 4);
    expect(t.purger.stats()).toMatchObject({ state: "refused", retried: 0, pending: 1 });
    // The refusal once; the fallback once (refused twice, failing over 30 s), still refused, with no further lines.
    expect(t.lines).toHaveLength(2);
    expect(t.lines[0]).toContain("purge: REFUSED by Cloudflare: HTTP 401: 10000 Authentication error");
    expect(t.lines[0]).toContain(`Zone → Cache Purge → Purge for the zone ${ZONE}`);
    expect(t.lines[0]).toContain("Retrying every 60 s");
    expect(t.lines[1]).toMatch(/^purge: FALLBACK: purges have failed for 120 s/);
    expect(t.lines.join("\n")).not.toContain("wrong-secret-token");
    const times = t.standIn.calls.map((c) => c.at);
    expect(times[2]! - times[1]!).toBe(60_000);
  });

  it("a token without the permission is reported; once granted, the next attempt purges the same tags, not everything", async () => {
    const t = await setup({ token: NO_PURGE });
    t.source.add("a", "b");
    t.purger.start();
    await t.runUntil(() => t.purger.stats().refused === 1);
    expect(t.purger.stats().state).toBe("refused");
    expect(t.lines[0]).toContain("HTTP 403: 10000 Authentication error. Fix: create an API token with the permission Zone → Cache Purge → Purge");
    t.standIn.grantPurge(NO_PURGE);
    await t.runUntil(() => t.source.pending.size === 0);
    expect(t.applied).toEqual([["item:a", "item:b"]]);
    expect(t.purger.stats()).toMatchObject({ state: "ok", fallbacks: 0, refused: 1 });
    expect(t.lines.slice(1)).toEqual([expect.stringMatching(/^purge: ok/)]);
  });

  it("refused twice over more than 30 s: the next attempt is one wide purge", async () => {
    const t = await setup({ token: NO_PURGE });
    t.source.add("a", "b");
    t.purger.start();
    await t.runUntil(() => t.purger.stats().refused === 2);
    t.standIn.grantPurge(NO_PURGE);
    await t.runUntil(() => t.source.pending.size === 0);
    expect(t.applied).toEqual([[ALL_ITEMS_TAG]]);
    expect(t.purger.stats()).toMatchObject({ state: "ok", fallbacks: 1, refused: 2 });
    expect(t.lines.slice(1)).toEqual([
      expect.stringMatching(/^purge: FALLBACK: purges have failed for 120 s \(bound 30 s\); sending one purge of tag "items"/),
      expect.stringMatching(/^purge: ok: one purge of tag "items" covered 2 pending changes/),
    ]);
  });

  /** One change to `a`, purged past one `fault`; the wait between the failed call and the next. */
  async function purgedPast(fault: StandInFault) {
    const t = await setup();
    t.standIn.setFault(fault);
    t.source.add("a");
    t.purger.start();
    await t.runUntil(() => t.source.pending.size === 0);
    const [first, second] = t.standIn.calls.map((c) => c.at);
    return { t, waited: second! - first! };
  }

  it("a 503's Retry-After is honoured like a 429's (the backoff alone would retry within 250 ms)", async () => {
    const { t, waited } = await purgedPast({ kind: "5xx", count: 1, retryAfterS: 5 });
    expect(waited).toBeGreaterThanOrEqual(5_000);
    expect(t.purger.stats()).toMatchObject({ state: "ok", retried: 1, calls: 2 });
  });

  it("one 429 whose Retry-After is longer than the failing bound is waited out, then the same tag is purged, not everything", async () => {
    const { t, waited } = await purgedPast({ kind: "429", count: 1, retryAfterS: 35 });
    expect(t.applied).toEqual([["item:a"]]);
    expect(waited).toBeGreaterThanOrEqual(35_000);
    expect(t.purger.stats()).toMatchObject({ state: "ok", fallbacks: 0 });
  });

  it("verify() at start: accepted for a good token; refused with the fix for a bad one, through the bucket", async () => {
    const good = await setup();
    expect(await good.purger.verify()).toMatchObject({ kind: "accepted" });
    expect(good.lines).toEqual([expect.stringContaining("purge: verified")]);
    const bad = await setup({ token: NO_PURGE });
    expect(await bad.purger.verify()).toMatchObject({ kind: "refused", status: 403 });
    expect(bad.purger.stats()).toMatchObject({ state: "refused", refused: 1, calls: 1 });
    expect(bad.lines).toEqual([expect.stringContaining("Zone → Cache Purge → Purge")]);
  });

  it("verify() at start that meets a 429 waits out its Retry-After before the first purge, and is not reported ok until a call is accepted", async () => {
    const t = await setup();
    t.standIn.setFault({ kind: "429", retryAfterS: 30 });
    expect(await t.purger.verify()).toMatchObject({ kind: "rate-limited" });
    expect(t.purger.stats().state).not.toBe("ok");
    const limitedAt = t.timers.now();
    t.source.add("a");
    t.purger.start();
    await t.runUntil(() => t.source.pending.size === 0);
    expect(t.timers.now() - limitedAt).toBeGreaterThanOrEqual(30_000);
    expect(t.purger.stats()).toMatchObject({ state: "ok", calls: 2 });
  });

  it("malformed answers are retried, saying what was wrong", async () => {
    const t = await setup();
    t.source.add("a");
    t.standIn.setFault({ kind: "malformed", count: 2 });
    t.purger.start();
    await t.runUntil(() => t.source.pending.size === 0);
    expect(t.purger.stats()).toMatchObject({ state: "ok", retried: 2, calls: 3 });
    expect(t.purger.stats().lastError).toContain("not Cloudflare's JSON envelope");
  });

  it("a hanging API times out and the call is retried", async () => {
    const t = await setup({ timeoutMs: 2_000 });
    t.source.add("a");
    t.standIn.setFault({ kind: "hang" });
    t.purger.start();
    await t.standIn.waitForCalls(1);
    expect(t.timers.pending).toBe(1); // the client's deadline; the loop is waiting on the call
    t.timers.runNext();
    await t.runUntil(() => t.source.pending.size === 0);
    expect(t.purger.stats()).toMatchObject({ state: "ok", retried: 1, calls: 2 });
    expect(t.purger.stats().lastError).toContain("no answer from the purge API within 2000 ms");
  });

  it("an unreachable API is retried with growing, capped backoff, then the fallback is tried, and both keep going", async () => {
    const attempts: number[] = [];
    const t = await setup({
      wrapApi: (api) => ({
        purgeTags: (tags, signal) => (attempts.push(t.timers.now()), api.purgeTags(tags, signal)),
        verify: (signal) => api.verify(signal),
      }),
    });
    await t.standIn.close();
    t.source.add("a");
    t.purger.start();
    await t.runUntil(() => attempts.length === 14);
    const gaps = attempts.slice(1).map((at, i) => at - attempts[i]!);
    expect(gaps.every((gap, i) => i === 0 || gap >= gaps[i - 1]!)).toBe(true);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(30_000);
    expect(t.purger.stats()).toMatchObject({ state: "fallback", retried: 14, fallbacks: 0, dropped: 0, pending: 1 });
    expect(t.purger.stats().lastError).toContain("ECONNREFUSED");
    expect(t.lines).toEqual([
      expect.stringMatching(/^purge: retrying with backoff: could not reach .*ECONNREFUSED/),
      expect.stringMatching(/^purge: FALLBACK: purges have failed for \d+ s/),
    ]);
  });

  it("a backlog over the bound is one wide purge of `items`; the cut is marked, later changes go by tag", async () => {
    const t = await setup({ plan: "free" });
    t.source.add(...ids(1000));
    // The stand-in applies a purge before it answers: a change committed then comes after the cut.
    t.onPurge = (tags) => {
      if (tags[0] === ALL_ITEMS_TAG) t.source.add("late");
    };
    t.purger.start();
    await t.runUntil(() => t.source.pending.size === 0);
    expect(t.applied).toEqual([[ALL_ITEMS_TAG], ["item:late"]]);
    expect(t.purger.stats()).toMatchObject({ state: "ok", fallbacks: 1, purgedTags: 2, calls: 2 });
    expect(t.lines).toEqual([
      expect.stringContaining("purge: FALLBACK: more than 825 changes pending (the bound)"),
      expect.stringContaining('purge: ok: one purge of tag "items" covered 1000 pending changes'),
    ]);
  });

  it("covers changes to ids no request can name without a tag (a user's table may hold any text)", async () => {
    const t = await setup();
    t.source.add("€-legacy", "has space");
    t.purger.start();
    await t.runUntil(() => t.source.pending.size === 0);
    expect(t.applied).toEqual([]); // nothing at the edge is keyed by them: no call, no token spent
    t.source.add("€-again", "ok");
    await t.runUntil(() => t.source.pending.size === 0);
    expect(t.applied).toEqual([["item:ok"]]);
    expect(t.purger.stats()).toMatchObject({ state: "ok", purgedTags: 1, calls: 1, pending: 0 });
  });

  it("counts the backlog past its bound, however large overridden rates make the bound", async () => {
    // CLOUDFLARE_PURGE_BURST=3000, CLOUDFLARE_PURGE_RATE=25: a bound of 30 × (3000 + 25 × 30) = 112,500.
    const t = await setup({ purgerPlan: { rate: 25, burst: 3000 } });
    t.source.add(...ids(112_501));
    t.purger.start();
    await t.runUntil(() => t.purger.stats().fallbacks === 1);
    expect(t.source.backlogAsked[0]).toBe(112_501);
    expect(t.lines[0]).toContain("purge: FALLBACK: more than 112500 changes pending (the bound)");
  });

  it("stop() leaves no timer behind, idle or with a call hanging (cancelled after the bound)", async () => {
    const idle = await setup();
    idle.purger.start();
    await idle.runUntil(() => true);
    expect(idle.timers.pending).toBe(1); // the poll
    await idle.purger.stop();
    expect(idle.timers.pending).toBe(0);

    const busy = await setup({ timeoutMs: 60_000, purger: { stopTimeoutMs: 5_000 } });
    busy.source.add("a");
    busy.standIn.setFault({ kind: "hang" });
    busy.purger.start();
    await busy.standIn.waitForCalls(1);
    const stopped = busy.purger.stop();
    expect(busy.timers.pending).toBe(2); // the call's deadline and stop's bound
    busy.timers.runNext();
    await stopped;
    expect(busy.timers.pending).toBe(0);
    expect(busy.source.pending.size).toBe(1); // not purged: left for the next leader
    busy.purger.wake(); // a stopped purger ignores wakes
    expect(busy.timers.pending).toBe(0);
  });
});

describe("Purger: each purge once more, for fills in flight", () => {
  const REPEAT = 6_000;
  /** Advances virtual time until `at`, letting the loop run every round that falls due on the way. */
  const until = (t: Awaited<ReturnType<typeof setup>>, at: number) => t.runUntil(() => t.timers.now() >= at || (t.timers.nextAt() ?? Infinity) > at);

  it("sends each accepted purge's tags again repeatAfterMs after it, once", async () => {
    const t = await setup({ purger: { repeatAfterMs: REPEAT } });
    t.source.add("a", "b");
    t.purger.start();
    await t.runUntil(() => t.applied.length === 2);
    const [first, repeat] = t.tagCalls();
    expect(t.applied).toEqual([["item:a", "item:b"], ["item:a", "item:b"]]);
    expect(repeat!.at - first!.at).toBe(REPEAT);
    await until(t, repeat!.at + 5 * REPEAT);
    expect(t.applied).toHaveLength(2);
    expect(t.purger.stats()).toMatchObject({ state: "ok", calls: 2, purgedTags: 4, repeatedTags: 2, pending: 0 });
  });

  it("a due repeat rides in the spare tags of the next call; a tag purged again is owed from its latest purge", async () => {
    const t = await setup({ purger: { repeatAfterMs: REPEAT } });
    t.source.add("a", "b");
    t.purger.start();
    await t.runUntil(() => t.applied.length === 1);
    const firstAt = t.tagCalls()[0]!.at;
    await until(t, firstAt + REPEAT - 50);
    await t.purger.whenIdle();
    t.timers.advanceTo(firstAt + REPEAT - 50);
    t.source.add("c", "b");
    t.purger.wake(); // the window closes 50 ms after a and b fall due
    await t.runUntil(() => t.applied.length === 2);
    expect(t.applied[1]).toEqual(["item:c", "item:b", "item:a"]); // b's own first purge covers its repeat
    const secondAt = t.tagCalls()[1]!.at;
    await t.runUntil(() => t.applied.length === 3);
    expect(t.applied[2]).toEqual(["item:c", "item:b"]);
    expect(t.tagCalls()[2]!.at).toBe(secondAt + REPEAT);
    expect(t.purger.stats()).toMatchObject({ calls: 3, repeatedTags: 3 }); // b's first purge covered its repeat: not counted
  });

  it("a repeat waits for first purges, which decide staleness, but no longer than another repeatAfterMs; a late first purge owes none", async () => {
    // One call every 10 s: the bucket, not the loop, sets the pace.
    const t = await setup({ purgerPlan: { rate: 0.1, burst: 1 }, purger: { repeatAfterMs: REPEAT } });
    t.source.add(...ids(90));
    t.purger.start();
    await t.runUntil(() => t.applied.length === 4);
    const tags = (from: number, to: number) => ids(90).slice(from, to).map((id) => `item:${id}`);
    // 10 s: the first call's repeats are due, but 60 first purges wait; 20 s: they are overdue and go first.
    // The later calls owe nothing: their changes were seen 10 s and more before, so had committed long before.
    expect(t.applied).toEqual([tags(0, 30), tags(30, 60), tags(0, 30), tags(60, 90)]);
    await until(t, t.timers.now() + 5 * REPEAT);
    expect(t.applied).toHaveLength(4);
    expect(overRate(t.standIn.calls.map((c) => c.at), { rate: 0.1, burst: 1 })).toBeNull();
  });

  it("a wide purge is repeated too, and its repeat covers the tag repeats owed before it", async () => {
    const t = await setup({ plan: "free", purger: { repeatAfterMs: REPEAT } });
    t.source.add("a");
    t.purger.start();
    await t.runUntil(() => t.applied.length === 1);
    t.source.add(...ids(1000)); // over the free plan's bound of 825: one wide purge
    t.purger.wake();
    await t.runUntil(() => t.applied.length === 3);
    expect(t.applied).toEqual([["item:a"], [ALL_ITEMS_TAG], [ALL_ITEMS_TAG]]);
    expect(t.tagCalls()[2]!.at - t.tagCalls()[1]!.at).toBe(REPEAT);
    await until(t, t.tagCalls()[2]!.at + 3 * REPEAT);
    expect(t.applied).toHaveLength(3);
  });

  it("more tags owed than the backlog bound become one wide repeat", async () => {
    const t = await setup({ purger: { repeatAfterMs: REPEAT, backlogBound: 50 } });
    t.source.add(...ids(40));
    t.purger.start();
    await t.runUntil(() => t.applied.length === 2);
    t.source.add(...ids(20, "more"));
    t.purger.wake();
    await t.runUntil(() => t.applied.length === 4);
    expect(t.applied.map((tags) => (tags[0] === ALL_ITEMS_TAG ? tags : tags.length))).toEqual([30, 10, 20, [ALL_ITEMS_TAG]]);
    expect(t.tagCalls()[3]!.at - t.tagCalls()[2]!.at).toBe(REPEAT);
  });

  it("a failed repeat is retried like any call", async () => {
    const t = await setup({ purger: { repeatAfterMs: REPEAT } });
    t.source.add("a");
    t.purger.start();
    await t.runUntil(() => t.applied.length === 1);
    t.standIn.setFault({ kind: "5xx", count: 2, status: 503 });
    await t.runUntil(() => t.applied.length === 2);
    expect(t.applied[1]).toEqual(["item:a"]);
    expect(t.purger.stats()).toMatchObject({ state: "ok", retried: 2, repeatedTags: 1 });
  });

  it("repeats failing for longer than the failing bound never make the purger fall back to a wide purge", async () => {
    const t = await setup({ purger: { repeatAfterMs: REPEAT } });
    t.source.add("a");
    t.purger.start();
    await t.runUntil(() => t.applied.length === 1);
    const firstAt = t.tagCalls()[0]!.at;
    t.standIn.setFault({ kind: "5xx", count: 9 });
    await t.runUntil(() => t.purger.stats().retried === 9);
    await t.purger.whenIdle();
    expect(t.timers.now() - firstAt).toBeGreaterThan(30_000 + REPEAT);
    expect(t.purger.stats().state).toBe("retrying");
    t.source.add("b");
    t.purger.wake();
    await t.runUntil(() => t.applied.length === 2);
    expect(t.applied.slice(1)).toEqual([["item:b", "item:a"]]); // b by tag, the overdue repeat in its spare tags
    expect(t.purger.stats()).toMatchObject({ state: "ok", fallbacks: 0 });
  });

  it("stop() without drain (the lead moved on) keeps the repeats owed, and sends them if it leads again: from then, since another leader may have purged the tag meanwhile", async () => {
    const t = await setup({ purger: { repeatAfterMs: REPEAT } });
    t.source.add("a");
    t.purger.start();
    await t.runUntil(() => t.applied.length === 1);
    await t.stop();
    expect(t.timers.pending).toBe(0);
    expect(t.purger.stats().repeatsOwed).toBe(1);
    t.timers.advance(2_000);
    t.source.add("a", "b"); // the leader meanwhile purged a again, and b, then crashed owing both repeats
    t.source.pending.clear();
    const ledAgainAt = t.timers.now();
    t.purger.start();
    await t.runUntil(() => t.applied.length === 2);
    expect(t.applied[1]).toEqual(["item:b", "item:a"]);
    expect(t.tagCalls()[1]!.at).toBe(ledAgainAt + REPEAT);
  });

  it("a purger stopped while the store answers sends nothing more: the changes stay pending for the next leader", async () => {
    const t = await setup({ purger: { repeatAfterMs: REPEAT } });
    let release = () => {};
    let entered = () => {};
    const taking = new Promise<void>((resolve) => (entered = resolve));
    const take = t.source.take.bind(t.source);
    t.source.take = async (limit) => {
      entered();
      await new Promise<void>((resolve) => (release = resolve));
      return take(limit);
    };
    t.source.add("a");
    t.purger.start();
    await taking;
    let stopped = false;
    const stopping = t.purger.stop().then(() => (stopped = true));
    t.timers.runNext(); // stop's bound passes with the store still silent
    release();
    await stopping;
    expect(stopped).toBe(true);
    expect(t.applied).toEqual([]);
    expect(t.source.pending.size).toBe(1);
    expect(t.timers.pending).toBe(0);
  });

  it("ids that differ only in case are owed one repeat, as they share one tag", async () => {
    const t = await setup({ purger: { repeatAfterMs: REPEAT } });
    t.source.add("Abc");
    t.purger.start();
    await t.runUntil(() => t.applied.length === 1);
    t.source.add("abc");
    t.purger.wake();
    await t.runUntil(() => t.applied.length === 2);
    expect(t.purger.stats().repeatsOwed).toBe(1);
    await t.runUntil(() => t.applied.length === 3);
    await until(t, t.timers.now() + 3 * REPEAT);
    expect(t.applied).toEqual([["item:Abc"], ["item:abc"], ["item:abc"]]);
  });

  it("a repeat accepted while first purges keep failing does not reset their clock towards the fallback", async () => {
    // The API refuses every call that names item:b0 (some other reason), and takes the rest.
    const t = await setup({
      purger: { repeatAfterMs: REPEAT },
      wrapApi: (api) => ({ ...api, purgeTags: (tags, signal) => (tags.includes("item:b0") ? Promise.resolve({ kind: "retryable", detail: "HTTP 500" }) : api.purgeTags(tags, signal)) }),
    });
    t.source.add("a");
    t.purger.start();
    await t.runUntil(() => t.applied.length === 1);
    t.source.add(...ids(30, "b")); // a full call: no spare tag for a's repeat
    t.purger.wake();
    await t.runUntil(() => t.purger.stats().retried > 0);
    const failingFrom = t.timers.now();
    await t.runUntil(() => t.purger.stats().fallbacks === 1);
    expect(t.applied).toEqual([["item:a"], ["item:a"], [ALL_ITEMS_TAG]]); // a's overdue repeat went alone, then the fallback
    expect(t.tagCalls()[2]!.at - failingFrom).toBeLessThan(30_000 + 30_000); // the bound plus one capped backoff
    const fallbackLine = t.lines.findIndex((line) => line.startsWith("purge: FALLBACK: purges have failed"));
    expect(fallbackLine).toBeGreaterThan(0);
    expect(t.lines.slice(0, fallbackLine).filter((line) => line.startsWith("purge: ok"))).toEqual([]); // no flapping
  });

  it("on Free, a repeat takes a call of its own only with half the bucket left: below, it rides in the next write's call", async () => {
    const t = await setup({ plan: "free", initialTokens: 5, purger: { repeatAfterMs: REPEAT } });
    t.source.add("a");
    t.purger.start();
    await t.runUntil(() => t.applied.length === 1);
    const firstAt = t.tagCalls()[0]!.at;
    await until(t, firstAt + 20_000); // a's repeat fell due 14 s ago: 4 tokens left, 13 needed for it alone
    await t.purger.whenIdle();
    t.timers.advanceTo(firstAt + 20_000);
    expect(t.applied).toHaveLength(1);
    t.source.add("b");
    t.purger.wake();
    await t.runUntil(() => t.applied.length === 2);
    expect(t.applied[1]).toEqual(["item:b", "item:a"]);
    expect(t.tagCalls()[1]!.at).toBe(firstAt + 20_100); // b's first purge was not held back
  });

  it("on Free, with no write to ride on, a repeat goes alone once the bucket has refilled to half", async () => {
    const t = await setup({ plan: "free", initialTokens: 5, purger: { repeatAfterMs: REPEAT } });
    t.source.add("a");
    t.purger.start();
    await t.runUntil(() => t.applied.length === 2);
    // 4 tokens after the first call; 13 at 5 a minute: 9 × 12 s later.
    expect(t.tagCalls()[1]!.at - t.tagCalls()[0]!.at).toBe(108_000);
    expect(t.applied[1]).toEqual(["item:a"]);
  });

  it("a leader shutting down goes on purging first purges while it sends the repeats it owes", async () => {
    const t = await setup({ purger: { repeatAfterMs: REPEAT } });
    t.source.add("a");
    t.purger.start();
    await t.runUntil(() => t.applied.length === 1);
    const firstAt = t.tagCalls()[0]!.at;
    t.source.add("b"); // written on another instance as this one begins to shut down
    t.purger.wake();
    await t.stop({ drain: true });
    expect(t.applied).toEqual([["item:a"], ["item:b"], ["item:a"], ["item:b"]]);
    expect(t.tagCalls().map((c) => c.at - firstAt)).toEqual([0, 100, REPEAT, REPEAT + 100]); // b at once; each repeat when due
    expect(t.source.pending.size).toBe(0);
    expect(t.timers.pending).toBe(0);
  });

  it("after the lead is lost and won again, an old failure does not send the next change to the wide fallback", async () => {
    const t = await setup({ purger: { repeatAfterMs: REPEAT } });
    t.source.add("a");
    t.purger.start();
    await t.runUntil(() => t.applied.length === 1);
    t.standIn.setFault({ kind: "5xx", count: 1_000 });
    t.source.add("b");
    t.purger.wake();
    await t.runUntil(() => t.purger.stats().retried > 0);
    await t.stop(); // the lead moves on; another leader purges b
    t.source.pending.clear();
    t.standIn.setFault(null);
    t.timers.advance(99_000);
    t.source.add("c"); // pending when it leads again: its first round takes it
    t.purger.start();
    await t.runUntil(() => t.applied.some((tags) => tags.includes("item:c")));
    expect(t.applied.flat()).not.toContain(ALL_ITEMS_TAG);
    expect(t.purger.stats().fallbacks).toBe(0);
  });

  it("stop() sends the repeats still owed as they fall due, then leaves no timer behind", async () => {
    const t = await setup({ purger: { repeatAfterMs: REPEAT } });
    t.source.add("a");
    t.purger.start();
    await t.runUntil(() => t.applied.length === 1);
    await t.stop({ drain: true });
    expect(t.applied).toEqual([["item:a"], ["item:a"]]);
    expect(t.tagCalls()[1]!.at - t.tagCalls()[0]!.at).toBe(REPEAT);
    expect(t.timers.pending).toBe(0);
  });

  it("stop() past stopDrainMs sends what is still owed at once, and says so", async () => {
    const t = await setup({ purger: { repeatAfterMs: REPEAT, stopDrainMs: 2_000 } });
    t.source.add("a");
    t.purger.start();
    await t.runUntil(() => t.applied.length === 1);
    const stopAt = t.timers.now();
    await t.stop({ drain: true });
    expect(t.applied).toEqual([["item:a"], ["item:a"]]);
    expect(t.tagCalls()[1]!.at).toBe(stopAt + 2_000);
    expect(t.lines).toContain("purge: shutting down: sending the 1 repeats still owed as they fall due, within 2 s (1 of them due later go then)");
    expect(t.timers.pending).toBe(0);
  });

  it("a new leader repeats, one repeat delay after it starts, what was purged within three repeat delays of the newest purge (its predecessor may have died owing those repeats)", async () => {
    const t = await setup({ purger: { repeatAfterMs: REPEAT } });
    t.source.add("old");
    t.timers.advance(1);
    t.source.add("a", "B", "b", "not an id");
    t.timers.advance(3 * REPEAT - 1);
    t.source.add("c");
    // The leader before purged all of these, then crashed before any repeat; c's change is newest.
    t.source.pending.clear();
    t.timers.advance(60_000); // however long the lead stayed vacant
    const startAt = t.timers.now();
    t.purger.start();
    await t.runUntil(() => t.applied.length === 1);
    expect(t.applied).toEqual([["item:c", "item:b", "item:a"]]); // not "old": made three repeat delays before c
    expect(t.tagCalls()[0]!.at).toBe(startAt + REPEAT);
    expect(t.lines).toContain(`purge: leading: 3 tags purged before this lead began will be purged once more in ${REPEAT} ms, in case whoever led before still owed those repeats (docs/purge.md)`);
    expect(t.purger.stats()).toMatchObject({ repeatedTags: 3, repeatsOwed: 0 });
    await until(t, t.timers.now() + 5 * REPEAT);
    expect(t.applied).toHaveLength(1);
  });

  it("a new leader inherits no repeat when nothing was purged, and a wide one for more distinct tags than the backlog bound", async () => {
    const quiet = await setup({ purger: { repeatAfterMs: REPEAT } });
    quiet.source.add("a"); // pending: its first purge owes its own repeat
    quiet.purger.start();
    await quiet.runUntil(() => quiet.applied.length === 2);
    expect(quiet.applied).toEqual([["item:a"], ["item:a"]]);
    expect(quiet.lines.filter((line) => line.startsWith("purge: leading:"))).toEqual([]);

    const busy = await setup({ purger: { repeatAfterMs: REPEAT, backlogBound: 3 } });
    busy.source.add("a", "b", "c", "d"); // four tags within the window, one more than the bound
    busy.source.pending.clear();
    busy.purger.start();
    await busy.runUntil(() => busy.applied.length === 1);
    expect(busy.applied).toEqual([[ALL_ITEMS_TAG]]);
  });

  it("a new lead reads what it inherits at once, whatever backoff an earlier lead left", async () => {
    const t = await setup({ purger: { repeatAfterMs: REPEAT } });
    t.standIn.setFault({ kind: "5xx", count: 1_000 });
    t.source.add("a");
    t.purger.start();
    await t.runUntil(() => t.purger.stats().retried >= 5);
    await t.purger.stop(); // the lead moves on mid-backoff: no virtual time passes
    const reads: number[] = [];
    const latest = t.source.latest.bind(t.source);
    t.source.latest = (limit) => {
      reads.push(t.timers.now());
      return latest(limit);
    };
    const startAt = t.timers.now();
    t.purger.start();
    await t.purger.whenIdle(); // parked on the earlier lead's backoff
    expect(t.timers.nextAt()).toBeGreaterThan(startAt);
    expect(reads).toEqual([startAt]);
  });

  it("a new leader that cannot read the newest changes owes the only safe repeat, of every item, and purges its pending changes meanwhile", async () => {
    const t = await setup({ purger: { repeatAfterMs: REPEAT } });
    t.source.latest = () => Promise.reject(new Error("the store is away"));
    t.source.add("a");
    const startAt = t.timers.now();
    t.purger.start();
    await t.runUntil(() => t.applied.length === 2);
    expect(t.applied).toEqual([["item:a"], [ALL_ITEMS_TAG, "item:a"]]); // a's own repeat, owed after the wide one, rides along
    expect(t.tagCalls()[1]!.at).toBeGreaterThanOrEqual(startAt + REPEAT);
    expect(t.lines.some((line) => line.startsWith(`purge: leading: every item (tag "${ALL_ITEMS_TAG}")`) && line.includes("the store is away"))).toBe(true);
    expect(t.purger.stats()).toMatchObject({ state: "ok", retried: 0 });
  });

  it("repeatAfterMs 0 repeats nothing", async () => {
    const t = await setup({ purger: { repeatAfterMs: 0 } });
    t.source.add("a");
    t.purger.start();
    await t.runUntil(() => t.applied.length === 1);
    await until(t, t.timers.now() + 5 * REPEAT);
    expect(t.applied).toEqual([["item:a"]]);
    expect(t.purger.stats().repeatedTags).toBe(0);
  });
});

describe("inheritedRepeats: what a new leader repeats for the one before", () => {
  const change = (id: string, changedAt: number, purged = true): RecentChange => ({ id, purged, changedAt });

  it("takes the purged changes made within three repeat delays of the newest purged one, folded as tags", () => {
    const latest = [change("pending", 50_000, false), change("A", 30_000), change("a", 29_000), change("b", 18_001), change("old", 18_000)];
    expect(inheritedRepeats(latest, 10, 4_000)).toEqual(["item:A", "item:b"]);
  });

  it("a change to every item (a TRUNCATE) is repeated as the all-items tag; ids no request can name are left out", () => {
    expect(inheritedRepeats([change("x", 2), change("", 1)], 10, 6_000)).toEqual([ALL_ITEMS_TAG]);
    expect(inheritedRepeats([change("not an id", 2)], 10, 6_000)).toEqual([]);
  });

  it("none with repeats off or nothing purged; the all-items tag when what was read may not reach back far enough", () => {
    expect(inheritedRepeats([change("a", 1)], 10, 0)).toEqual([]);
    expect(inheritedRepeats([change("a", 1, false)], 2, 6_000)).toEqual([]);
    expect(inheritedRepeats([change("a", 2, false), change("b", 1, false)], 2, 6_000)).toEqual([ALL_ITEMS_TAG]); // the purges are further back
    expect(inheritedRepeats([change("a", 10_000), change("b", 9_000)], 2, 6_000)).toEqual([ALL_ITEMS_TAG]);
    expect(inheritedRepeats([change("a", 20_000), change("b", 2_000)], 2, 6_000)).toEqual(["item:a"]);
  });
});
