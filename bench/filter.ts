/**
 * Which membership filter for the ids that exist: bits per id at the target false-positive rate,
 * the rate measured, and the cost of adding and looking up, for
 *
 *   classic Bloom         k bits anywhere in one array (k = 7 at 1%): fewest bits, k cache misses
 *   blocked Bloom (ours)  k bits in one 512-bit block, MembershipFilter: one cache miss
 *   split-block Bloom     one bit in each of eight 32-bit words of a 256-bit block (Parquet's)
 *
 * Cuckoo and xor/binary-fuse filters are not measured: xor and fuse filters are built once from the
 * whole set (ids also arrive one by one here), and a cuckoo filter's insert fails when its table is
 * full and it cannot grow without the ids, while a Bloom filter past its capacity only answers
 * "maybe" more often.
 *
 *   node bench/filter.ts [--capacity 1000000] [--rate 0.01] [--rounds 3]
 */
import { BenchCli } from "./lib/cli.ts";
import { blockedFalsePositiveRate, poissonMean } from "../src/origin/filter/bloom-sizing.ts";
import { idHashes } from "../src/origin/filter/id-hashes.ts";
import { MembershipFilter, membershipFilterSize } from "../src/origin/filter/membership-filter.ts";

const cli: BenchCli = new BenchCli("bench/filter.ts", "usage: node bench/filter.ts [--capacity N (1000000)] [--rate R (0.01)] [--rounds N (3)]", {
  capacity: { type: "string", default: "1000000" },
  rate: { type: "string", default: "0.01" },
  rounds: { type: "string", default: "3" },
});
const capacity = cli.wholeNumber("capacity", cli.string("capacity"));
const rate = cli.positiveNumber("rate", cli.string("rate"));
if (rate >= 1) cli.refuse(`--rate must be below 1 (a false-positive rate), got ${rate}`);
const rounds = cli.wholeNumber("rounds", cli.string("rounds"));

interface Filter {
  add(id: string): void;
  mightContain(id: string): boolean;
  readonly bytes: number;
}

const hashes = new Int32Array(2);
const toRange = (hash: number, size: number) => Math.floor(((hash >>> 0) / 4294967296) * size);

/** The textbook filter: m = −n ln p / ln²2 bits, k = m/n ln 2, double hashing (Kirsch-Mitzenmacher). */
class ClassicBloom implements Filter {
  readonly #words: Int32Array;
  readonly #bits: number;
  readonly #k: number;

  constructor(ids: number, falsePositiveRate: number) {
    const bits = Math.ceil((-ids * Math.log(falsePositiveRate)) / Math.LN2 ** 2);
    this.#k = Math.max(1, Math.round((bits / ids) * Math.LN2));
    this.#words = new Int32Array(Math.ceil(bits / 32));
    this.#bits = this.#words.length * 32;
  }

  get bytes(): number {
    return this.#words.byteLength;
  }

