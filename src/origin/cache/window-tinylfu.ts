import { grownArray, grownCapacity } from "./capacity-growth.ts";
import { FrequencySketch } from "./frequency-sketch.ts";
import { HitBuffer } from "./hit-buffer.ts";
import { SlotLists } from "./slot-lists.ts";
import { WindowSizer } from "./window-sizer.ts";

// Where a slot is.
const WINDOW = 0;
const PROBATION = 1;
const PROTECTED = 2;

// What a slot did before it reached its admission duel.
const RETURNING = 1; // it is back soon after the filter rejected it
const WINDOW_HIT = 2; // it was requested again while in the window

const INITIAL_WINDOW_FRACTION = 0.01;
const PROTECTED_FRACTION = 0.8;
/** Candidates at least this popular win a lost duel 1 time in 128 (Caffeine's hash-flooding guard). */
const ADMIT_HASHDOS_THRESHOLD = 6;
/** Bound on entries moved between segments per operation, so every operation stays O(1). */
const QUEUE_TRANSFER_THRESHOLD = 1000;
/** Hits applied together (HitBuffer): about as many memory misses as a core keeps in flight. */
const HIT_BATCH = 32;
/**
 * Until the cache has held more entries, size the sketch and ghosts for min(maximum, this) (the
 * default, for unit weights where `maximum` bounds the entries).
 */
export const INITIAL_EXPECTED_ENTRIES = 1 << 16;

/** Called for each slot the policy evicts, after the policy has forgotten it. */
export type EvictListener = (slot: number) => void;
/** Told of a popular slot while the policy applies its hits, which may be in the middle of a change to the cache: it must not use the cache. */
export type FrequentHitListener = (slot: number, frequency: number) => void;

/**
 * The slim-edge eviction and admission policy: Window TinyLFU (Einziger, Friedman, Manes) as in
 * Caffeine, with the window sized by ghost evidence instead of a hill climber.
 *
 * New entries enter a small LRU window. An entry leaving the window is a candidate: it duels the
 * main space's LRU victim and enters only if the frequency sketch says it is more popular (or it
 * was requested again while in the window). The main space is a segmented LRU: probation, and
 * protected for entries hit while on probation. `WindowSizer` moves space between window and main.
 *
 * The policy knows slots, weights and key hashes only; the cache maps keys to slots and values.
 * All state is in typed arrays indexed by slot; no per-entry objects. The sketch and the ghosts
 * are sized for the most entries held so far (at least the expected entries given at construction).
 *
 * Why one file of about 430 lines: the three segments, their weights and the per-slot arrays are one
 * structure whose invariants (each slot in one list, each segment's weight the sum of its slots') every
 * operation maintains, on the hot path of every cache hit; the parts that need no such state are
 * already rooms of their own (FrequencySketch, WindowSizer, SlotLists, HitBuffer). Caffeine keeps the same
 * policy in one class for the same reason.
 */
export class WindowTinyLfu {
  /** Tagged: a slot's segment is the list it is in, and its key hash is the owner's word. */
  readonly #lists = new SlotLists(3, 16, true);
  #flags = new Uint8Array(16);
  #weight = new Float64Array(16);
  readonly #hits: HitBuffer;
  readonly #sketch: FrequencySketch;
  #sizer: WindowSizer;
  readonly #onEvict: EvictListener;
  #frequentHits: FrequentHitListener | undefined;
  #frequentMinimum = 0;

  #maximum: number;
  #expectedEntries: number;
  #windowMaximum: number;
  #protectedMaximum: number;
  #weightedSize = 0;
  #windowWeight = 0;
  #protectedWeight = 0;
  #entries = 0;
  #random = 0x2545f491;

  /**
   * `maximum`: the weight bound. `expectedEntries`: what to size the sketch and ghosts for until more
   * entries are held; by default min(maximum, 65,536), right when every entry weighs at least 1 and a
   * cache of 1-byte entries is as long as its maximum.
   */
  constructor(maximum: number, onEvict: EvictListener, expectedEntries = Math.min(maximum, INITIAL_EXPECTED_ENTRIES)) {
    this.#maximum = maximum;
    this.#onEvict = onEvict;
    this.#windowMaximum = maximum - Math.floor((1 - INITIAL_WINDOW_FRACTION) * maximum);
    this.#protectedMaximum = Math.floor(PROTECTED_FRACTION * (maximum - this.#windowMaximum));
    this.#expectedEntries = Math.max(1, expectedEntries);
    this.#sketch = new FrequencySketch(this.#expectedEntries);
    this.#hits = new HitBuffer(HIT_BATCH, this.#lists, this.#sketch, (slot, hash) => this.#access(slot, hash));
    this.#sizer = new WindowSizer(maximum, this.#windowMaximum, this.#expectedEntries);
  }

