// `npm run test:browser` on a machine without Chromium: the fix is printed before anything is started.
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";

describe("test:browser without Chromium", () => {
  it("names the missing browser and exits 1 without starting the stack", () => {
    const run = spawnSync(process.execPath, ["test/browser/run.ts"], {
      env: { ...process.env, CHROMIUM_PATH: "/nonexistent/chromium" },
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(run.stdout).toBe("✗ CHROMIUM_PATH=/nonexistent/chromium does not exist\n");
    expect(run.status).toBe(1);
  });
});
