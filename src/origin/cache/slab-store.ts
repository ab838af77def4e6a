import { grownArray, grownCapacity } from "./capacity-growth.ts";
import { SlabArena } from "./slab-arena.ts";
import {
  copyRecord,
  markRecordDead,
  recordBytes,
  recordFilledAt,
  recordKeyEquals,
  recordSize,
  recordSlot,
  recordValue,
  writeRecord,
} from "./slab-record.ts";

export interface SlabStoreOptions {
  /** Bytes per slab. */
  slabBytes: number;
  /** Records larger than this get a buffer of their own instead of a place in a slab. */
  maxRecordInSlab: number;
  /** Bytes the store may still allocate now: the cache's bound minus everything the cache holds. */
  available: () => number;
  /** A record that was already stored moved (replaced or compacted): the cache refiles its index entry. */
  moved: (slot: number, slab: number, offset: number) => void;
}

/**
 * Where every entry's bytes live: per slot, the slab and offset of its record, in a log-structured
 * arena of equal slabs (SlabArena) plus a buffer of its own for each record too large for a slab.
 *
 * Why log-structured: a set appends at the active slab's end, with no size classes, so a mix of
 * 40-byte 404 answers and 60 KB items loses nothing to class rounding and never needs classes
 * rebalanced; a delete only marks its record dead. When the bound leaves no room for another slab,
 * compaction copies the live records of the sealed slab with the fewest live bytes to the active
 * slab's end (continuing in the spare), which frees that slab whole. Memory is therefore always whole
 * buffers allocated within the bound: fragmentation can cost room for entries (the cache holds back
 * 1/16 of its bound plus two slabs for it) but never bytes beyond the bound.
 *
 * Measured (`node --expose-gc bench/cache-memory.ts`, 256 MiB, origin-like sizes from 0 B to 64 KiB):
 * a fill copies 0.02 bytes per byte set; a uniform random churn over twice the keys that fit, the
 * worst case for a log, 6.4 bytes per byte set (each set is a miss that read the store, which costs
 * far more than a few KB of memcpy), with no eviction forced outside the policy.
 */
export class SlabStore {
  readonly #arena: SlabArena;
  readonly #maxRecordInSlab: number;
  readonly #moved: (slot: number, slab: number, offset: number) => void;
  #copiedBytes = 0;
  /**
   * Per slot s: [2s] the record's slab (-1: none), [2s + 1] its offset. Side by side, not two arrays:
   * with millions of slots each array read on a hit is a cache and TLB miss of its own.
   */
  #location = new Int32Array(0);

  constructor(options: SlabStoreOptions) {
    this.#arena = new SlabArena(options.slabBytes, options.available);
    this.#maxRecordInSlab = options.maxRecordInSlab;
    this.#moved = options.moved;
  }

  /** Bytes of every slab and dedicated buffer held. */
  get slabBytes(): number {
    return this.#arena.heldBytes;
  }

  /** Bytes of the per-slot location arrays. */
  get metaBytes(): number {
    return this.#location.byteLength;
  }

  /** Bytes compaction has copied so far (its whole cost). */
  get copiedBytes(): number {
    return this.#copiedBytes;
  }

  get allocations(): number {
    return this.#arena.allocations;
  }