  /** Sum of the weights of the slots the policy holds. */
  get weightedSize(): number {
    return this.#weightedSize;
  }

  get maximum(): number {
    return this.#maximum;
  }

  /** Bytes of all its typed arrays (slot state, sketch, ghosts). */
  get byteSize(): number {
    const perSlot = this.#flags.byteLength + this.#weight.byteLength;
    return this.#lists.byteSize + perSlot + this.#sketch.byteSize + this.#sizer.byteSize + this.#hits.byteSize;
  }

  /**
   * Bytes of the structures sized by the expected entry count rather than by slots: the sketch
   * (which doubles) and the ghosts.
   */
  get sizingBytes(): number {
    return this.#sketch.byteSize + this.#sizer.byteSize;
  }

  /** `sizingBytes` of a policy sized (or calibrated) for `expectedEntries`. */
  static sizingBytesFor(expectedEntries: number): number {
    const entries = Math.max(1, expectedEntries);
    return FrequencySketch.bytesFor(entries) + WindowSizer.bytesFor(entries);
  }

  /**
   * Size the sketch, the ghosts and the admission window for `expectedEntries` entries of `weight`
   * each, before the first entry arrives: a byte-weighted cache learns its entry size from its first
   * entry. The window then holds the same whole number of entries as a cache of unit weights whose
   * maximum is as many entries, so byte weights do not change the policy's decisions.
   */
  calibrate(expectedEntries: number, weight: number): void {
    this.#hits.apply();
    const fit = Math.floor(this.#maximum / weight);
    this.#windowMaximum = Math.min(this.#maximum, (fit - Math.floor((1 - INITIAL_WINDOW_FRACTION) * fit)) * weight);
    this.#protectedMaximum = Math.floor(PROTECTED_FRACTION * (this.#maximum - this.#windowMaximum));
    this.#expectedEntries = Math.max(1, expectedEntries);
    this.#sketch.ensureCapacity(this.#expectedEntries);
    this.#sizer = new WindowSizer(this.#maximum, this.#windowMaximum, this.#expectedEntries);
  }

  /** The sketch's estimate of how often `hash` was seen recently (0-15). */
  frequency(hash: number): number {
    return this.#sketch.frequency(hash);
  }

  /**
   * Tell `listener` of every hit, as it is applied, whose key's estimate is then at least `minimum`:
   * the sketch's block is in the processor's cache at that moment, so the caller learns which slots
   * are popular without a memory access of its own (the ready items' heap tier).
   */
  watchFrequentHits(minimum: number, listener: FrequentHitListener): void {
    this.#frequentMinimum = minimum;
    this.#frequentHits = listener;
  }

  /** The key hash a held (or just evicted) slot was added with. */
  hashOf(slot: number): number {
    return this.#lists.word(slot);
  }

  /**
   * Change the weight bound (the off-heap cache lowers it when its sketch widens). The window and
   * protected segments keep their shares; evicts at once if the slots now weigh too much.
   */
  setMaximum(maximum: number): void {
    if (maximum === this.#maximum) return;
    this.#hits.apply();
    const factor = this.#maximum > 0 ? maximum / this.#maximum : 1;
    this.#maximum = maximum;
    this.#windowMaximum = Math.floor(this.#windowMaximum * factor);
    this.#protectedMaximum = Math.floor(this.#protectedMaximum * factor);
    this.#sizer.rescale(maximum, factor);
    this.#maintain();
  }

  /**
   * Evict the slot the policy values least, without a duel: probation's head, else protected's,
   * else the window's. For memory pressure the weights did not foresee; false if nothing is held.
   */
  evictOne(): boolean {
    this.#hits.apply();
    let slot = this.#lists.head(PROBATION);
    if (slot === -1) slot = this.#lists.head(PROTECTED);
    if (slot === -1) slot = this.#lists.head(WINDOW);
    if (slot === -1) return false;
    this.#evict(slot);
    return true;
  }

  /** A request found the slot (`hash`: its key's, if the caller has it); applied in batches. */
  recordHit(slot: number, hash = this.#lists.word(slot)): void {
    this.#hits.push(slot, hash);
  }

  /** Take in a new slot (a miss being filled). May evict other slots, or this one (declined). */
  add(slot: number, hash: number, weight: number): void {
    this.#hits.apply();
    this.#ensureSlots(slot + 1);
    this.#weight[slot] = weight;
    this.#flags[slot] = this.#sizer.onArrival(hash, weight) ? RETURNING : 0;
    this.#lists.pushTail(WINDOW, slot);
    this.#lists.setWord(slot, hash);
    this.#windowWeight += weight;
    this.#weightedSize += weight;
    this.#entries++;
    this.#sketch.increment(hash);
    this.#maintain();
    if (this.#entries > this.#expectedEntries) {
      this.#expectedEntries = this.#entries;
      this.#sketch.ensureCapacity(this.#entries);
      this.#sizer.ensureCapacity(this.#entries);
    }
  }

  /** A held slot's value was replaced: it has a new weight and counts as a request. May evict. */
  update(slot: number, weight: number): void {
    this.#hits.apply();
    const delta = weight - this.#weight[slot]!;
    this.#weight[slot] = weight;
    this.#weightedSize += delta;
    const segment = this.#lists.listOf(slot);
    if (segment === WINDOW) this.#windowWeight += delta;
    else if (segment === PROTECTED) this.#protectedWeight += delta;
    this.#access(slot, this.#lists.word(slot));
    this.#maintain();
  }

  /** Forget a held slot (deleted or expired); no eviction callback. */
  remove(slot: number): void {
    this.#hits.apply();
    this.#detach(slot);
  }

  clear(): void {
    this.#hits.clear();
    this.#lists.clear();
    this.#weightedSize = 0;
    this.#windowWeight = 0;
    this.#protectedWeight = 0;
    this.#entries = 0;
    this.#sketch.clear();
    this.#sizer.clear();
  }

  #access(slot: number, hash: number): void {
    const frequency = this.#sketch.increment(hash);
    if (frequency >= this.#frequentMinimum && this.#frequentHits !== undefined) this.#frequentHits(slot, frequency);
    const segment = this.#lists.listOf(slot);
    if (segment === WINDOW) {
      this.#flags[slot]! |= WINDOW_HIT;
      this.#lists.moveToTail(WINDOW, slot);
    } else if (segment === PROTECTED) {
      this.#lists.moveToTail(PROTECTED, slot);
    } else if (this.#weight[slot]! > this.#protectedMaximum) {
      this.#lists.moveToTail(PROBATION, slot);
    } else {
      // Promotion; the protected segment's overflow is demoted in #maintain.
      this.#lists.moveToTail(PROTECTED, slot);
      this.#protectedWeight += this.#weight[slot]!;
    }
  }

  #maintain(): void {
    if (this.#weightedSize > this.#maximum || this.#windowWeight > this.#windowMaximum) {
      this.#evictFromMain(this.#evictFromWindow());
    }
    this.#demoteFromProtected();
    this.#resizeWindow();
  }

  /** Move the window's overflow to probation's tail; returns the first slot moved, or -1. */
  #evictFromWindow(): number {
    let first = -1;
    let slot = this.#lists.head(WINDOW);
    while (this.#windowWeight > this.#windowMaximum && slot !== -1) {
      const next = this.#lists.next(slot);
      const weight = this.#weight[slot]!;
      if (weight !== 0) {
        this.#lists.moveToTail(PROBATION, slot);
        this.#windowWeight -= weight;
        if (first === -1) first = slot;
      }
      slot = next;
    }
    return first;
  }

