import { grownArray, grownCapacity } from "./capacity-growth.ts";

/**
 * Slot numbers for the off-heap cache: the lowest never-used number, or one given back. Slots are
 * indexes into every per-slot typed array, so reusing them keeps those arrays as long as the most
 * entries ever held at once, not as long as the number of entries ever stored.
 */
export class SlotPool {
  #free = new Int32Array(0);
  #freeCount = 0;
  #used = 0;

  /** One more than the highest slot ever handed out: the per-slot arrays' needed length. */
  get highWater(): number {
    return this.#used;
  }

  get byteSize(): number {
    return this.#free.byteLength;
  }

  take(): number {
    if (this.#freeCount > 0) return this.#free[--this.#freeCount]!;
    // Room for every slot ever handed out, so that give() never allocates (it runs inside get()).
    if (this.#used === this.#free.length) this.#free = grownArray(this.#free, grownCapacity(this.#free.length, this.#used + 1));
    return this.#used++;
  }

  give(slot: number): void {
    this.#free[this.#freeCount++] = slot;
  }

  /** Every slot is free again (numbers restart from 0; the array keeps its length). */
  clear(): void {
    this.#freeCount = 0;
    this.#used = 0;
  }
}
