// The purger's numbers and the pure decisions made with them: how long to coalesce, how often to poll, how to
// back off, when to give up purging by tag and purge every item instead, and how pending changes become one
// call's tags. Kept apart from the loop (purger.ts) so each number sits beside the reason it was chosen.
//
// Against the 1 s staleness target (p99): commit → notify is ~4 ms p99 on PostgreSQL (DESIGN.md), the
// coalescing window 100 ms, the API round trip is unmeasured here (budget 300 ms), propagation about 150 ms
// (issue 13; Cloudflare's purge page promises "Instant Purge" without a number): ~550 ms, which leaves room for
// one retry (the first backoff is 125-250 ms). A wider window saves calls only for writes to the same id within
// it; under load the bucket batches everything else (a round that must wait for a token takes again after the
// wait, so each call carries what arrived meanwhile). The poll (1 s) costs the leader one indexed query a second
// and bounds staleness for a lost notification at about 1.5 s.
//
// Failures: 429 and retryable failures back off exponentially with equal jitter, 250 ms doubling to a 30 s cap,
// never sooner than Retry-After (at most 5 minutes, MAX_RETRY_AFTER_MS). A refusal is retried every 60 s: a
// token's permissions can be fixed in the dashboard without a restart, and a refused call costs a bucket token
// each time.
//
// Fallback: beyond `backlogBoundFor(plan)` pending changes (what the plan purges by tag in ~30 s with a full
// bucket: free 825, pro 5,250, business 10,500, enterprise 60,000), or after 30 s of failing purges that failed
// at least twice in a row (one failure, a refusal or a long Retry-After, is retried with its own tags), one purge of
// ALL_ITEMS_TAG is sent instead: it bounds staleness at about 30 s where tag purges could not, and costs one call
// (and a refill of the edge cache from the origin). Changes are counted, not distinct ids, so a hot id makes the
// bound trip early: the safe side.
//
// Repeats: an accepted purge is sent once more `repeatAfterMs` later (6-7 s by default), because an edge fill
// that read the item before the write can be stored after the first purge; the Worker's deadline and how long
// other origin processes may serve the old version bound how late (src/shared/edge-fill-deadline.ts,
// instanceStalenessBoundMs), so a tag whose changes were all first seen at least `repeatAfterMs` before its
// purge was sent needs no repeat (each committed before it was seen): a purger working through a backlog
// repeats nothing, and spends its calls on first purges. A repeat that falls due takes the spare tags of the
// next call; a call of its own only when nothing is pending (or, overdue by another `repeatAfterMs`, when the
// next call is full) and half the bucket is left, so that on Free a repeat does not take the token the next
// write's purge needs. Repeats owed for more distinct tags than the backlog bound become one wide repeat. A leader that shuts
// down goes on purging while it sends what it owes as each falls due, for at most `stopDrainMs`, and the rest
// at once (an early repeat still covers every fill stored before it).
//
// Inherited repeats: owed repeats live in the leader's memory, so a leader that crashes (or whose lead passes
// to another instance for good) takes them along. Every new leader therefore owes, `repeatAfterMs` after it
// starts, a repeat of the purged changes that the one before may still have owed one for
// (`inheritedRepeats`): a repeat is needed only for a change purged within `repeatAfterMs` of its commit (a
// later first purge came after every fill it could race with), and it falls due within `repeatAfterMs` of that
// purge, so such a change committed less than two repeat delays before the newest purged change was recorded.
// The window looks back three: PostgreSQL records a change when its transaction begins, so the third keeps a
// change whose transaction ran for up to one repeat delay. A repeat sent later than it was owed still
// drops every fill stored before it. After a clean handover (the old leader sent its repeats before it went)
// this repeats them once more: at most one more call per 30 such tags, paced like any repeat.

import { ALL_ITEMS_TAG, itemTag } from "../../shared/cache-tag.ts";
import { DEFAULT_PURGE_REPEAT_MS } from "../../shared/edge-fill-deadline.ts";
import { isItemId } from "../../shared/item-id.ts";
import { MAX_TAGS_PER_CALL } from "./cloudflare-purge-api.ts";
import type { PendingChange, RecentChange } from "./purge-source.ts";
import type { PurgeRate } from "./token-bucket.ts";

export interface PurgerTuning {
  /** The window a wake opens before a round runs. */
  coalesceMs: number;
  /** A round runs at least this often, catching changes whose notification was lost. */
  pollMs: number;
  /** Changes read per round: the most the purger ever holds in memory. */
  takeLimit: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  refusedRetryMs: number;
  /** Purges failing for longer than this, and at least twice in a row: the next call is the wide purge. */
  failingBoundMs: number;
  /** How long stop() waits for a call in flight before cancelling it. */
  stopTimeoutMs: number;
  /** Each accepted purge is sent again this long after it was sent; 0 = never. */
  repeatAfterMs: number;
  /** How long stop() waits for repeats still owed to fall due. */
  stopDrainMs: number;
}

