import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { explainStartFailure } from "../../src/origin/cluster/start-failure.ts";
import { get, once, registerCleanup, tempDir, testConfig, withBody } from "./harness.ts";

const MAIN = fileURLToPath(new URL("../../src/origin/main.ts", import.meta.url));

interface Proc {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function run(env: Record<string, string>, args: string[] = []): Proc {
  const child = spawn(process.execPath, [MAIN, ...args], {
    env: { PATH: process.env["PATH"] ?? "", PORT: "0", METRICS_PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  registerCleanup(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await exited;
    }
  });
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Resolves with the item port once the startup line is printed. */
function started(p: Proc): Promise<{ port: number; line: string }> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const line = p.stdout().split("\n").find((l) => l.startsWith("origin listening on "));
      if (line) {
        p.child.stdout!.off("data", check);
        resolve({ port: Number(/:(\d+) /.exec(line)![1]), line });
      }
    };
    p.child.stdout!.on("data", check);
    p.exited.then(({ code }) => reject(new Error(`exited ${code} before starting:\n${p.stderr()}`)));
    check();
  });
}

describe("node src/origin/main.ts", () => {
  it("refuses an invalid configuration with exit code 2 and says which var to fix", async () => {
    const p = run({ PORT: "eighty", DATABASE_URL: "mysql://u:secret@db/items" });
    expect((await p.exited).code).toBe(2);
    expect(p.stderr()).toContain('PORT: "eighty" is not a port; write a whole number from 0 to 65535.');
    expect(p.stderr()).toContain('DATABASE_URL: "mysql://u:***@db/items" has an unsupported scheme "mysql:"');
    expect(p.stderr()).not.toContain("secret");
    expect(p.stdout()).toBe("");
  });

  it("exits 75 (EX_TEMPFAIL: retry) when PostgreSQL is not there yet, naming what to check, not as a refusal", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve)); // nothing listens there now
    const p = run({ DATABASE_URL: `postgres://slim@127.0.0.1:${port}/items` });
    expect((await p.exited).code).toBe(75);
    expect(p.stderr()).toMatch(/^origin: cannot reach PostgreSQL at postgres:\/\/slim@127\.0\.0\.1:\d+\/items .*is it running/m);
    expect(p.stderr()).not.toContain("refuses this configuration");
  });

  it.each([
    ["a directory", (dir: string) => dir, /^origin: DATABASE_URL: cannot open .* \(unable to open database file\): DATABASE_URL must name a file \(not a directory\)/m],
    [
      "a file that is not a database",
      (dir: string) => {
        writeFileSync(join(dir, "items.sqlite"), "this is not a database, but it is long enough to have a header".repeat(20));
        return join(dir, "items.sqlite");
      },
      /^origin: DATABASE_URL: .*items\.sqlite is not a usable SQLite database \(file is not a database\): restore it from a backup, or move it away/m,
    ],
    [
      "a file beside it it cannot lock (its -owner path a directory)",
      (dir: string) => {
        mkdirSync(join(dir, "items.sqlite-owner"));
        return join(dir, "items.sqlite");
      },
      /^origin: DATABASE_URL: cannot use .*items\.sqlite-owner \(unable to open database file\), the file the origin locks beside .*items\.sqlite while it runs; it holds no data: move away or delete whatever is there/m,
    ],
    [
      "a file beside it it cannot lock (its -owner file not SQLite), never blaming the database",
      (dir: string) => {
        writeFileSync(join(dir, "items.sqlite-owner"), "not a lock file, but long enough to have a header".repeat(20));
        return join(dir, "items.sqlite");
      },
      /^origin: DATABASE_URL: cannot use .*items\.sqlite-owner \(file is not a database\), the file the origin locks beside .*items\.sqlite while it runs; it holds no data/m,
    ],
  ])("refuses %s as its SQLite file with exit code 2 and the fix, not a stack and a restart loop", async (_, path, message) => {
    const p = run({ DATABASE_URL: path(tempDir()) });
    expect((await p.exited).code).toBe(2);
    expect(p.stderr()).toMatch(message);
    expect(p.stderr()).not.toMatch(/\n\s+at /);
  });

  it("refuses a second origin on its SQLite file (exit 75, naming the holder), single or cluster; a crash frees the file at once", async () => {
    const dir = tempDir();
    const database = join(dir, "data", "items.sqlite");
    const first = run({ DATABASE_URL: database });
    const { port } = await started(first);
    const rows = () => {
      const db = new DatabaseSync(database, { readOnly: true });
      try {
        return (db.prepare("SELECT count(*) AS n FROM items").get() as { n: number }).n;
      } finally {
        db.close();
      }
    };

    const holder = (pid: number | undefined) =>
      new RegExp(`^origin: DATABASE_URL: another origin \\(process ${pid}\\) is serving .*\\.sqlite: it holds the lock on .*items\\.sqlite-owner\\..*Stop the other one; for more processes on this file set ORIGIN_PROCESSES; for several instances use PostgreSQL`, "m");
    // Through a symbolic link to the file too: the same database to SQLite, the same claim.
    symlinkSync(database, join(dir, "alias.sqlite"));
    for (const [path, env] of [[database, {}], [database, { ORIGIN_PROCESSES: "2" }], [join(dir, "alias.sqlite"), {}]] as [string, Record<string, string>][]) {
      const second = run({ DATABASE_URL: path, ...env }, ["--seed=5"]);
      expect((await second.exited).code).toBe(75); // EX_TEMPFAIL: a service manager retries until the other one stops
      expect(second.stderr()).toMatch(holder(first.child.pid));
      expect(second.stderr()).not.toMatch(/\n\s+at /);
      expect(second.stdout()).toBe(""); // it never listened, and no worker started
    }
    expect(rows()).toBe(0); // the store was empty, and the refused ones seeded nothing
    expect((await once(port, withBody("PUT", "/items/4", '{"by":"first"}'))).status).toBe(204);

    first.child.kill("SIGKILL"); // no shutdown hook runs: the operating system drops the lock
    await first.exited;
    const cluster = run({ DATABASE_URL: database, ORIGIN_PROCESSES: "2" });
    const clustered = await started(cluster);
    expect((await once(clustered.port, get("/items/4"))).text).toContain('{"by":"first"}');
    const single = run({ DATABASE_URL: database });
    expect((await single.exited).code).toBe(75);
    expect(single.stderr()).toMatch(holder(cluster.child.pid)); // the primary holds it for its workers

    cluster.child.kill("SIGTERM");
    expect(await cluster.exited).toEqual({ code: 0, signal: null });
    const after = run({ DATABASE_URL: database });
    await started(after);
  });

  it("tells a directory it may not create (EACCES from mkdir) from a port it may not listen on (EACCES from listen)", () => {
    const config = testConfig({ DATABASE_URL: "/srv/ro/sub/items.sqlite" });
    const denied = (syscall: string) => Object.assign(new Error(`EACCES: permission denied, ${syscall}`), { code: "EACCES", syscall });
    expect(explainStartFailure(denied("mkdir"), config)).toEqual({
      message: expect.stringMatching(/^origin: DATABASE_URL: cannot create \/srv\/ro\/sub\/items\.sqlite \(EACCES: permission denied, mkdir\): make its directory writable/),
      exitCode: 2,
    });
    expect(explainStartFailure(denied("listen"), config)).toEqual({ message: expect.stringMatching(/^origin: cannot listen: .*Check HOST \/ PORT/), exitCode: 1 });
  });

  it("refuses a DATABASE_URL whose directory cannot be made (under /proc, where node's recursive mkdir spun for ever)", async () => {
    const p = run({ DATABASE_URL: "/proc/no-such-process/items.sqlite" });
    expect((await p.exited).code).toBe(2);
    expect(p.stderr()).toContain("origin: DATABASE_URL: cannot create /proc/no-such-process/items.sqlite (ENOENT");
  });

  it("stops cleanly on a SIGTERM sent the moment the startup line arrives", async () => {
    // A supervisor may stop what it just saw start: the line must come after the signal handlers.
    for (let i = 0; i < 6; i++) {
      const p = run({ DATABASE_URL: join(tempDir(), "items.sqlite") });
      await started(p);
      p.child.kill("SIGTERM");
      expect(await p.exited).toEqual({ code: 0, signal: null });
      expect(p.stdout()).toContain("SIGTERM, finishing in-flight requests and closing the database");
    }
  });

  it("prints one startup line, keeps a 204'd write through a crash, and stops cleanly on SIGTERM", async () => {
    const dir = tempDir();
    const env = { DATABASE_URL: join(dir, "data", "items.sqlite") };

    const first = run(env, ["--seed=3"]);
    const { port, line } = await started(first);
    expect(line).toMatch(
      /^origin listening on http:\/\/127\.0\.0\.1:\d+ \(3 items in .*items\.sqlite \(seeded 3 sample items\); no token check; metrics http:\/\/127\.0\.0\.1:\d+\/metrics\)$/,
    );
    const put = await once(port, withBody("PUT", "/items/durable", '{"ok":1}'));
    expect(put.status).toBe(204);
    const etag = put.header("etag")!;
    first.child.kill("SIGKILL"); // no shutdown hook runs: only what was fsynced survives
    await first.exited;
    expect(first.stderr()).toBe(""); // no SQLite ExperimentalWarning noise (main or writer thread)

    const second = run(env, ["--seed=3"]);
    const again = await started(second);
    expect(again.line).toContain("(4 items in "); // not re-seeded
    const read = await once(again.port, get("/items/durable"));
    expect(read.text).toBe(`HTTP/1.1 200 OK\r\nETag: ${etag}\r\nContent-Length: 8\r\n\r\n{"ok":1}`);

    second.child.kill("SIGTERM");
    expect(await second.exited).toEqual({ code: 0, signal: null });
    expect(second.stdout()).toContain("SIGTERM, finishing in-flight requests and closing the database");
  });

  it("names the port when it is taken, before its store is created", async () => {
    const a = run({ DATABASE_URL: join(tempDir(), "a.sqlite"), METRICS_PORT: "off" });
    const { port } = await started(a);
    const dir = tempDir();
    const b = run({ DATABASE_URL: join(dir, "b.sqlite"), METRICS_PORT: "off", PORT: String(port), SEED_SAMPLE_ITEMS: "5" });
    expect((await b.exited).code).toBe(1);
    expect(b.stderr()).toMatch(/EADDRINUSE.*set PORT/);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("refuses a HOST or METRICS_HOST that names nothing (exit 2, naming it) before its store is created or seeded", async () => {
    for (const [env, said] of [
      [{ HOST: "bogus_host" }, 'HOST: "bogus_host" does not resolve ('],
      [{ METRICS_HOST: "nosuchhost.invalid" }, 'METRICS_HOST: "nosuchhost.invalid" does not resolve'],
    ] as const) {
      const dir = tempDir();
      const p = run({ DATABASE_URL: join(dir, "items.sqlite"), ORIGIN_TOKEN: "a-token-of-at-least-16", SEED_SAMPLE_ITEMS: "5", ...env });
      expect((await p.exited).code, said).toBe(2);
      expect(p.stderr()).toContain(said);
      expect(p.stdout()).toBe("");
      expect(readdirSync(dir)).toEqual([]);
    }
    // No address of this machine, maybe not yet (a floating address on a standby): exit 1, which is retried.
    const dir = tempDir();
    const p = run({ DATABASE_URL: join(dir, "items.sqlite"), ORIGIN_TOKEN: "a-token-of-at-least-16", HOST: "192.0.2.1" });
    expect((await p.exited).code).toBe(1);
    expect(p.stderr()).toMatch(/cannot listen: .*EADDRNOTAVAIL.*Check HOST/);
    expect(readdirSync(dir)).toEqual([]);
  });
});
