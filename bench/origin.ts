// Origin throughput benchmarks (npm run bench:origin), two of them:
//
//   npm run bench:origin [-- OPTIONS]           the origin against a bare node:http server, and with its
//                                               fast path off (bench/origin/compare.ts; options there)
//   npm run bench:origin -- --scale [OPTIONS]   the origin with 1,000 entries cached against the same
//                                               origin with millions: throughput, p99, heap, RSS per entry,
//                                               GC under churn, store reads for unknown ids
//                                               (bench/origin/scale.ts; `--scale --help` lists its options)
//
// Both start every process themselves (loopback, servers and load generator pinned to their own cores
// when taskset is there), run interleaved rounds, and kill every child on exit, Ctrl-C or a hard time limit.

export {};

if (process.argv.includes("--scale")) {
  await import("./origin/scale.ts");
} else {
  await import("./origin/compare.ts");
}