export const PURGER_DEFAULTS: Readonly<PurgerTuning> = Object.freeze({
  coalesceMs: 100,
  pollMs: 1_000,
  takeLimit: 1_000,
  backoffBaseMs: 250,
  backoffMaxMs: 30_000,
  refusedRetryMs: 60_000,
  failingBoundMs: 30_000,
  stopTimeoutMs: 5_000,
  repeatAfterMs: DEFAULT_PURGE_REPEAT_MS,
  stopDrainMs: 10_000,
});

/** Changes the plan can purge by tag in `catchUpMs` with a full bucket: beyond it, one wide purge is better. */
export function backlogBoundFor(plan: PurgeRate, catchUpMs = 30_000): number {
  return Math.ceil(MAX_TAGS_PER_CALL * (plan.burst + (plan.rate * catchUpMs) / 1000));
}

/** The wait after the `failures`-th failure in a row: exponential, capped, equal jitter (half fixed, half random). */
export function backoffMs(failures: number, tuning: Pick<PurgerTuning, "backoffBaseMs" | "backoffMaxMs">, random: () => number): number {
  const ceiling = Math.min(tuning.backoffMaxMs, tuning.backoffBaseMs * 2 ** Math.min(Math.max(0, failures - 1), 30));
  return ceiling / 2 + (random() * ceiling) / 2;
}

/**
 * The first 30 distinct tags among `changes` and the keys of every change they cover (a burst of writes to one
 * id is one tag); `more` when some change was left for the next call. Tags compare without case, as Cloudflare's
 * do ("Case is not sensitive", https://developers.cloudflare.com/cache/how-to/purge-cache/purge-by-tags/): ids
 * `A` and `a` share one purge. A change to an id that is not an item id (a user's table may hold any text)
 * is covered without a tag: no request can name it, so the edge holds nothing under it, and its tag might be
 * one Cloudflare refuses, which would hold back every purge behind it. `keysByTag[i]`: the changes `tags[i]` covers.
 */
export function batchOf(changes: readonly PendingChange[]): { tags: string[]; keys: string[]; keysByTag: string[][]; more: boolean } {
  const tags = new Map<string, { tag: string; keys: string[] }>();
  const keys: string[] = [];
  let more = false;
  for (const change of changes) {
    if (change.id !== "" && !isItemId(change.id)) {
      keys.push(change.key);
      continue;
    }
    const folded = change.id.toLowerCase();
    let entry = tags.get(folded);
    if (entry === undefined) {
      if (tags.size === MAX_TAGS_PER_CALL) {
        more = true;
        continue;
      }
      // "" is a change to every item (a TRUNCATE of the items table): only the all-items tag covers it.
      entry = { tag: change.id === "" ? ALL_ITEMS_TAG : itemTag(change.id), keys: [] };
      tags.set(folded, entry);
    }
    entry.keys.push(change.key);
    keys.push(change.key);
  }
  const entries = [...tags.values()];
  return { tags: entries.map((e) => e.tag), keys, keysByTag: entries.map((e) => e.keys), more };
}

/** Repeat delays a new leader looks back from the newest purged change: two, and one for a transaction's length (header). */
export const INHERIT_WINDOW_DELAYS = 3;

/**
 * The tags a new leader owes a repeat for, read from the store's `latest` changes (newest first, as many as
 * the caller read, `read`): those of the purged changes made within INHERIT_WINDOW_DELAYS repeat delays of
 * the newest purged one (see the header), measured on the store's clock alone, so instances' clocks never
 * meet. Ids fold as in `batchOf`; "" (everything changed) is the all-items tag. If the window may reach past
 * what was read, the only safe repeat is the wide one; so too when all `read` changes are pending (the
 * purges before them are out of sight). None when fewer were read and none was purged: whoever led before
 * owed nothing. A change whose transaction ran for more than about one repeat delay (PostgreSQL records its
 * start) may fall outside, and so may, beyond a full read, changes recorded after such a transaction's.
 */
export function inheritedRepeats(latest: readonly RecentChange[], read: number, repeatAfterMs: number): string[] {
  let newestPurge = -Infinity;
  for (const change of latest) if (change.purged && change.changedAt > newestPurge) newestPurge = change.changedAt;
  if (repeatAfterMs === 0) return [];
  if (newestPurge === -Infinity) return latest.length >= read ? [ALL_ITEMS_TAG] : [];
  const from = newestPurge - INHERIT_WINDOW_DELAYS * repeatAfterMs;
  if (latest.length >= read && latest[latest.length - 1]!.changedAt > from) return [ALL_ITEMS_TAG];
  const tags = new Map<string, string>();
  for (const change of latest) {
    if (!change.purged || change.changedAt <= from) continue;
    if (change.id === "") return [ALL_ITEMS_TAG];
    if (isItemId(change.id) && !tags.has(change.id.toLowerCase())) tags.set(change.id.toLowerCase(), itemTag(change.id));
  }
  return [...tags.values()];
}