  /**
   * Evict until the weight fits (Caffeine's `evictFromMain`): each candidate (an entry that just
   * left the window, at probation's tail) duels the victim at probation's head, and the loser
   * goes. Falls back to the protected segment and then the window when probation runs dry.
   */
  #evictFromMain(firstCandidate: number): void {
    const lists = this.#lists;
    let candidate = firstCandidate;
    let candidateSegment = PROBATION;
    let victimSegment = PROBATION;
    let victim = lists.head(PROBATION);
    while (this.#weightedSize > this.#maximum) {
      if (candidate === -1 && candidateSegment === PROBATION) {
        candidate = lists.head(WINDOW);
        candidateSegment = WINDOW;
      }
      if (candidate === -1 && victim === -1) {
        if (victimSegment === PROBATION) {
          victim = lists.head(PROTECTED);
          victimSegment = PROTECTED;
          continue;
        } else if (victimSegment === PROTECTED) {
          victim = lists.head(WINDOW);
          victimSegment = WINDOW;
          continue;
        }
        break;
      }
      if (victim !== -1 && this.#weight[victim] === 0) {
        victim = lists.next(victim);
        continue;
      } else if (candidate !== -1 && this.#weight[candidate] === 0) {
        candidate = lists.next(candidate);
        continue;
      }
      if (victim === -1) {
        const evict = candidate;
        candidate = lists.next(candidate);
        this.#reject(evict);
      } else if (candidate === -1) {
        const evict = victim;
        victim = lists.next(victim);
        this.#evictVictim(evict);
      } else if (candidate === victim) {
        victim = lists.next(victim);
        this.#reject(candidate);
        candidate = -1;
      } else if (this.#admit(candidate, victim)) {
        const evict = victim;
        victim = lists.next(victim);
        this.#evictVictim(evict);
        candidate = lists.next(candidate);
      } else {
        const evict = candidate;
        candidate = lists.next(candidate);
        this.#reject(evict);
      }
    }
  }

  /** The TinyLFU duel: does the candidate deserve the victim's place? */
  #admit(candidate: number, victim: number): boolean {
    const flags = this.#flags[candidate]!;
    if ((flags & WINDOW_HIT) !== 0) return true;
    const victimFrequency = this.#sketch.frequency(this.#lists.word(victim));
    const candidateFrequency = this.#sketch.frequency(this.#lists.word(candidate)) + (flags & RETURNING);
    if (candidateFrequency > victimFrequency) return true;
    if (candidateFrequency >= ADMIT_HASHDOS_THRESHOLD) return (this.#nextRandom() & 127) === 0;
    return false;
  }

  #reject(slot: number): void {
    this.#sizer.recordRejected(this.#lists.word(slot));
    this.#evict(slot);
  }

  #evictVictim(slot: number): void {
    this.#sizer.recordEvicted(this.#lists.word(slot));
    this.#evict(slot);
  }

  /** Follow the sizer's target: move space (and entries) between the window and protected. */
  #resizeWindow(): void {
    const change = Math.trunc(this.#sizer.target - this.#windowMaximum);
    if (change > 0) this.#increaseWindow(change);
    else if (change < 0) this.#decreaseWindow(-change);
  }

  #increaseWindow(amount: number): void {
    if (this.#protectedMaximum === 0) return;
    let quota = Math.min(amount, this.#protectedMaximum);
    this.#protectedMaximum -= quota;
    this.#windowMaximum += quota;
    this.#demoteFromProtected();
    for (let i = 0; i < QUEUE_TRANSFER_THRESHOLD; i++) {
      let slot = this.#lists.head(PROBATION);
      if (slot === -1 || quota < this.#weight[slot]!) slot = this.#lists.head(PROTECTED);
      if (slot === -1) break;
      const weight = this.#weight[slot]!;
      if (quota < weight) break;
      quota -= weight;
      if (this.#lists.listOf(slot) === PROTECTED) this.#protectedWeight -= weight;
      this.#windowWeight += weight;
      this.#lists.moveToTail(WINDOW, slot);
    }
    // Space that no entry moved with goes back to the main space.
    this.#protectedMaximum += quota;
    this.#windowMaximum -= quota;
  }

  #decreaseWindow(amount: number): void {
    if (this.#windowMaximum <= 1) return;
    let quota = Math.min(amount, this.#windowMaximum - 1);
    this.#protectedMaximum += quota;
    this.#windowMaximum -= quota;
    for (let i = 0; i < QUEUE_TRANSFER_THRESHOLD; i++) {
      const slot = this.#lists.head(WINDOW);
      if (slot === -1) break;
      const weight = this.#weight[slot]!;
      if (quota < weight) break;
      quota -= weight;
      this.#windowWeight -= weight;
      this.#lists.moveToTail(PROBATION, slot);
    }
    this.#protectedMaximum -= quota;
    this.#windowMaximum += quota;
  }

  #demoteFromProtected(): void {
    for (let i = 0; i < QUEUE_TRANSFER_THRESHOLD && this.#protectedWeight > this.#protectedMaximum; i++) {
      const slot = this.#lists.head(PROTECTED);
      if (slot === -1) break;
      this.#lists.moveToTail(PROBATION, slot);
      this.#protectedWeight -= this.#weight[slot]!;
    }
  }

  #evict(slot: number): void {
    this.#detach(slot);
    this.#onEvict(slot);
  }

  #detach(slot: number): void {
    const weight = this.#weight[slot]!;
    const segment = this.#lists.listOf(slot);
    if (segment === WINDOW) this.#windowWeight -= weight;
    else if (segment === PROTECTED) this.#protectedWeight -= weight;
    this.#lists.remove(slot);
    this.#weightedSize -= weight;
    this.#entries--;
  }

  #ensureSlots(count: number): void {
    if (count <= this.#flags.length) return;
    const capacity = grownCapacity(this.#flags.length, count);
    this.#lists.ensureCapacity(capacity);
    this.#flags = grownArray(this.#flags, capacity);
    this.#weight = grownArray(this.#weight, capacity);
  }

  /** xorshift32, for the rare random admission that defeats hash flooding of the sketch. */
  #nextRandom(): number {
    let x = this.#random;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.#random = x;
    return x;
  }
}
