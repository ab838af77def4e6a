// The purge loop: turns the store's durable record of changed items (a PurgeSource) into purges of their edge
// cache tags through a PurgeApi, paced by the account's token bucket, retried until Cloudflare accepts, never
// silently given up. One origin instance runs it at a time; the numbers and their reasons are in purge-policy.ts.
//
// How a change travels: `wake()` (a change was committed or notified) opens a coalescing window; a periodic
// poll catches a change whose notification was lost. A round takes up to `takeLimit` pending changes (oldest
// first), folds them into at most 30 tags, takes a bucket token (or waits for one and takes again), sends one
// call, and on acceptance marks exactly the changes it took (a change committed during the call keeps its own
// key and goes in the next round). Every retry takes a token like a first try; a 429 drains the bucket too.
//
// Failing: 429 and retryable outcomes back off (never sooner than Retry-After), state `retrying`; a refusal is
// logged with its fix and retried slowly, state `refused` until a call is accepted. Fallback (over the backlog
// bound, or failing too long): ONE purge of ALL_ITEMS_TAG, cut() before it and markCut() once accepted; changes
// after the cut go by tag as before. At most one take is held in memory, the rest stays durable in the store,
// so nothing is dropped. A failing wide purge is retried like any call (state `fallback`, or `refused` with the
// fix) until accepted. The log gets a line per state change, on entering the fallback and for verify(), never per call.
//
// Repeating: each accepted call's tags are owed once more `repeatAfterMs` after it was sent, for an edge fill
// that was stored after it (purge-policy.ts). Owed tags live in memory: a leader that shuts down sends them
// before it goes (`stop({ drain: true })`, up to `stopDrainMs`); one that loses the lead keeps them for when it
// leads again; one that crashes takes them along, so every leader, as it starts, owes a repeat of what the one
// before may have owed, read from the store's newest changes (`inheritedRepeats`).
// The loop and its states stay in one file (about 500 lines): every transition reads against the others.

import { ALL_ITEMS_TAG } from "../../shared/cache-tag.ts";
import { MAX_TAGS_PER_CALL, type PurgeApi, type PurgeOutcome, VERIFY_TAG } from "./cloudflare-purge-api.ts";
import { OwedRepeats } from "./owed-repeats.ts";
import { backlogBoundFor, backoffMs, batchOf, inheritedRepeats, PURGER_DEFAULTS, type PurgerTuning } from "./purge-policy.ts";
import type { PurgeSource } from "./purge-source.ts";
import type { TokenBucket } from "./token-bucket.ts";
import { systemTimers, type TimerHandle, type Timers } from "./timers.ts";

export type PurgerState = "ok" | "retrying" | "refused" | "fallback";

/** The counters `/metrics` exports; a copy from `stats()`. */
export interface PurgerStats {
  state: PurgerState;
  pending: number; // changes pending at the last look
  calls: number; // calls sent (tag, wide and verify), whatever came of them
  purgedTags: number; // tags in accepted calls
  repeatedTags: number; // of those, tags sent again after repeatAfterMs (the repeat of an earlier accepted call)
  repeatsOwed: number; // tags whose repeat is still to be sent
  retried: number; // calls that failed retryably (429, 5xx, timeout, network, malformed answer), to be retried
  refused: number; // calls Cloudflare refused (401, 403, other 4xx)
  fallbacks: number; // wide purges of ALL_ITEMS_TAG accepted
  dropped: number; // changes given up on: always 0, the fallback covers what tag purges cannot
  lastError: string | null;
}

export interface PurgerOptions extends Partial<PurgerTuning> {
  source: PurgeSource;
  api: PurgeApi;
  bucket: TokenBucket;
  timers?: Timers;
  log?: (line: string) => void;
  random?: () => number;
  /** Pending changes beyond which the wide purge is sent; default `backlogBoundFor(bucket)`. */
  backlogBound?: number;
}

/**
 * The newest changes a new leader reads (`#inherit`): about 1.5 MB from PostgreSQL, tens of ms. Whatever the
 * plan, the inherited repeat goes wide only past this many changes in its window, or past the backlog bound
 * of distinct tags (OwedRepeats), as a leader's own repeats would; a bound-sized read would send a burst of
 * writes to a few hot ids wide.
 */
const INHERIT_READ = 30_000;

