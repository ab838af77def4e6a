// Origin throughput benchmarks (npm run bench:origin), three of them:
//
//   npm run bench:origin [-- OPTIONS]           the origin against a bare node:http server, and with its
//                                               fast path off (bench/origin/compare.ts; options there)
//   npm run bench:origin -- --scale [OPTIONS]   the origin with 1,000 entries cached against the same
//                                               origin with millions: throughput, p99, heap, RSS per entry,
//                                               GC under churn, store reads for unknown ids
//                                               (bench/origin/scale.ts; `--scale --help` lists its options)
//   npm run bench:origin -- --memory-floor      the 1,000-entry origin with 0-3 random reads of uncached
//                                               memory added to each answer: what finding an entry among
//                                               millions can cost at best (bench/origin/memory-floor.ts)
//
// All start every process themselves (loopback, servers and load generator pinned to their own cores
// when taskset is there), run interleaved rounds, and kill every child on exit, Ctrl-C or a hard time limit.

export {};

if (process.argv.includes("--scale")) {
  await import("./origin/scale.ts");
} else if (process.argv.includes("--memory-floor")) {
  await import("./origin/memory-floor.ts");
} else {
  await import("./origin/compare.ts");
}
