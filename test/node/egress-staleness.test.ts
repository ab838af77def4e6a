// Staleness arithmetic of the egress meter (bench/egress/staleness.ts): the poll schedule, the bound, nearest-rank
// percentiles, what counts as "the new version", and the prober on a virtual clock (no real time passes).

import { describe, expect, it } from "vitest";
import type { ProbeAnswer } from "../../bench/egress/replay.ts";
import { percentile } from "../../bench/lib/stats.ts";
import { giveUpMs, pollDelayMs, showsWrite, StalenessProber, summarizeStaleness, type StalenessSample } from "../../bench/egress/staleness.ts";

describe("staleness arithmetic", () => {
  it("polls every 10 ms at first, 5% of the elapsed time later, never more than 100 ms apart", () => {
    expect(pollDelayMs(0)).toBe(10);
    expect(pollDelayMs(199)).toBe(10);
    expect(pollDelayMs(600)).toBe(30);
    expect(pollDelayMs(2000)).toBe(100);
    expect(pollDelayMs(60_000)).toBe(100);
  });

  it("gives up at the edge's TTL plus 2 s, the TTL capped at 20 s", () => {
    expect(giveUpMs(10)).toBe(12_000);
    expect(giveUpMs(60)).toBe(22_000);
    expect(giveUpMs(86_400)).toBe(22_000);
    expect(giveUpMs(0)).toBe(2000);
  });

  it("takes nearest-rank percentiles", () => {
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(hundred, 0.5)).toBe(50);
    expect(percentile(hundred, 0.99)).toBe(99);
    expect(percentile([5, 7, 9], 0.5)).toBe(7);
    expect(percentile([5, 7, 9], 0.99)).toBe(9);
    expect(percentile([42], 0.99)).toBe(42);
    expect(percentile([], 0.5)).toBe(0);
  });

  it("summarizes samples, marking figures that rest on a probe that gave up as lower bounds", () => {
    const sample = (ms: number, outcome: StalenessSample["outcome"] = "served"): StalenessSample => ({ id: "1", ms, outcome, probes: 1 });
    const served = summarizeStaleness([sample(120.04), sample(80), sample(300)], 3, 22_000);
    expect(served).toMatchObject({ writes: 3, probed: 3, served: 3, gaveUp: 0, p50: 120, p99: 300, max: 300, p99AtLeast: false, maxAtLeast: false });
    expect(served.samplesMs).toEqual([80, 120, 300]);

    const many = [...Array.from({ length: 98 }, (_, i) => sample(100 + i)), sample(12_000, "gave-up"), sample(12_000, "gave-up")];
    const bounded = summarizeStaleness(many, 100, 12_000);
    expect(bounded).toMatchObject({ served: 98, gaveUp: 2, p50: 149, p99: 12_000, max: 12_000, p99AtLeast: true, maxAtLeast: true });
    // One gave up in 200: p99 is a real sample, the max is a bound.
    const few = summarizeStaleness([...Array.from({ length: 199 }, () => sample(100)), sample(12_000, "gave-up")], 200, 12_000);
    expect(few).toMatchObject({ p99: 100, p99AtLeast: false, maxAtLeast: true });
  });

  it("counts the write's version or any later one as new, and a 404 after a DELETE", () => {
    const v2 = { etag: '"e2"' };
    const v3 = { etag: '"e3"' };
    expect(showsWrite({ status: 200, etag: '"e2"' }, [v2, v3])).toBe(true);
    expect(showsWrite({ status: 200, etag: '"e3"' }, [v2, v3])).toBe(true);
    expect(showsWrite({ status: 200, etag: '"e1"' }, [v2, v3])).toBe(false);
    expect(showsWrite({ status: 304, etag: '"e2"' }, [v2])).toBe(false);
    expect(showsWrite({ status: 404, etag: undefined }, [{ etag: undefined }])).toBe(true);
    expect(showsWrite({ status: 200, etag: '"e1"' }, [{ etag: undefined }])).toBe(false);
  });
});

/** An edge on a virtual clock: `serve(id)` says what it answers at the current time. */
function virtualEdge(serve: (id: string, now: number) => Pick<ProbeAnswer, "status" | "etag">) {
  let now = 0;
  const probed: Array<{ id: string; at: number }> = [];
  return {
    now: () => now,
    sleep: async (ms: number) => {
      now += ms;
    },
    probe: async (id: string): Promise<ProbeAnswer> => {
      now += 1; // a round trip
      probed.push({ id, at: now });
      return { ...serve(id, now), at: now, error: undefined };
    },
    probed,
  };
}

describe("StalenessProber (virtual clock)", () => {
  it("measures from the 204 to the first answer with the new ETag, polling on schedule", async () => {
    const edge = virtualEdge((_, t) => ({ status: 200, etag: t >= 300 ? '"e2"' : '"e1"' }));
    const prober = new StalenessProber({ probe: edge.probe, limitMs: 12_000, now: edge.now, sleep: edge.sleep });
    prober.watch({ id: "7" }, { at: 0, etag: '"e2"' });
    const [sample] = await prober.settle();
    expect(sample!.outcome).toBe("served");
    expect(sample!.ms).toBeGreaterThanOrEqual(300);
    expect(sample!.ms).toBeLessThanOrEqual(300 + 1 + pollDelayMs(300));
    // Probes 10 ms apart (+1 ms round trip) while young.
    expect(edge.probed[1]!.at - edge.probed[0]!.at).toBe(11);
    expect(sample!.probes).toBe(edge.probed.length);
  });

  it("gives up at the bound and records the bound", async () => {
    const edge = virtualEdge(() => ({ status: 200, etag: '"old"' }));
    const prober = new StalenessProber({ probe: edge.probe, limitMs: 2000, now: edge.now, sleep: edge.sleep });
    prober.watch({ id: "7" }, { at: 0, etag: '"new"' });
    expect(await prober.settle()).toEqual([{ id: "7", ms: 2000, outcome: "gave-up", probes: expect.any(Number) }]);
    expect(edge.now()).toBeLessThanOrEqual(2001);
  });

  it("lets a later write of the same id satisfy an earlier one's probe", async () => {
    // The edge goes straight from e1 to e3: the write of e2 was overtaken, not lost.
    const edge = virtualEdge((_, t) => ({ status: 200, etag: t >= 50 ? '"e3"' : '"e1"' }));
    const prober = new StalenessProber({ probe: edge.probe, limitMs: 12_000, now: edge.now, sleep: edge.sleep });
    prober.watch({ id: "7" }, { at: 0, etag: '"e2"' });
    prober.watch({ id: "7" }, { at: 5, etag: '"e3"' });
    const samples = await prober.settle();
    expect(samples.map((s) => s.outcome)).toEqual(["served", "served"]);
    expect(samples[0]!.ms).toBeGreaterThanOrEqual(50);
  });

  it("counts a DELETE as seen once the edge answers 404", async () => {
    const edge = virtualEdge((_, t) => (t >= 120 ? { status: 404, etag: undefined } : { status: 200, etag: '"e1"' }));
    const prober = new StalenessProber({ probe: edge.probe, limitMs: 12_000, now: edge.now, sleep: edge.sleep });
    prober.watch({ id: "9" }, { at: 0, etag: undefined });
    const [sample] = await prober.settle();
    expect(sample).toMatchObject({ outcome: "served" });
    expect(sample!.ms).toBeGreaterThanOrEqual(120);
  });
});
