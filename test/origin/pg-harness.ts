// PostgreSQL for the origin's tests: one throwaway cluster per test file (tests that stop or restart the
// server get their own), a fresh database per test, and origins started on it in this process or as real
// child processes (src/origin/main.ts).
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll } from "vitest";
import { startThrowawayPostgres, type ThrowawayPostgres } from "../../scripts/lib/postgres-cluster.ts";
import { registerCleanup, start } from "./harness.ts";
import type { RunningOrigin, StartOptions } from "../../src/origin/start-origin.ts";

let counter = 0;
const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** A cluster for this test file (started before its first test, destroyed after its last). */
export function usePostgres(): { readonly pg: ThrowawayPostgres; database(): Promise<string> } {
  let pg: ThrowawayPostgres | undefined;
  beforeAll(async () => {
    pg = await startThrowawayPostgres();
  }, 60_000);
  afterAll(async () => {
    await pg?.destroy();
  });
  return {
    get pg() {
      if (pg === undefined) throw new Error("usePostgres: the cluster is not started yet (use it inside a test)");
      return pg;
    },
    async database() {
      return this.pg.createDatabase(`items_${process.pid}_${++counter}`);
    },
  };
}

/** An origin on PostgreSQL in this process (closed after the test). */
export function startOnPostgres(url: string, env: Record<string, string> = {}, options: Omit<StartOptions, "config"> = {}): Promise<RunningOrigin> {
  return start({ DATABASE_URL: url, ...env }, options);
}

export { registerCleanup };

/** `npm run feed:install -- ARGS` as a user would run it (DATABASE_URL=`url`); resolves with its exit code and output. */
export function feedInstall(url: string | undefined, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["scripts/feed-install.ts", ...args],
      { cwd: ROOT, env: { ...process.env, ...(url === undefined ? {} : { DATABASE_URL: url }) } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, out: stdout + stderr }),
    );
  });
}
