// Loaded into an origin with `node --import` by bench/origin/memory-floor.ts: before every socket write
// (one per answer without pipelining) it makes BENCH_RANDOM_READS dependent reads of 64-byte lines at
// random in BENCH_BALLAST_MIB of memory (ballast.ts): what finding an entry among gigabytes of cache adds
// to an answer, with nothing else about the origin changed. With 0 reads the wrapper and the ballast are
// still there: the baseline pays for everything but the reads.

import { Socket } from "node:net";
import { ballastCycle, LINE } from "./ballast.ts";

const reads = Number(process.env["BENCH_RANDOM_READS"] ?? 0);
const mib = Number(process.env["BENCH_BALLAST_MIB"] ?? 0);
if (!Number.isInteger(reads) || reads < 0 || !(mib > 0)) throw new Error("random-reads: set BENCH_RANDOM_READS (≥ 0) and BENCH_BALLAST_MIB (> 0)");

const ballast = ballastCycle(Math.floor((mib * 2 ** 20) / 64));
let at = 0;
const write = Socket.prototype.write;
Socket.prototype.write = function (this: Socket, ...args: Parameters<Socket["write"]>): boolean {
  for (let k = 0; k < reads; k++) at = ballast[at * LINE]!;
  return write.apply(this, args);
} as Socket["write"];
