import { expectedEntries, policyMaximum } from "./slab-budget.ts";
import { WindowTinyLfu, type EvictListener } from "./window-tinylfu.ts";

/** What the policy is sized for before the first entry calibrates it. */
const UNCALIBRATED_ENTRIES = 4;

/**
 * Keeps the off-heap cache's policy maximum equal to what its byte bound leaves for entries once the
 * structures sized by the expected entry count (the sketch, which doubles, and the ghosts) are
 * taken out; and sizes those structures on the first entry, when the policy can first tell how
 * many entries will fit (ReadyCache's unit weights told it at construction).
 */
export class PolicyBudget {
  readonly policy: WindowTinyLfu;
  readonly #maxBytes: number;
  readonly #slabBytes: number;
  #sizingBytes = WindowTinyLfu.sizingBytesFor(UNCALIBRATED_ENTRIES);
  #calibrated = false;

  constructor(maxBytes: number, slabBytes: number, onEvict: EvictListener) {
    this.#maxBytes = maxBytes;
    this.#slabBytes = slabBytes;
    this.policy = new WindowTinyLfu(policyMaximum(maxBytes, slabBytes, this.#sizingBytes), onEvict, UNCALIBRATED_ENTRIES);
  }

  /**
   * Before the first entry (of `weight`) is added: size the sketch, ghosts and window for as many
   * entries like it as fit beside them, as ReadyCache does with unit weights.
   */
  beforeAdd(weight: number): void {
    if (this.#calibrated) return;
    this.#calibrated = true;
    const entries = expectedEntries(this.#maxBytes, this.#slabBytes, weight);
    this.policy.setMaximum(policyMaximum(this.#maxBytes, this.#slabBytes, WindowTinyLfu.sizingBytesFor(entries)));
    this.policy.calibrate(entries, weight);
    this.afterAdd();
  }

  /** After an add: a wider sketch or longer ghosts hold more bytes, taken from the maximum. */
  afterAdd(): void {
    const sizingBytes = this.policy.sizingBytes;
    if (sizingBytes === this.#sizingBytes) return;
    this.#sizingBytes = sizingBytes;
    this.policy.setMaximum(policyMaximum(this.#maxBytes, this.#slabBytes, sizingBytes));
  }
}
