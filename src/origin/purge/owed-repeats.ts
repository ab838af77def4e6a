// The tags a purge leader owes a second purge (purge-policy.ts says why), each with when it falls due. Kept in
// due order: every call owes its tags `repeatAfterMs` after it was sent, and calls go out one after another, so
// a tag owed again moves to the end. Tags compare without case, as Cloudflare's do (purge-policy.ts, batchOf).
// In memory only: a leader that shuts down sends them first (purger.ts).

import { ALL_ITEMS_TAG } from "../../shared/cache-tag.ts";

/** Due tags to send in one call, and due tags that call already purges (it covers their repeat). */
export interface DueRepeats {
  send: string[];
  covered: string[];
}

export class OwedRepeats {
  /** By the tag without case: the tag as it was sent, and when its repeat falls due. */
  readonly #due = new Map<string, { tag: string; due: number }>();
  /** More distinct tags than this become one repeat of ALL_ITEMS_TAG. */
  readonly #bound: number;

  constructor(bound: number) {
    this.#bound = bound;
  }

  get size(): number {
    return this.#due.size;
  }

  /** Whether the wide repeat, of every item, is owed. */
  get owesEveryItem(): boolean {
    return this.#due.has(ALL_ITEMS_TAG);
  }

  /** When the first owed repeat falls due; Infinity when none is owed. */
  firstDue(): number {
    for (const owed of this.#due.values()) return owed.due;
    return Infinity;
  }

  /** `tags` are owed a repeat at `due` (no earlier than any owed before). */
  owe(tags: readonly string[], due: number): void {
    if (tags.length === 0) return;
    // A wide repeat due now or later covers every repeat due before it; past the bound (distinct tags: one owed
    // again is still one) one is cheaper.
    const added = new Set(tags.map((tag) => tag.toLowerCase()).filter((folded) => !this.#due.has(folded))).size;
    if (tags.includes(ALL_ITEMS_TAG) || this.#due.size + added > this.#bound) {
      this.#due.clear();
      this.#due.set(ALL_ITEMS_TAG, { tag: ALL_ITEMS_TAG, due });
      return;
    }
    for (const tag of tags) {
      const folded = tag.toLowerCase();
      this.#due.delete(folded);
      this.#due.set(folded, { tag, due });
    }
  }

  /** Owed tags due by `now`, up to `room` to send; those among `sending` are covered by that call already. */
  dueBy(now: number, room: number, sending: readonly string[] = []): DueRepeats {
    const send: string[] = [];
    const covered: string[] = [];
    const sent = new Set(sending.map((tag) => tag.toLowerCase()));
    for (const { tag, due } of this.#due.values()) {
      if (due > now) break;
      if (sent.has(tag.toLowerCase())) covered.push(tag);
      else if (send.length < room) send.push(tag);
      else break;
    }
    return { send, covered };
  }

  /** A call carrying them was accepted; returns how many tags it sent as repeats only. */
  repaid(repeats: DueRepeats): number {
    for (const tag of repeats.send) this.#due.delete(tag.toLowerCase());
    for (const tag of repeats.covered) this.#due.delete(tag.toLowerCase());
    return repeats.send.length;
  }

  /** Nothing owed falls due after `at` (keeps the order); returns how many were moved earlier. */
  dueNoLaterThan(at: number): number {
    let moved = 0;
    for (const owed of this.#due.values()) {
      if (owed.due > at) {
        owed.due = at;
        moved++;
      }
    }
    return moved;
  }
}
