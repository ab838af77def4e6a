// The benchmarks' command lines (bench/lib/cli.ts): a typo or a value that is no number is refused with the
// usage and one line naming it, exit 2, before anything is started; it never runs the defaults (a full
// benchmark) or spins on a size of 0.
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");

describe("benchmark command lines", () => {
  it.each([
    ["bench/strip.ts", ["--rounds=1", "--bogus"], "npm run bench: Unknown option '--bogus'"],
    ["bench/strip.ts", ["--node-only", "--workerd-only"], "npm run bench: --node-only and --workerd-only together would measure nothing; give one"],
    ["bench/worker-cpu.ts", ["--rounds", "0"], 'npm run bench:cpu: --rounds must be a whole number of at least 1, got "0"'],
    ["bench/worker-cpu.ts", ["--variant", "no-equals"], 'npm run bench:cpu: --variant wants LABEL=ENTRY, got "no-equals"'],
    ["bench/origin/hit-path.ts", ["--sizes", "1000,0"], 'hit-path: --sizes: "0" is not a number of entries between 1 and 50,000,000'],
    ["bench/origin.ts", ["--connections", "0.5"], 'bench:origin: --connections must be a whole number of at least 1, got "0.5"'],
    ["bench/filter.ts", ["--capacity", "abc"], 'bench/filter.ts: --capacity must be a whole number of at least 1, got "abc"'],
  ])("%s %j: usage, the reason, exit 2", (script, args, message) => {
    const run = spawnSync(process.execPath, [script, ...args], { cwd: ROOT, encoding: "utf8", timeout: 20_000 });
    expect(run.status).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(/^usage: /);
    expect(run.stderr).toContain(`\n\n${message}`);
  });

  it("--help prints the usage and starts nothing", () => {
    const run = spawnSync(process.execPath, ["bench/worker-cpu.ts", "--help"], { cwd: ROOT, encoding: "utf8", timeout: 20_000 });
    expect([run.status, run.stderr]).toEqual([0, ""]);
    expect(run.stdout).toMatch(/^usage: npm run bench:cpu -- \[--quick\]/);
  });
});
