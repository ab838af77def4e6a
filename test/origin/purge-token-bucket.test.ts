import { describe, expect, it } from "vitest";
import { PURGE_PLANS, TokenBucket } from "../../src/origin/purge/token-bucket.ts";

function clock(start = 0) {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

describe("TokenBucket", () => {
  it("grants the burst at once, then one token per 1/rate", () => {
    const c = clock();
    const bucket = new TokenBucket({ ...PURGE_PLANS.pro, now: c.now });
    for (let i = 0; i < 25; i++) expect(bucket.take()).toBe(true);
    expect(bucket.take()).toBe(false);
    expect(bucket.waitMs()).toBe(200);
    c.advance(199);
    expect(bucket.take()).toBe(false);
    c.advance(1);
    expect(bucket.take()).toBe(true);
    expect(bucket.take()).toBe(false);
  });

  it("waiting exactly waitMs() always suffices, at every plan's rate", () => {
    for (const plan of Object.values(PURGE_PLANS)) {
      const c = clock(1234.5);
      const bucket = new TokenBucket({ ...plan, now: c.now, initial: 0 });
      for (let i = 0; i < 100; i++) {
        c.advance(bucket.waitMs());
        expect(bucket.take()).toBe(true);
      }
    }
  });

  it("waitMs(n) is how long until n tokens are saved up, never more than the burst", () => {
    const c = clock();
    const bucket = new TokenBucket({ ...PURGE_PLANS.free, now: c.now, initial: 4 });
    expect(bucket.waitMs(13)).toBe(108_000); // 9 tokens at 5 a minute
    expect(bucket.waitMs(4)).toBe(0);
    expect(bucket.waitMs(100)).toBe(bucket.waitMs(25));
    c.advance(108_000);
    expect(bucket.available()).toBe(13);
  });

  it("never saves more than the burst", () => {
    const c = clock();
    const bucket = new TokenBucket({ rate: 10, burst: 3, now: c.now, initial: 0 });
    c.advance(3_600_000);
    expect(bucket.available()).toBe(3);
  });

  it("drain() empties it: the account said 429", () => {
    const c = clock();
    const bucket = new TokenBucket({ ...PURGE_PLANS.free, now: c.now });
    bucket.drain();
    expect(bucket.take()).toBe(false);
    expect(bucket.waitMs()).toBe(12_000);
  });

  it("free is 5 a minute with 25 saved up; the paid plans per the purge-cache page", () => {
    expect(PURGE_PLANS.free.rate * 60).toBeCloseTo(5);
    expect(PURGE_PLANS).toMatchObject({ free: { burst: 25 }, pro: { rate: 5, burst: 25 }, business: { rate: 10, burst: 50 }, enterprise: { rate: 50, burst: 500 } });
  });

  it("refuses a rate or burst that cannot pace anything", () => {
    expect(() => new TokenBucket({ rate: 0, burst: 5 })).toThrow(/rate/);
    expect(() => new TokenBucket({ rate: 1, burst: 0 })).toThrow(/burst/);
  });
});
