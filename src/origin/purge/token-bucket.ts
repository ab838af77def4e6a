// The purger's own pacing: a token bucket set to the account's purge limit, so that no call (first try or
// retry) leaves this process unless a token was taken for it. Cloudflare meters tag, host, prefix and
// purge-everything calls per account with a token bucket: "Tokens refill at a consistent rate, but each bucket
// has a maximum capacity ... allowing short bursts" (https://developers.cloudflare.com/cache/how-to/purge-cache/,
// "Purge limits" / "Token bucket rate limiting"; the per-plan figures are the table on that page).
//
// What this bucket cannot know: the account's bucket is shared with every other purge client of the account
// (the dashboard, deploy scripts, other zones on the same plan), and a restarted process starts with a full
// bucket. So it is a ceiling on this process's calls, not a promise that Cloudflare never answers 429; the
// purger honours 429 and Retry-After besides, and calls `drain()` when Cloudflare says the bucket is empty.

/** A purge plan's limit: `rate` tokens per second, at most `burst` saved up. */
export interface PurgeRate {
  readonly rate: number;
  readonly burst: number;
}

export type PurgePlanName = "free" | "pro" | "business" | "enterprise";

/** Cloudflare's per-account purge limits by plan (requests per second, bucket size), from the page above. */
export const PURGE_PLANS: Readonly<Record<PurgePlanName, PurgeRate>> = Object.freeze({
  free: { rate: 5 / 60, burst: 25 }, // 5 requests per minute
  pro: { rate: 5, burst: 25 },
  business: { rate: 10, burst: 50 },
  enterprise: { rate: 50, burst: 500 },
});

export interface TokenBucketOptions extends PurgeRate {
  /** Milliseconds on a monotonic clock; the purger passes its timers' clock so tests can drive it. */
  now?: () => number;
  /** Tokens at start; the bucket starts full, as an account's bucket does after a quiet spell. */
  initial?: number;
}

// A token counts as available from 1 - EPSILON on, so that waiting exactly `waitMs()` always suffices despite
// floating-point refill arithmetic.
const EPSILON = 1e-9;

export class TokenBucket implements PurgeRate {
  readonly rate: number;
  readonly burst: number;
  readonly #now: () => number;
  #tokens: number;
  #at: number;

  constructor(options: TokenBucketOptions) {
    if (!(options.rate > 0) || !Number.isFinite(options.rate)) throw new RangeError(`purge rate must be a positive number of calls per second, got ${options.rate}`);
    if (!(options.burst >= 1) || !Number.isInteger(options.burst)) throw new RangeError(`purge burst must be a whole number of calls >= 1, got ${options.burst}`);
    this.rate = options.rate;
    this.burst = options.burst;
    this.#now = options.now ?? (() => performance.now());
    this.#tokens = Math.min(this.burst, Math.max(0, options.initial ?? this.burst));
    this.#at = this.#now();
  }

  /** Takes one token if one is available now; a call may be sent only when this returns true. */
  take(): boolean {
    this.#refill();
    if (this.#tokens < 1 - EPSILON) return false;
    this.#tokens = Math.max(0, this.#tokens - 1);
    return true;
  }

  /** Milliseconds until `tokens` (at most `burst`) are available: 0 now; 1 token is what `take()` needs. */
  waitMs(tokens = 1): number {
    this.#refill();
    const missing = Math.min(tokens, this.burst) - EPSILON - this.#tokens;
    return missing <= 0 ? 0 : Math.ceil(missing / (this.rate / 1000));
  }

  /** Whole tokens available now. */
  available(): number {
    this.#refill();
    return Math.floor(this.#tokens + EPSILON);
  }

  /** Empties the bucket: Cloudflare answered 429, so the account's bucket is empty whatever ours says. */
  drain(): void {
    this.#refill();
    this.#tokens = 0;
  }

  #refill(): void {
    const now = this.#now();
    const elapsed = now - this.#at;
    this.#at = now;
    if (elapsed > 0) this.#tokens = Math.min(this.burst, this.#tokens + (elapsed * this.rate) / 1000);
  }
}
