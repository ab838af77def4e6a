import { SlotLists } from "../../src/origin/cache/slot-lists.ts";
import type { Simulator } from "./simulators.ts";

/**
 * Our own implementations of the README's "best other" policies, to check the anchors and to see
 * where the slim-edge policy stands against each (`--compare`).
 */

/**
 * Keys spread over `count` queues, each key in at most one (`none` = in none): which queue a key is in, the
 * queue sizes, and a move that keeps the three consistent.
 */
function queues(count: number, keyCount: number) {
  const none = count;
  const lists = new SlotLists(count, keyCount);
  const where = new Uint8Array(keyCount).fill(none);
  const sizes: number[] = new Array(count).fill(0);
  const move = (k: number, to: number) => {
    if (where[k] !== none) {
      lists.remove(k);
      sizes[where[k]!]!--;
    }
    if (to !== none) {
      lists.pushTail(to, k);
      sizes[to]!++;
    }
    where[k] = to;
  };
  return { none, lists, where, sizes, move };
}

/** ARC (Megiddo & Modha, 2003): recency list T1, frequency list T2, ghosts B1/B2 steer the split p. */
export const simulateArc: Simulator = (trace, capacity) => {
  const T1 = 0;
  const T2 = 1;
  const B1 = 2;
  const B2 = 3;
  const { none: NONE, lists, where, sizes, move } = queues(4, trace.keys.length);
  let p = 0;
  const replace = (inB2: boolean) => {
    const t1 = sizes[T1]!;
    if (t1 > 0 && (t1 > p || (inB2 && t1 === p))) move(lists.head(T1), B1);
    else move(lists.head(T2), B2);
  };
  let hits = 0;
  const c = capacity;
  if (c === 0) return 0;
  for (const k of trace.requests) {
    const at = where[k];
    if (at === T1 || at === T2) {
      hits++;
      move(k, T2);
    } else if (at === B1) {
      p = Math.min(c, p + Math.max(1, sizes[B2]! / sizes[B1]!));
      replace(false);
      move(k, T2);
    } else if (at === B2) {
      p = Math.max(0, p - Math.max(1, sizes[B1]! / sizes[B2]!));
      replace(true);
      move(k, T2);
    } else {
      const l1 = sizes[T1]! + sizes[B1]!;
      const total = l1 + sizes[T2]! + sizes[B2]!;
      if (l1 === c) {
        if (sizes[T1]! < c) {
          move(lists.head(B1), NONE);
          replace(false);
        } else {
          move(lists.head(T1), NONE);
        }
      } else if (total >= c) {
        if (total === 2 * c) move(lists.head(B2), NONE);
        replace(false);
      }
      move(k, T1);
    }
  }
  return hits;
};

/** SIEVE (Zhang et al., NSDI'24): FIFO with a visited bit and a hand that sweeps from old to new. */
export const simulateSieve: Simulator = (trace, capacity) => {
  const QUEUE = 0;
  const lists = new SlotLists(1, trace.keys.length);
  const cached = new Uint8Array(trace.keys.length);
  const visited = new Uint8Array(trace.keys.length);
  let hand = -1;
  let size = 0;
  let hits = 0;
  if (capacity === 0) return 0;
  for (const k of trace.requests) {
    if (cached[k]) {
      hits++;
      visited[k] = 1;
      continue;
    }
    if (size === capacity) {
      let victim = hand === -1 ? lists.head(QUEUE) : hand;
      while (visited[victim]) {
        visited[victim] = 0;
        victim = lists.next(victim);
        if (victim === -1) victim = lists.head(QUEUE);
      }
      hand = lists.next(victim);
      lists.remove(victim);
      cached[victim] = 0;
      size--;
    }
    lists.pushTail(QUEUE, k);
    cached[k] = 1;
    visited[k] = 0;
    size++;
  }
  return hits;
};

/**
 * S3-FIFO (Yang et al., SOSP'23): a small FIFO (10%) filters one-hit wonders into a ghost FIFO;
 * keys re-requested while small or ghost go to the main FIFO, which reinserts entries with
 * remaining frequency. `promoteAbove` is the small→main frequency threshold (the paper uses > 1 in
 * its algorithm listing and > 0 in libCacheSim's default).
 */
export function s3fifo(promoteAbove: number): Simulator {
  return (trace, capacity) => {
    const SMALL = 0;
    const MAIN = 1;
    const GHOST = 2;
    const { none: NONE, lists, where, sizes, move: put } = queues(3, trace.keys.length);
    const freq = new Uint8Array(trace.keys.length);
    const smallTarget = Math.max(1, Math.floor(capacity / 10));
    const ghostTarget = capacity - smallTarget;
    const evictMain = () => {
      for (;;) {
        const t = lists.head(MAIN);
        if (freq[t]! > 0) {
          freq[t]!--;
          lists.moveToTail(MAIN, t);
        } else {
          put(t, NONE);
          return;
        }
      }
    };
    const evictSmall = () => {
      while (sizes[SMALL]! > 0) {
        const t = lists.head(SMALL);
        if (freq[t]! > promoteAbove) {
          freq[t] = 0;
          put(t, MAIN);
          if (sizes[MAIN]! > capacity - smallTarget) evictMain();
        } else {
          put(t, GHOST);
          if (sizes[GHOST]! > ghostTarget) put(lists.head(GHOST), NONE);
          return;
        }
      }
    };
    let hits = 0;
    if (capacity === 0) return 0;
    for (const k of trace.requests) {
      const at = where[k];
      if (at === SMALL || at === MAIN) {
        hits++;
        if (freq[k]! < 3) freq[k]!++;
        continue;
      }
      while (sizes[SMALL]! + sizes[MAIN]! >= capacity) {
        if (sizes[SMALL]! >= smallTarget || sizes[MAIN]! === 0) evictSmall();
        else evictMain();
      }
      freq[k] = 0;
      put(k, at === GHOST ? MAIN : SMALL);
    }
    return hits;
  };
}