  ensureSlots(count: number): void {
    const slots = this.#location.length / 2;
    if (count <= slots) return;
    const location = grownArray(this.#location, 2 * grownCapacity(slots, count));
    for (let i = 2 * slots; i < location.length; i += 2) location[i] = -1;
    this.#location = location;
  }

  has(slot: number): boolean {
    return this.#location[2 * slot] !== -1;
  }

  /** Is `buffer` one of the store's own (a value view handed out by `value`)? */
  owns(buffer: ArrayBufferLike): boolean {
    return this.#arena.owns(buffer);
  }

  /** The slab of the slot's record (the index files it beside the slot). */
  slabOf(slot: number): number {
    return this.#location[2 * slot]!;
  }

  offsetOf(slot: number): number {
    return this.#location[2 * slot + 1]!;
  }

  // Records are read by location, which a hit has from the index: reading it here again would be
  // one more random memory access per hit.
  keyEqualsAt(slab: number, offset: number, key: string): boolean {
    return recordKeyEquals(this.#arena.views(slab), offset, key);
  }

  valueAt(slab: number, offset: number): Uint8Array {
    return recordValue(this.#arena.views(slab), offset);
  }

  filledAtAt(slab: number, offset: number): number {
    return recordFilledAt(this.#arena.views(slab), offset);
  }

  /**
   * Store the slot's record, replacing any it had. False if the bound leaves no room even after
   * compaction: the caller evicts something and tries again. `value` must not be a view of a slab.
   */
  write(slot: number, key: string, value: Uint8Array, filledAt: number): boolean {
    const arena = this.#arena;
    const size = recordBytes(key.length, value.length);
    let slab: number;
    let at = 0;
    if (size > this.#maxRecordInSlab) {
      slab = this.#dedicated(size);
      if (slab === -1) return false;
    } else {
      if (!this.#makeRoom(size)) return false;
      slab = arena.active;
      at = arena.append(slab, size);
    }
    writeRecord(arena.views(slab), at, slot, key, value, filledAt);
    arena.addLive(slab, size);
    const replaced = this.has(slot);
    if (replaced) this.free(slot);
    this.#location[2 * slot] = slab;
    this.#location[2 * slot + 1] = at;
    if (replaced) this.#moved(slot, slab, at);
    return true;
  }

  /** Drop the slot's record: it becomes garbage (a slab left empty goes back to the pool). */
  free(slot: number): void {
    const slab = this.#location[2 * slot]!;
    const views = this.#arena.views(slab);
    const at = this.#location[2 * slot + 1]!;
    const size = recordSize(views, at);
    markRecordDead(views, at);
    this.#location[2 * slot] = -1;
    this.#arena.addLive(slab, -size);
  }

  /**
   * Give back at least one buffer's worth of memory (for the cache's other structures): an empty
   * slab, one that compaction empties, or last of all the spare. False if none can be emptied.
   */
  releaseSlab(): boolean {
    const arena = this.#arena;
    for (let attempts = arena.idLimit + 1; attempts > 0; attempts--) {
      if (arena.releaseEmpty()) return true;
      if (!this.#compactOnce()) break;
    }
    return arena.releaseSpare();
  }

  /** Forget every record; slabs stay allocated (pooled) for reuse, dedicated buffers go. */
  clear(): void {
    for (let i = 0; i < this.#location.length; i += 2) this.#location[i] = -1;
    this.#arena.clear();
  }

  /** Ensure the active slab has `size` bytes free at its end, by a fresh slab or by compaction. */
  #makeRoom(size: number): boolean {
    const arena = this.#arena;
    for (let attempts = arena.idLimit + 2; attempts > 0; attempts--) {
      const active = arena.active;
      if (active !== -1 && arena.used(active) + size <= arena.slabBytes) return true;
      const fresh = arena.freshSlab();
      if (fresh !== -1) {
        arena.activate(fresh);
        arena.ensureSpare();
      } else if (!this.#compactOnce()) {
        return false;
      }
    }
    return false;
  }

  /** A dedicated buffer for a record of `size` bytes, giving back slabs for room; -1 if none. */
  #dedicated(size: number): number {
    for (let attempts = this.#arena.idLimit + 1; attempts > 0; attempts--) {
      const slab = this.#arena.dedicated(size);
      if (slab !== -1 || !this.releaseSlab()) return slab;
    }
    return -1;
  }

  /**
   * Empty the sealed slab with the fewest live bytes by copying its live records to the active
   * slab's end, continuing in the spare when the active slab fills. False if no sealed slab has
   * room to gain, or there was nowhere to copy to.
   */
  #compactOnce(): boolean {
    const arena = this.#arena;
    const victim = arena.emptiestSealed();
    if (victim === -1) return false;
    const views = arena.views(victim);
    const end = arena.used(victim);
    for (let at = 0; at < end; ) {
      const size = recordSize(views, at);
      const slot = recordSlot(views, at);
      if (slot !== -1 && this.#location[2 * slot] === victim && this.#location[2 * slot + 1] === at) {
        if (!this.#move(slot, victim, at, size)) return false;
      }
      at += size;
    }
    arena.emptied(victim);
    return true;
  }

  /** Copy one live record to the active slab (or the spare, which then becomes active). */
  #move(slot: number, source: number, from: number, size: number): boolean {
    const arena = this.#arena;
    if (arena.active === -1 || arena.used(arena.active) + size > arena.slabBytes) {
      if (!arena.activateSpare()) return false;
    }
    const target = arena.active;
    const to = arena.append(target, size);
    copyRecord(arena.views(source), from, arena.views(target), to, size);
    arena.moveLive(source, target, size);
    this.#location[2 * slot] = target;
    this.#location[2 * slot + 1] = to;
    this.#moved(slot, target, to);
    this.#copiedBytes += size;
    return true;
  }
}