  add(id: string): void {
    idHashes(id, hashes);
    let position = hashes[0]! >>> 0;
    const step = (hashes[1]! | 1) >>> 0;
    for (let i = 0; i < this.#k; i++) {
      const bit = toRange(position, this.#bits);
      this.#words[bit >>> 5]! |= 1 << (bit & 31);
      position = (position + step) >>> 0;
    }
  }

  mightContain(id: string): boolean {
    idHashes(id, hashes);
    let position = hashes[0]! >>> 0;
    const step = (hashes[1]! | 1) >>> 0;
    for (let i = 0; i < this.#k; i++) {
      const bit = toRange(position, this.#bits);
      if ((this.#words[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
      position = (position + step) >>> 0;
    }
    return true;
  }
}

const SALTS = Int32Array.of(0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31);

/** Parquet's split-block filter: a 256-bit block, one bit in each of its eight words. */
class SplitBlockBloom implements Filter {
  readonly #words: Int32Array;
  readonly #blocks: number;

  constructor(ids: number, falsePositiveRate: number) {
    let blocks = Math.ceil((4 * ids) / 256);
    while (poissonMean(ids / blocks, (n) => (1 - (31 / 32) ** n) ** 8) > falsePositiveRate) blocks = Math.ceil(blocks * 1.002) + 1;
    this.#blocks = blocks;
    this.#words = new Int32Array(blocks * 8);
  }

  get bytes(): number {
    return this.#words.byteLength;
  }

  add(id: string): void {
    idHashes(id, hashes);
    const block = toRange(hashes[0]!, this.#blocks) * 8;
    for (let i = 0; i < 8; i++) this.#words[block + i]! |= 1 << (Math.imul(hashes[1]!, SALTS[i]!) >>> 27);
  }

  mightContain(id: string): boolean {
    idHashes(id, hashes);
    const block = toRange(hashes[0]!, this.#blocks) * 8;
    for (let i = 0; i < 8; i++) {
      if ((this.#words[block + i]! & (1 << (Math.imul(hashes[1]!, SALTS[i]!) >>> 27))) === 0) return false;
    }
    return true;
  }
}

interface Measurement {
  bitsPerId: number;
  falsePositives: number;
  addNs: number;
  absentNs: number;
  presentNs: number;
}

const present = Array.from({ length: capacity }, (_, i) => `item-${i}`);
const absent = Array.from({ length: 1_000_000 }, (_, i) => `absent-${i}`);

function measure(create: () => Filter): Measurement {
  const filter = create();
  let started = performance.now();
  for (const id of present) filter.add(id);
  const addNs = ((performance.now() - started) * 1e6) / present.length;
  started = performance.now();
  let falsePositives = 0;
  for (const id of absent) if (filter.mightContain(id)) falsePositives++;
  const absentNs = ((performance.now() - started) * 1e6) / absent.length;
  started = performance.now();
  for (const id of present) if (!filter.mightContain(id)) throw new Error(`false negative for ${id}`);
  const presentNs = ((performance.now() - started) * 1e6) / present.length;
  return { bitsPerId: (8 * filter.bytes) / capacity, falsePositives: falsePositives / absent.length, addNs, absentNs, presentNs };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

// MembershipFilter sizes itself for 90% of the requested rate; the others get the same margin, so
// that the rows compare bits per id at about the same measured rate.
const margin = 0.9;
const candidates: [string, () => Filter][] = [
  ["classic Bloom", () => new ClassicBloom(capacity, margin * rate)],
  ["blocked Bloom, 512-bit blocks (MembershipFilter)", () => new MembershipFilter(capacity, rate)],
  ["split-block Bloom, 256-bit blocks", () => new SplitBlockBloom(capacity, margin * rate)],
];
const results = new Map<string, Measurement[]>(candidates.map(([name]) => [name, []]));
for (let round = 0; round < rounds; round++) {
  for (const [name, create] of candidates) results.get(name)!.push(measure(create));
}

console.log(`${capacity.toLocaleString("en-US")} ids, target false-positive rate ${(100 * rate).toFixed(2)}%, median of ${rounds} rounds (ns per operation, hashing included)\n`);
console.log("| filter | bits/id | measured FP | add ns | absent ns | present ns |");
console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
for (const [name, measurements] of results) {
  const pick = (key: keyof Measurement) => median(measurements.map((m) => m[key]));
  console.log(
    `| ${name} | ${pick("bitsPerId").toFixed(2)} | ${(100 * pick("falsePositives")).toFixed(3)}% | ${pick("addNs").toFixed(0)} | ${pick("absentNs").toFixed(0)} | ${pick("presentNs").toFixed(0)} |`,
  );
}

// Past capacity: MembershipFilter keeps every id; only its false-positive rate rises.
console.log("\nMembershipFilter past its capacity: false-positive rate measured (and the formula's)");
const { blocks, hashes: k } = membershipFilterSize(capacity, rate);
for (const fill of [1, 1.5, 2, 4]) {
  const filter = new MembershipFilter(capacity, rate);
  const ids = Math.round(fill * capacity);
  for (let i = 0; i < ids; i++) filter.add(`item-${i}`);
  for (let i = 0; i < ids; i++) if (!filter.mightContain(`item-${i}`)) throw new Error("false negative past capacity");
  let falsePositives = 0;
  for (const id of absent) if (filter.mightContain(id)) falsePositives++;
  const measured = (100 * falsePositives) / absent.length;
  console.log(`  ${fill}× capacity: ${measured.toFixed(2)}% (${(100 * blockedFalsePositiveRate(ids / blocks, k)).toFixed(2)}%)`);
}
