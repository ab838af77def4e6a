import { grownArray, grownCapacity } from "./capacity-growth.ts";
import { SlotLists } from "./slot-lists.ts";

const ORDER = 0;

/**
 * Expired entries a cache reclaims per `set`, at most: more than the one entry a set can add, so expired
 * entries never pile up, and few enough that a set after a long idle spell stays O(1).
 */
export const EXPIRED_PER_SET = 8;

/**
 * Time-to-live bookkeeping: each slot's expiry time, and the slots in write order. With one TTL for
 * every entry, write order is expiry order, so the expired entries are always at the head and can
 * be reclaimed without a scan.
 */
export class ExpiryQueue {
  readonly #order = new SlotLists(1);
  #expiresAt = new Float64Array(16);

  /** Record that `slot` was (re)written and lives until `expiresAt`. */
  schedule(slot: number, expiresAt: number): void {
    if (slot >= this.#expiresAt.length) this.#grow(slot + 1);
    this.#expiresAt[slot] = expiresAt;
    this.#order.pushTail(ORDER, slot);
  }

  /** As `schedule`, for a slot already in the queue. */
  reschedule(slot: number, expiresAt: number): void {
    this.#order.remove(slot);
    this.schedule(slot, expiresAt);
  }

  remove(slot: number): void {
    this.#order.remove(slot);
  }

  isExpired(slot: number, now: number): boolean {
    return now >= this.#expiresAt[slot]!;
  }

  /** The oldest write if it has expired at `now`, else -1. */
  oldestExpired(now: number): number {
    const oldest = this.#order.head(ORDER);
    return oldest !== -1 && now >= this.#expiresAt[oldest]! ? oldest : -1;
  }

  clear(): void {
    this.#order.clear();
  }

  /** Bytes of its typed arrays. */
  get byteSize(): number {
    return this.#order.byteSize + this.#expiresAt.byteLength;
  }

  #grow(count: number): void {
    const capacity = grownCapacity(this.#expiresAt.length, count);
    this.#order.ensureCapacity(capacity);
    this.#expiresAt = grownArray(this.#expiresAt, capacity);
  }
}
