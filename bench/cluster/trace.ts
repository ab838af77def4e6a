// Which ids the cluster benchmark reads and writes, in what order: the live traffic (traffic.ts) and the
// replay (replay.ts) draw from the same seeded streams, so the replay's first seconds are the live run's
// ids and the rest is more of the same traffic.
//
// Reads: Zipf(s) over ids 1…items, ranks scattered over the id space by a seeded permutation. Writes: the
// same popularity from a stream of their own (the hot items are also the most written: the hardest case for
// a cache that drops what changed).

import { permutation, prng, Zipf } from "../lib/random.ts";

export interface TraceSpec {
  items: number;
  zipfS: number;
  seed: number;
}

/** Tries to find an id with nothing in flight before a write slot is passed over. */
const WRITE_TRIES = 8;

export class TraceSource {
  readonly #itemOfRank: Uint32Array;
  readonly #zipf: Zipf;
  readonly #readRandom: () => number;
  readonly #writeRandom: () => number;

  constructor(spec: TraceSpec) {
    this.#zipf = new Zipf(spec.items, spec.zipfS);
    this.#itemOfRank = permutation(spec.items, prng(spec.seed));
    this.#readRandom = prng(spec.seed + 1);
    this.#writeRandom = prng(spec.seed + 2);
  }

  /** The next id read (1…items). */
  readId(): number {
    return this.#itemOfRank[this.#zipf.sample(this.#readRandom())]! + 1;
  }

  /** The next id written, skipping ids `busy` says are in flight; undefined when every try was busy. */
  writeId(busy: (id: number) => boolean = () => false): number | undefined {
    for (let tries = 0; tries < WRITE_TRIES; tries++) {
      const id = this.#itemOfRank[this.#zipf.sample(this.#writeRandom())]! + 1;
      if (!busy(id)) return id;
    }
    return undefined;
  }
}