export class Purger {
  readonly #source: PurgeSource;
  readonly #api: PurgeApi;
  readonly #bucket: TokenBucket;
  readonly #timers: Timers;
  readonly #log: (line: string) => void;
  readonly #random: () => number;
  readonly #o: PurgerTuning & { backlogBound: number };
  /** `repeatsOwed` is read from the owed repeats themselves (stats()). */
  readonly #stats: Omit<PurgerStats, "repeatsOwed"> = { state: "ok", pending: 0, calls: 0, purgedTags: 0, repeatedTags: 0, retried: 0, refused: 0, fallbacks: 0, dropped: 0, lastError: null };

  #loop: Promise<void> | null = null;
  #ended = false; // the loop returned (stop() may not have seen it yet)
  #stopping = false;
  #drainUntil: number | null = null; // shutting down: purging goes on until then, or until nothing is owed
  #abandoned = false; // stop()'s bound passed: leave the repeats still owed
  #repeatHoldUntil = 0; // a call of repeats alone waits for the bucket's reserve until then
  #inheritedSignal = settledSignal(); // resolved once this lead has owed what the previous leader may have owed
  readonly #repeats: OwedRepeats;
  /** When this purger first saw each change of the last take (its commit came before). */
  #seen = new Map<string, number>();
  #wakeAt: number | null = null; // end of the window opened by the first wake since the last round
  #runAt = 0; // next round: now, after a poll interval, or after a failure
  #holdUntil = 0; // no round before this (backoff, empty bucket); a wake does not shorten it
  #sleep: { timer: TimerHandle; resolve: () => void } | null = null;
  #idleWaiters: (() => void)[] = [];
  #inFlight: AbortController | null = null;
  #failures = 0;
  #failingSince: number | null = null; // first purges failing: the fallback's clock
  #repeatFailing = false; // only repeats failing: retried, but no reason for a wide purge
  #refusedLast = false; // the last call was refused: state `refused` until one is accepted
  #fallback: string | null = null; // why, while a wide purge is due

  constructor(options: PurgerOptions) {
    this.#source = options.source;
    this.#api = options.api;
    this.#bucket = options.bucket;
    this.#timers = options.timers ?? systemTimers;
    this.#log = options.log ?? (() => {});
    this.#random = options.random ?? Math.random;
    const tuning = { ...PURGER_DEFAULTS };
    for (const key of Object.keys(tuning) as (keyof PurgerTuning)[]) tuning[key] = options[key] ?? tuning[key];
    this.#o = { ...tuning, backlogBound: options.backlogBound ?? backlogBoundFor(options.bucket) };
    this.#repeats = new OwedRepeats(this.#o.backlogBound);
  }

