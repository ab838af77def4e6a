// `npm run test:browser` and `npm run measure:cors` before they start anything: --help says what they run, an
// unknown argument is refused (exit 2), and test:browser on a machine without Chromium prints the fix.
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";

const run = (script: string, args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, [script, ...args], { env: { ...process.env, ...env }, encoding: "utf8", timeout: 30_000 });

describe("test:browser and measure:cors, before anything starts", () => {
  it("test:browser without Chromium names the missing browser and exits 1 without starting the stack", () => {
    const result = run("test/browser/run.ts", [], { CHROMIUM_PATH: "/nonexistent/chromium" });
    expect(result.stdout).toBe("✗ CHROMIUM_PATH=/nonexistent/chromium does not exist\n");
    expect(result.status).toBe(1);
  });

  it.each(["test/browser/run.ts", "scripts/measure-cors-bytes.ts"])("%s: --help prints the usage (exit 0); an unknown argument is refused (exit 2)", (script) => {
    const help = run(script, ["--help"]);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^usage: npm run (test:browser|measure:cors)\n/);
    const refused = run(script, ["--bogus"]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain("Unknown option '--bogus'");
    expect(refused.stdout).not.toMatch(/starting the stack|\| response/);
  });
});
