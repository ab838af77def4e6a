/**
 * The byte layout of one cache entry inside a slab, and the only code that reads or writes it.
 *
 *   offset  0  float64  filledAt   the clock when the value was set
 *           8  int32    slot       the entry's slot, or DEAD once the record is garbage
 *          12  int32    keyLength
 *          16  int32    valueLength
 *          20  int32    (unused: keeps the key 8-aligned after a 24-byte header)
 *          24  key bytes (latin1, one byte per char), then value bytes, padded to a multiple of 8
 *
 * A record carries its slot so compaction can walk a slab and tell live records (whose slot still
 * points here) from garbage, and move the live ones without any other index. Records are 8-aligned
 * so the header is read through Int32Array / Float64Array views, not DataView calls.
 */

/** The three views every slab is read through (made once per slab, never per entry). */
export interface SlabViews {
  readonly bytes: Uint8Array;
  readonly words: Int32Array;
  readonly floats: Float64Array;
}

export const RECORD_HEADER_BYTES = 24;
export const RECORD_ALIGNMENT = 8;
/** `slot` of a record nothing points to any more. */
export const DEAD = -1;

const FILLED_AT = 0; // in float64s
const SLOT = 2; // in int32s
const KEY_LENGTH = 3;
const VALUE_LENGTH = 4;

export function slabViews(buffer: ArrayBuffer): SlabViews {
  return { bytes: new Uint8Array(buffer), words: new Int32Array(buffer), floats: new Float64Array(buffer) };
}

/** Bytes a record of this key and value occupies in a slab. */
export function recordBytes(keyLength: number, valueLength: number): number {
  return alignRecord(RECORD_HEADER_BYTES + keyLength + valueLength);
}

export function alignRecord(bytes: number): number {
  return Math.ceil(bytes / RECORD_ALIGNMENT) * RECORD_ALIGNMENT;
}

/** Refuse a key that cannot be stored one byte per char (a char code above 0xff); ids are ASCII. */
export function assertLatin1Key(key: string): void {
  for (let i = 0; i < key.length; i++) {
    if (key.charCodeAt(i) > 0xff) {
      throw new RangeError(`SlabCache: keys are latin1 (char codes ≤ 0xff); ${JSON.stringify(key.slice(0, 40))} has 0x${key.charCodeAt(i).toString(16)} at ${i}`);
    }
  }
}

export function writeRecord(slab: SlabViews, at: number, slot: number, key: string, value: Uint8Array, filledAt: number): void {
  slab.floats[(at >> 3) + FILLED_AT] = filledAt;
  const words = slab.words;
  const header = at >> 2;
  words[header + SLOT] = slot;
  words[header + KEY_LENGTH] = key.length;
  words[header + VALUE_LENGTH] = value.length;
  words[header + 5] = 0;
  const bytes = slab.bytes;
  const keyStart = at + RECORD_HEADER_BYTES;
  for (let i = 0; i < key.length; i++) bytes[keyStart + i] = key.charCodeAt(i);
  bytes.set(value, keyStart + key.length);
}

/** Does the record at `at` hold exactly `key`? (Lengths first: most mismatches end there.) */
export function recordKeyEquals(slab: SlabViews, at: number, key: string): boolean {
  if (slab.words[(at >> 2) + KEY_LENGTH] !== key.length) return false;
  const bytes = slab.bytes;
  const keyStart = at + RECORD_HEADER_BYTES;
  for (let i = 0; i < key.length; i++) {
    if (bytes[keyStart + i] !== key.charCodeAt(i)) return false;
  }
  return true;
}

export function recordSlot(slab: SlabViews, at: number): number {
  return slab.words[(at >> 2) + SLOT]!;
}

export function markRecordDead(slab: SlabViews, at: number): void {
  slab.words[(at >> 2) + SLOT] = DEAD;
}

export function recordFilledAt(slab: SlabViews, at: number): number {
  return slab.floats[(at >> 3) + FILLED_AT]!;
}

/** Bytes the record at `at` occupies (header, key, value, padding). */
export function recordSize(slab: SlabViews, at: number): number {
  const header = at >> 2;
  return recordBytes(slab.words[header + KEY_LENGTH]!, slab.words[header + VALUE_LENGTH]!);
}

/** A view of the record's value bytes (shares the slab's memory). */
export function recordValue(slab: SlabViews, at: number): Uint8Array {
  const header = at >> 2;
  const start = at + RECORD_HEADER_BYTES + slab.words[header + KEY_LENGTH]!;
  return slab.bytes.subarray(start, start + slab.words[header + VALUE_LENGTH]!);
}

/** Copy the record at `from` in `source` to `to` in `target` (the slabs may be the same). */
export function copyRecord(source: SlabViews, from: number, target: SlabViews, to: number, size: number): void {
  if (source === target) target.bytes.copyWithin(to, from, from + size);
  else target.bytes.set(source.bytes.subarray(from, from + size), to);
}
