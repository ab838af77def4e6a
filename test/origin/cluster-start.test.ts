// How ORIGIN_PROCESSES>1 starts and gives up, as real processes: a refused configuration is refused once by
// the primary (exit 2, nothing forked), a worker that cannot start ends the start once (no restart loop),
// and workers that keep failing to start after a death make the primary give up (exit 1).
import { readdirSync, renameSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { listening, scrape, spawnOrigin } from "./cluster-harness.ts";
import { registerCleanup, tempDir } from "./harness.ts";

const TIMEOUT = { timeout: 20_000 };

function occurrences(text: string, pattern: RegExp): number {
  return text.match(new RegExp(pattern.source, "g"))?.length ?? 0;
}

describe("ORIGIN_PROCESSES>1: start and give up", () => {
  it("refuses an invalid configuration once, before forking: exit 2", TIMEOUT, async () => {
    const p = spawnOrigin({ ORIGIN_PROCESSES: "3", CACHE_TTL_SECONDS: "soon", DATABASE_URL: join(tempDir(), "items.sqlite") });
    registerCleanup(() => p.kill());
    expect(await p.exited).toEqual({ code: 2, signal: null });
    expect(occurrences(p.stderr(), /CACHE_TTL_SECONDS: "soon" is not a duration/)).toBe(1);
    expect(p.stderr()).not.toContain("[worker");
    expect(p.stdout()).toBe("");
  });

  it("a port taken is found before forking: exit 1 once, naming PORT, no worker started", TIMEOUT, async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    registerCleanup(() => new Promise<void>((resolve) => holder.close(() => resolve())));
    const taken = (holder.address() as { port: number }).port;
    const dir = tempDir();
    const p = spawnOrigin({ ORIGIN_PROCESSES: "3", PORT: String(taken), DATABASE_URL: join(dir, "items.sqlite") });
    registerCleanup(() => p.kill());
    expect(await p.exited).toEqual({ code: 1, signal: null });
    expect(occurrences(p.stderr(), /EADDRINUSE.*set PORT/)).toBe(1);
    expect(p.stderr()).not.toContain("[worker");
    expect(readdirSync(dir)).toEqual([]);
  });

  it("a worker that cannot start ends the start once, with its reason and its exit code, no restart", TIMEOUT, async () => {
    const database = join(tempDir(), "items.sqlite");
    writeFileSync(database, "not a database, not a database, not a database, not a database, not a database\n");
    const p = spawnOrigin({ ORIGIN_PROCESSES: "3", DATABASE_URL: database });
    registerCleanup(() => p.kill());
    expect(await p.exited).toEqual({ code: 2, signal: null });
    expect(occurrences(p.stderr(), /is not a usable SQLite database/)).toBe(1);
    expect(occurrences(p.stderr(), /worker 1 of 3 stopped \(exit code 2\) before it was ready; not retrying/)).toBe(1);
    expect(p.stderr()).not.toContain("[worker 2]"); // the others were never started
    expect(p.stdout()).not.toContain("listening on");
  });

  it("with METRICS_PORT=off each worker serves its own /metrics on PORT; SIGINT stops them all", TIMEOUT, async () => {
    const p = spawnOrigin({ ORIGIN_PROCESSES: "2", METRICS_PORT: "off", DATABASE_URL: join(tempDir(), "items.sqlite") }, ["--seed=1"]);
    registerCleanup(() => p.kill());
    const { line, port } = await listening(p);
    expect(line).toMatch(/\(2 processes, writes relayed between them; 1 items in .*; no token check; metrics on the item port, per process\)$/);
    const page = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(page).toContain("origin_http_requests_total");
    expect(page).not.toContain("origin_cluster_"); // one process's page, not the machine's
    p.child.kill("SIGINT");
    expect(await p.exited).toEqual({ code: 0, signal: null });
    expect(p.stdout()).toContain("origin: SIGINT, finishing in-flight requests in 2 processes and closing the database");
  });

  it("gives up when a replacement keeps failing to start: stops the others, exit 1", TIMEOUT, async () => {
    const dir = tempDir();
    const p = spawnOrigin({ ORIGIN_PROCESSES: "2", DATABASE_URL: join(dir, "data", "items.sqlite") });
    registerCleanup(() => p.kill());
    const { metricsPort } = await listening(p);
    const pid = Number((await scrape(metricsPort!)).text.match(/origin_cluster_worker_info\{worker="2",pid="(\d+)"\} 1/)![1]);
    // The running workers keep their open database; a new one cannot create the directory (a file is there).
    renameSync(join(dir, "data"), join(dir, "moved"));
    writeFileSync(join(dir, "data"), "not a directory");
    process.kill(pid, "SIGKILL");
    expect(await p.exited).toEqual({ code: 1, signal: null });
    expect(occurrences(p.stderr(), /worker 2 \(pid \d+\) failed to start/)).toBe(4);
    expect(occurrences(p.stderr(), /worker 2 failed to start 5 times in a row \(last: exit code 2\); giving up: stopping every worker/)).toBe(1);
    expect(p.stderr()).toContain("[worker 1] origin: SIGTERM, finishing in-flight requests");
  });
});
