import { GhostHistory } from "./ghost-history.ts";

/** Each ghost remembers as many keys as 10% of the cache's entries. */
const GHOST_FRACTION = 0.1;
/** Window growth or shrinkage per ghost hit, in multiples of the returning entry's weight. */
const STEP = 2;
/** The window never takes more than this share of the cache: beyond it TinyLFU's filter is lost. */
const MAX_WINDOW_FRACTION = 0.3;

/**
 * Sizes Window TinyLFU's admission window from ARC-style ghost evidence, per miss rather than per
 * sample of thousands of requests (Caffeine's hill climber is too slow for the web traces):
 *
 * - a miss on a key the admission filter recently rejected says a larger window would have kept
 *   it long enough to prove itself: grow the window;
 * - a miss on a key recently evicted from the main space says a larger main space would have
 *   kept it: shrink the window.
 *
 * Both ghosts are equally long, so their hits are comparable evidence.
 */
export class WindowSizer {
  readonly #rejected: GhostHistory;
  readonly #evicted: GhostHistory;
  #maxTarget: number;
  #initialTarget: number;
  #target: number;

  /** Bytes of the ghosts of a sizer constructed for `expectedEntries`. */
  static bytesFor(expectedEntries: number): number {
    return 2 * GhostHistory.bytesFor(Math.ceil(GHOST_FRACTION * expectedEntries));
  }

  constructor(maximum: number, initialWindow: number, expectedEntries: number) {
    const ghostCapacity = Math.ceil(GHOST_FRACTION * expectedEntries);
    this.#rejected = new GhostHistory(ghostCapacity);
    this.#evicted = new GhostHistory(ghostCapacity);
    this.#maxTarget = MAX_WINDOW_FRACTION * maximum;
    this.#initialTarget = initialWindow;
    this.#target = initialWindow;
  }

  /** The window size (weight) the evidence asks for. */
  get target(): number {
    return this.#target;
  }

  /** A candidate lost its admission duel (or left with nothing to duel against). */
  recordRejected(hash: number): void {
    this.#rejected.add(hash);
  }

  /** An entry of the main space was evicted. */
  recordEvicted(hash: number): void {
    this.#evicted.add(hash);
  }

  /**
   * A new entry arrives (a miss was filled). Updates the target from the ghosts; returns whether
   * the key was a recently rejected candidate, which the admission duel counts in its favour.
   */
  onArrival(hash: number, weight: number): boolean {
    if (this.#rejected.has(hash)) {
      this.#target = Math.min(this.#maxTarget, this.#target + STEP * weight);
      return true;
    }
    if (this.#evicted.has(hash)) this.#target = Math.max(0, this.#target - STEP * weight);
    return false;
  }

  /** The cache now holds about `entries` entries: lengthen the ghosts to match. */
  ensureCapacity(entries: number): void {
    const ghostCapacity = Math.ceil(GHOST_FRACTION * entries);
    this.#rejected.ensureCapacity(ghostCapacity);
    this.#evicted.ensureCapacity(ghostCapacity);
  }

  /** The cache's maximum weight became `maximum`, `factor` times the old one: scale the targets. */
  rescale(maximum: number, factor: number): void {
    this.#maxTarget = MAX_WINDOW_FRACTION * maximum;
    this.#initialTarget *= factor;
    this.#target = Math.min(this.#maxTarget, this.#target * factor);
  }

  /** Bytes of the two ghosts. */
  get byteSize(): number {
    return this.#rejected.byteSize + this.#evicted.byteSize;
  }

  clear(): void {
    this.#rejected.clear();
    this.#evicted.clear();
    this.#target = this.#initialTarget;
  }
}
