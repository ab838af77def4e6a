import { describe, expect, it } from "vitest";
import { RestartPolicy } from "../../src/origin/cluster/restart-policy.ts";

const options = { baseDelayMs: 100, maxDelayMs: 1000, maxStartFailures: 3, stableAfterMs: 10_000 };

describe("cluster restart policy", () => {
  it("replaces a worker that served for a while after the base delay, every time", () => {
    const policy = new RestartPolicy(options);
    for (let i = 0; i < 10; i++) expect(policy.decide({ slot: 1, wasReady: true, readyForMs: 60_000, temporary: false })).toEqual({ restart: true, delayMs: 100 });
  });

  it("doubles the delay for a worker that keeps dying soon after it was ready, capped, and never gives up", () => {
    const policy = new RestartPolicy(options);
    const delays = Array.from({ length: 8 }, () => policy.decide({ slot: 2, wasReady: true, readyForMs: 50, temporary: false }));
    expect(delays.map((d) => (d.restart ? d.delayMs : "gave up"))).toEqual([100, 200, 400, 800, 1000, 1000, 1000, 1000]);
    // A stable life starts the backoff over.
    expect(policy.decide({ slot: 2, wasReady: true, readyForMs: 10_000, temporary: false })).toEqual({ restart: true, delayMs: 100 });
  });

  it("retries a start that failed because the store could not be reached for now (exit 75) for as long as it fails", () => {
    const policy = new RestartPolicy(options);
    const delays = Array.from({ length: 10 }, () => policy.decide({ slot: 4, wasReady: false, readyForMs: 0, temporary: true }));
    expect(delays.map((d) => (d.restart ? d.delayMs : "gave up"))).toEqual([100, 200, 400, 800, 1000, 1000, 1000, 1000, 1000, 1000]);
    // Nor do they count toward the failures that make it give up.
    policy.decide({ slot: 4, wasReady: false, readyForMs: 0, temporary: false });
    policy.decide({ slot: 4, wasReady: false, readyForMs: 0, temporary: false });
    expect(policy.decide({ slot: 4, wasReady: false, readyForMs: 0, temporary: false }).restart).toBe(false);
  });

  it("gives up after maxStartFailures other failed starts in a row of one slot", () => {
    const policy = new RestartPolicy(options);
    expect(policy.decide({ slot: 3, wasReady: true, readyForMs: 60_000, temporary: false })).toEqual({ restart: true, delayMs: 100 });
    expect(policy.decide({ slot: 3, wasReady: false, readyForMs: 0, temporary: false })).toEqual({ restart: true, delayMs: 200 });
    expect(policy.decide({ slot: 3, wasReady: false, readyForMs: 0, temporary: false })).toEqual({ restart: true, delayMs: 400 });
    expect(policy.decide({ slot: 3, wasReady: false, readyForMs: 0, temporary: false })).toEqual({ restart: false, reason: "worker 3 failed to start 3 times in a row" });
  });

  it("counts start failures per slot, and a successful start clears them", () => {
    const policy = new RestartPolicy(options);
    policy.decide({ slot: 1, wasReady: false, readyForMs: 0, temporary: false });
    policy.decide({ slot: 1, wasReady: false, readyForMs: 0, temporary: false });
    expect(policy.decide({ slot: 2, wasReady: false, readyForMs: 0, temporary: false }).restart).toBe(true); // another slot
    expect(policy.decide({ slot: 1, wasReady: true, readyForMs: 20_000, temporary: false })).toEqual({ restart: true, delayMs: 100 });
    expect(policy.decide({ slot: 1, wasReady: false, readyForMs: 0, temporary: false }).restart).toBe(true);
    expect(policy.decide({ slot: 1, wasReady: false, readyForMs: 0, temporary: false }).restart).toBe(true);
    expect(policy.decide({ slot: 1, wasReady: false, readyForMs: 0, temporary: false }).restart).toBe(false);
  });
});
