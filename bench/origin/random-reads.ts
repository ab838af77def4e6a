// Loaded into an origin with `node --import` by bench/origin/memory-floor.ts: before every socket write
// (one per answer without pipelining) it makes N dependent reads of 64-byte lines at random in
// BENCH_BALLAST_MIB of memory (ballast.ts): what finding an entry among gigabytes of cache adds to an answer,
// with nothing else about the origin changed. BENCH_RANDOM_READS lists the values of N the benchmark
// compares; the first applies at start and each SIGUSR2 moves to the next (round robin), printing
// `random reads: N` once it applies, so every variant runs in this one process: the same heap, code and
// ballast, compared round by round.

import { Socket } from "node:net";
import { ballastCycle, LINE } from "./ballast.ts";

const counts = (process.env["BENCH_RANDOM_READS"] ?? "").split(",").map(Number);
const mib = Number(process.env["BENCH_BALLAST_MIB"] ?? 0);
if (counts.some((n) => !Number.isInteger(n) || n < 0) || !(mib > 0)) {
  throw new Error("random-reads: set BENCH_RANDOM_READS (whole numbers ≥ 0, comma-separated) and BENCH_BALLAST_MIB (> 0)");
}

const ballast = ballastCycle(Math.floor((mib * 2 ** 20) / 64));
let variant = 0;
let reads = counts[0]!;
let at = 0;
process.on("SIGUSR2", () => {
  variant = (variant + 1) % counts.length;
  reads = counts[variant]!;
  process.stdout.write(`random reads: ${reads}\n`);
});

const write = Socket.prototype.write;
Socket.prototype.write = function (this: Socket, ...args: Parameters<Socket["write"]>): boolean {
  for (let k = 0; k < reads; k++) at = ballast[at * LINE]!;
  return write.apply(this, args);
} as Socket["write"];