  /** Starts the loop; its first round runs at once, so changes left pending by a previous leader go first. */
  start(): void {
    if (this.#loop !== null) return;
    this.#stopping = false;
    this.#ended = false;
    this.#drainUntil = null;
    this.#abandoned = false;
    // What failed before a pause says nothing now (another leader may have purged it all meanwhile).
    this.#failures = 0;
    this.#failingSince = null;
    this.#repeatFailing = false;
    this.#seen.clear(); // changes taken before a pause count as seen now: the safe side
    this.#inheritedSignal = pendingSignal();
    this.#runAt = this.#timers.now();
    this.#loop = this.#run();
  }

  /** A change was committed or notified: purge it after the coalescing window. */
  wake(): void {
    if (this.#loop === null || this.#stopping) return;
    this.#wakeAt ??= this.#timers.now() + this.#o.coalesceMs;
    this.#interrupt();
  }

  /**
   * Stops the loop, waiting for a call in flight up to `stopTimeoutMs`, then cancelling it. No timer survives.
   * `drain` (shutting down while still leading): first goes on purging, first purges included, until every
   * repeat owed has been sent as it fell due, for at most `stopDrainMs`, then sends the rest at once. Without it
   * (the lead moved on) they stay owed, sent if this purger starts again: a drain would hold a quick
   * lose-then-win back for seconds.
   */
  async stop(options: { drain?: boolean } = {}): Promise<void> {
    const loop = this.#loop;
    if (loop === null) return;
    const now = this.#timers.now();
    if (options.drain === true && this.#o.repeatAfterMs > 0 && !this.#stopping && this.#drainUntil === null) {
      this.#drainUntil = now + this.#o.stopDrainMs;
      const early = this.#repeats.dueNoLaterThan(this.#drainUntil);
      if (this.#repeats.size > 0) {
        const later = early === 0 ? "" : ` (${early} of them due later go then)`;
        this.#log(`purge: shutting down: sending the ${this.#repeats.size} repeats still owed as they fall due, within ${this.#o.stopDrainMs / 1000} s${later}`);
      }
    } else this.#stopping = true;
    this.#interrupt();
    const boundMs = (this.#drainUntil === null ? 0 : Math.max(0, this.#drainUntil - now)) + this.#o.stopTimeoutMs;
    let bound: TimerHandle | undefined;
    const finished = await Promise.race([
      loop.then(() => true),
      new Promise<boolean>((resolve) => (bound = this.#timers.setTimeout(() => resolve(false), boundMs))),
    ]);
    if (bound !== undefined) this.#timers.clearTimeout(bound);
    if (!finished) {
      if (this.#drainUntil !== null && this.#repeats.size > 0) this.#log(`purge: shutting down: ${this.#repeats.size} repeats owed were not sent (${this.#stats.lastError ?? "no answer in time"})`);
      this.#stopping = true;
      this.#abandoned = true;
      this.#interrupt();
      this.#inFlight?.abort();
    }
    await loop;
    this.#loop = null;
    this.#drainUntil = null;
  }

  /**
   * Resolves once this lead has read the store's newest changes for the repeats it inherits (or its loop
   * ended first): until then the change log must not be pruned, or the rows it reads could go.
   */
  inherited(): Promise<void> {
    return this.#inheritedSignal.promise;
  }

  /** Resolves once the loop is parked on a timer with nothing in flight (or not running): for tests and tools. */
  whenIdle(): Promise<void> {
    if (this.#loop === null || this.#sleep !== null || this.#ended) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  stats(): PurgerStats {
    return { ...this.#stats, repeatsOwed: this.#repeats.size };
  }

  /** The start-up check (see CloudflarePurgeApi.verify), paced by the same bucket; logs what it found. */
  async verify(): Promise<PurgeOutcome> {
    const wait = this.#bucket.waitMs();
    if (wait > 0) await new Promise<void>((resolve) => this.#timers.setTimeout(resolve, wait));
    this.#bucket.take();
    const outcome = await this.#call((signal) => this.#api.verify(signal));
    if (outcome.kind === "accepted") {
      this.#log(`purge: verified: Cloudflare accepted a purge for this zone (tag ${VERIFY_TAG}, which no entry carries)`);
      this.#succeeded("the token works again");
    } else {
      // Held back as any failed call is (a 429 empties the bucket and waits out Retry-After), and reported as
      // not yet working until a call is accepted. Quiet: the line below says it once.
      this.#noteFailure(outcome, true);
      if (outcome.kind === "refused") this.#log(`purge: REFUSED by Cloudflare at start: ${outcome.detail}`);
      else this.#log(`purge: could not verify the token at start (${outcome.detail}); the purger keeps trying`);
    }
    return outcome;
  }

  async #run(): Promise<void> {
    try {
      // At once, whatever hold (backoff, Retry-After) an earlier lead left: the read touches only the store, and
      // the change log is not pruned until it is done.
      await this.#inherit();
      this.#inheritedSignal.resolve();
      await this.#loopRounds();
    } finally {
      this.#inheritedSignal.resolve();
    }
  }

  async #loopRounds(): Promise<void> {
    while (!this.#stopping) {
      const now = this.#timers.now();
      const drainUntil = this.#drainUntil;
      if (drainUntil !== null && (now >= drainUntil || (this.#repeats.size === 0 && this.#wakeAt === null))) break;
      const at = Math.max(Math.min(this.#runAt, this.#wakeAt ?? Infinity, this.#repeatsAt(), drainUntil ?? Infinity), this.#holdUntil);
      if (at > now) {
        await this.#park(at - now);
        continue;
      }
      this.#wakeAt = null;
      this.#runAt = Infinity;
      await this.#round();
      if (this.#runAt === Infinity) this.#runAt = this.#timers.now() + this.#o.pollMs;
    }
    this.#stopping = true;
    await this.#drain();
    this.#ended = true;
    for (const resolve of this.#idleWaiters.splice(0)) resolve();
  }

  /** Shutting down, past `stopDrainMs`: no one else knows the repeats this leader owes, so the rest go now. */
  async #drain(): Promise<void> {
    if (this.#drainUntil === null) return;
    while (this.#repeats.size > 0 && !this.#abandoned) {
      const now = this.#timers.now();
      if (this.#holdUntil > now) {
        await this.#park(this.#holdUntil - now);
        continue;
      }
      this.#repeats.dueNoLaterThan(now); // an early repeat still drops every fill stored before it
      await this.#repeatRound(now);
    }
  }

  /** When a call of repeats alone may go: when one falls due, and outside a shutdown when the bucket allows. */
  #repeatsAt(): number {
    const due = this.#repeats.firstDue();
    return this.#drainUntil === null ? Math.max(due, this.#repeatHoldUntil) : due;
  }

  /**
   * Whether a call of repeats alone may go now. It leaves half the bucket to first purges, which decide
   * staleness: on Free (5 calls a minute) a repeat taking a call of its own for each write would delay the next
   * write's purge by a minute or more; below that it waits to ride in a first purge's spare tags, or for the
   * bucket to refill. A leader shutting down does not wait.
   */
  #repeatMayGoAlone(): boolean {
    if (this.#drainUntil !== null) return true;
    const wait = this.#bucket.waitMs(Math.floor(this.#bucket.burst / 2) + 1);
    if (wait === 0) return true;
    this.#repeatHoldUntil = this.#timers.now() + wait;
    return false;
  }

  async #round(): Promise<void> {
    try {
      if (this.#fallback !== null) return await this.#wideRound();
      const { takeLimit, backlogBound, failingBoundMs } = this.#o;
      const changes = await this.#source.take(takeLimit);
      const pending = changes.length < takeLimit ? changes.length : await this.#source.backlog(backlogBound + 1);
      this.#stats.pending = pending;
      const now = this.#timers.now();
      const seen = new Map<string, number>();
      for (const change of changes) seen.set(change.key, this.#seen.get(change.key) ?? now);
      this.#seen = seen;
      if (changes.length === 0) {
        if (this.#repeats.firstDue() > now) return this.#settled();
        // Nothing pending: no first purge is failing (repeats failing keep their own state and backoff).
        this.#failingSince = null;
        this.#report();
        if (this.#repeatMayGoAlone()) await this.#repeatRound(now);
        return;
      }
      if (pending > backlogBound) return this.#enterFallback(`more than ${backlogBound} changes pending (the bound)`);
      // A single failure is retried with its own tags, however long Retry-After or the refusal wait made it: the
      // wide purge costs the whole edge a refill, and is for failures that persist.
      if (this.#failingSince !== null && this.#failures >= 2 && now - this.#failingSince > failingBoundMs) {
        return this.#enterFallback(`purges have failed for ${Math.round((now - this.#failingSince) / 1000)} s (bound ${failingBoundMs / 1000} s)`);
      }
      const batch = batchOf(changes);
      if (batch.tags.length === 0) {
        // Only changes to ids no request can name: nothing at the edge to purge.
        await this.#source.markPurged(batch.keys);
        this.#stats.pending = Math.max(0, pending - batch.keys.length);
        this.#runAt = this.#timers.now();
        return;
      }
      // Stopping while the store answered: the changes stay pending for whoever leads next.
      if (this.#stopping) return;
      // A repeat waits for first purges, which decide staleness, but not for ever: overdue, and with no spare
      // tag in this call, it goes first in a call of its own.
      if (batch.tags.length === MAX_TAGS_PER_CALL && this.#repeats.firstDue() <= now - this.#o.repeatAfterMs && this.#repeatMayGoAlone()) {
        await this.#repeatRound(now);
        this.#runAt = this.#timers.now();
        return;
      }
      const repeats = this.#repeats.dueBy(now, MAX_TAGS_PER_CALL - batch.tags.length, batch.tags);
      if (!this.#takeToken()) return;
      const sentAt = this.#timers.now();
      const outcome = await this.#call((signal) => this.#api.purgeTags([...batch.tags, ...repeats.send], signal));
      if (outcome.kind !== "accepted") return this.#noteFailure(outcome);
      this.#stats.repeatedTags += this.#repeats.repaid(repeats);
      this.#owe(
        batch.tags.filter((_, i) => batch.keysByTag[i]!.some((key) => sentAt - this.#seen.get(key)! < this.#o.repeatAfterMs)),
        sentAt,
      );
      await this.#source.markPurged(batch.keys);
      this.#stats.purgedTags += batch.tags.length + repeats.send.length;
      this.#stats.pending = Math.max(0, pending - batch.keys.length);
      this.#succeeded(`purging by tag again (${this.#stats.pending} changes pending)`);
      if (batch.more || changes.length >= takeLimit) this.#runAt = this.#timers.now();
    } catch (error) {
      this.#noteFailure({ kind: "retryable", detail: `purge store: ${error instanceof Error ? error.message : String(error)}` });
    }
  }

  async #wideRound(): Promise<void> {
    const cut = await this.#source.cut();
    this.#stats.pending = cut.count;
    if (cut.count === 0) {
      this.#fallback = null;
      return this.#succeeded("nothing left pending; purging by tag again");
    }
    if (this.#stopping || !this.#takeToken()) return;
    const sentAt = this.#timers.now();
    const outcome = await this.#call((signal) => this.#api.purgeTags([ALL_ITEMS_TAG], signal));
    if (outcome.kind !== "accepted") return this.#noteFailure(outcome);
    this.#owe([ALL_ITEMS_TAG], sentAt);
    await this.#source.markCut(cut);
    this.#stats.fallbacks++;
    this.#stats.purgedTags++;
    this.#stats.pending = 0;
    this.#fallback = null;
    this.#succeeded(`one purge of tag "${ALL_ITEMS_TAG}" covered ${cut.count} pending changes; purging by tag again`);
    this.#runAt = this.#timers.now();
  }

  /**
   * Owe, from now, a repeat of the purges whose repeats whoever led before may still have owed (they died with
   * its memory if it crashed). Read before this lead's own first purge, which would move the window's anchor.
   * A tag this purger still owes from an earlier lead is owed again from now: another leader may have purged
   * a newer change to it since, whose repeat falls due later. If the read fails, only a wide repeat is safe.
   */
  async #inherit(): Promise<void> {
    if (this.#o.repeatAfterMs === 0) return;
    const read = INHERIT_READ + 1;
    let tags: string[];
    let why = "";
    try {
      tags = inheritedRepeats(await this.#source.latest(read), read, this.#o.repeatAfterMs);
    } catch (error) {
      tags = [ALL_ITEMS_TAG];
      why = ` (the newest changes could not be read: ${error instanceof Error ? error.message : String(error)})`;
    }
    if (tags.length === 0) return;
    const wideBefore = this.#repeats.owesEveryItem;
    this.#owe(tags, this.#timers.now());
    // Past the bound, what is owed becomes one wide repeat (OwedRepeats).
    const wide = !wideBefore && this.#repeats.owesEveryItem;
    const what = wide ? `every item (tag "${ALL_ITEMS_TAG}")` : tags.length === 1 ? "1 tag" : `${tags.length} tags`;
    this.#log(`purge: leading: ${what} purged before this lead began will be purged once more in ${this.#o.repeatAfterMs} ms, in case whoever led before still owed those repeats${why} (docs/purge.md)`);
  }

  /** One call of repeats only: those due at `now`, up to a call's worth. */
  async #repeatRound(now: number): Promise<void> {
    if (this.#stopping && this.#drainUntil === null) return; // the lead moved on: they stay owed
    const repeats = this.#repeats.dueBy(now, MAX_TAGS_PER_CALL);
    if (!this.#takeToken()) return;
    const outcome = await this.#call((signal) => this.#api.purgeTags(repeats.send, signal));
    if (outcome.kind !== "accepted") return this.#noteFailure(outcome, false, true);
    this.#stats.repeatedTags += this.#repeats.repaid(repeats);
    this.#stats.purgedTags += repeats.send.length;
    // The API took these; first purges still failing (another reason) keep their clock towards the fallback.
    this.#repeatFailing = false;
    if (this.#failingSince === null) this.#succeeded("purging by tag again");
    else this.#report();
    if (this.#repeats.firstDue() <= this.#timers.now()) this.#runAt = this.#timers.now();
  }

  /** An accepted call sent at `sentAt` purged `tags`: each is owed once more, `repeatAfterMs` later. */
  #owe(tags: readonly string[], sentAt: number): void {
    if (this.#o.repeatAfterMs === 0) return;
    this.#repeats.owe(tags, Math.min(sentAt + this.#o.repeatAfterMs, this.#drainUntil ?? Infinity));
  }

  /** Takes a bucket token, or holds the loop until one is due and returns false. */
  #takeToken(): boolean {
    const wait = this.#bucket.waitMs();
    if (wait === 0 && this.#bucket.take()) return true;
    this.#holdUntil = this.#runAt = this.#timers.now() + Math.max(1, wait);
    return false;
  }

  async #call(send: (signal: AbortSignal) => Promise<PurgeOutcome>): Promise<PurgeOutcome> {
    const controller = new AbortController();
    this.#inFlight = controller;
    this.#stats.calls++;
    try {
      return await send(controller.signal);
    } catch (error) {
      return { kind: "retryable", detail: `purge client failed: ${error instanceof Error ? error.message : String(error)}` };
    } finally {
      this.#inFlight = null;
    }
  }

  /** `repeatOnly`: a call of repeats alone failed, which leaves staleness to first purges where it was. */
  #noteFailure(outcome: Exclude<PurgeOutcome, { kind: "accepted" }>, quiet = false, repeatOnly = false): void {
    const now = this.#timers.now();
    this.#stats.lastError = outcome.detail;
    if (repeatOnly) this.#repeatFailing = true;
    else this.#failingSince ??= now;
    this.#failures++;
    this.#refusedLast = outcome.kind === "refused";
    let delay: number;
    if (outcome.kind === "refused") {
      this.#stats.refused++;
      delay = this.#o.refusedRetryMs;
    } else {
      this.#stats.retried++;
      delay = Math.max(backoffMs(this.#failures, this.#o, this.#random), outcome.retryAfterMs ?? 0);
      if (outcome.kind === "rate-limited") this.#bucket.drain();
    }
    this.#holdUntil = this.#runAt = now + delay;
    this.#report(undefined, quiet);
  }

  #succeeded(okLine: string): void {
    this.#failures = 0;
    this.#failingSince = null;
    this.#repeatFailing = false;
    this.#refusedLast = false;
    this.#report(okLine);
  }

  /** Nothing pending: nothing is failing. A refusal stays visible until a call is accepted. */
  #settled(): void {
    this.#failures = 0;
    this.#failingSince = null;
    this.#report("nothing pending");
  }

  /** Entering the fallback is logged once, whatever the state (it stays `refused` while calls are refused). */
  #enterFallback(reason: string): void {
    this.#fallback = reason;
    this.#runAt = this.#timers.now();
    if (!this.#stopping) this.#log(`purge: FALLBACK: ${reason}; sending one purge of tag "${ALL_ITEMS_TAG}" (every cached item) instead`);
    this.#report(undefined, true);
  }

  /** Sets the state from what is known and logs one line when it changed (unless `quiet`: already said). */
  #report(okLine = "purging by tag again", quiet = false): void {
    const state: PurgerState = this.#refusedLast ? "refused" : this.#fallback !== null ? "fallback" : this.#failingSince !== null || this.#repeatFailing ? "retrying" : "ok";
    if (this.#stopping || this.#stats.state === state) return;
    this.#stats.state = state;
    if (quiet) return;
    const pending = `${this.#stats.pending} changes pending`;
    if (state === "refused") this.#log(`purge: REFUSED by Cloudflare: ${this.#stats.lastError}. Retrying every ${this.#o.refusedRetryMs / 1000} s; ${pending}`);
    else if (state === "retrying") this.#log(`purge: retrying with backoff: ${this.#stats.lastError}; ${pending}`);
    else if (state === "fallback" && this.#failingSince !== null) this.#log(`purge: FALLBACK purge failing, retrying with backoff: ${this.#stats.lastError}; ${pending}`);
    else if (state === "ok") this.#log(`purge: ok: ${okLine}`);
  }

  #park(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = this.#timers.setTimeout(() => {
        this.#sleep = null;
        resolve();
      }, ms);
      this.#sleep = { timer, resolve };
      for (const waiter of this.#idleWaiters.splice(0)) waiter();
    });
  }

  #interrupt(): void {
    const sleep = this.#sleep;
    this.#sleep = null;
    if (sleep === null) return;
    this.#timers.clearTimeout(sleep.timer);
    sleep.resolve();
  }
}

/** A promise and its resolve, for a moment other code waits for (`inherited`). */
interface Signal {
  promise: Promise<void>;
  resolve: () => void;
}

function pendingSignal(): Signal {
  let resolve = () => {};
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

function settledSignal(): Signal {
  return { promise: Promise.resolve(), resolve: () => {} };
}
