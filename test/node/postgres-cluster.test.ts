// The throwaway PostgreSQL cluster the PostgreSQL tests build on: a private server on loopback and a free
// port that a test can query, stop, start again (data kept), whose backends it can kill, and that leaves
// nothing behind. Needs the server binaries (bash scripts/ci-install-postgresql.sh).
import { execFile } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INSTALL_HINT, findPostgresBin, startThrowawayPostgres, type ThrowawayPostgres } from "../../scripts/lib/postgres-cluster.ts";

/** Resolves with the connect error code ("ECONNREFUSED") or "connected". */
function probe(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve("connected");
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

describe("throwaway PostgreSQL cluster", () => {
  let pg: ThrowawayPostgres;

  beforeAll(async () => {
    pg = await startThrowawayPostgres({ settings: { work_mem: "'8MB'" } });
  }, 60_000);

  afterAll(async () => {
    await pg?.destroy();
  });

  it("finds the binaries, and names the install script when they are missing", async () => {
    const bin = findPostgresBin();
    expect(bin && existsSync(join(bin, "initdb"))).toBeTruthy();
    await expect(startThrowawayPostgres({ bin: "/nonexistent/postgresql/bin" })).rejects.toThrow(INSTALL_HINT);
  });

  it("serves on loopback and a free port, with the test settings, as a trusted superuser", async () => {
    expect(pg.url).toBe(`postgres://postgres@127.0.0.1:${pg.port}/postgres`);
    expect(pg.port).not.toBe(5432);
    const settings = await pg.sql(
      "select current_setting('listen_addresses'), current_setting('fsync'), current_setting('synchronous_commit'), " +
        "current_setting('max_connections'), current_setting('work_mem'), current_setting('unix_socket_directories'), current_user",
    );
    expect(settings).toBe(`127.0.0.1|off|off|200|8MB|${pg.dir}|postgres`);
    expect(await pg.sql("select usesuper from pg_user where usename = current_user")).toBe("t");
  });

  it("creates a database, runs SQL in it, and speaks to a client library at its URL", async () => {
    const url = await pg.createDatabase("items");
    expect(url).toBe(pg.urlFor("items"));
    await pg.sql("create table item (id text primary key, body jsonb); insert into item values ('a', '{\"n\": 1}'), ('b', '{\"n\": 2}');", "items");
    expect(await pg.sql("select id, body->>'n' from item order by id", "items")).toBe("a|1\nb|2");
    await expect(pg.sql("select * from missing_table", "items")).rejects.toThrow(/missing_table/);

    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      expect(await sql`select count(*)::int as n from item`).toEqual([{ n: 2 }]);
    } finally {
      await sql.end();
    }
  });

  it("stops (connections refused) and starts again on the same port with its data", async () => {
    await pg.stop();
    expect(await pg.isRunning()).toBe(false);
    expect(await probe(pg.port)).toBe("ECONNREFUSED");
    await expect(pg.sql("select 1")).rejects.toThrow(/connection refused|could not connect|Connection refused/i);
    await pg.stop(); // already down: a no-op

    await pg.start();
    expect(await pg.isRunning()).toBe(true);
    expect(await probe(pg.port)).toBe("connected");
    expect(await pg.sql("select count(*) from item", "items")).toBe("2");

    // immediate is a crash: the next start recovers. With synchronous_commit off (the cluster default, for
    // speed) the last few hundred ms of commits may be lost; a test that needs them opts in per session.
    await pg.sql("set synchronous_commit = on; insert into item values ('c', '{}')", "items");
    await pg.stop("immediate");
    await pg.restart();
    expect(await pg.sql("select string_agg(id, ',' order by id) from item", "items")).toBe("a,b,c");
  }, 30_000);

  it("terminates exactly the backends a predicate matches (a LISTEN connection)", async () => {
    const sql = postgres(pg.urlFor("items"), { max: 1, onnotice: () => {}, connection: { application_name: "cluster-test" } });
    try {
      await sql.listen("changes", () => {});
      await sql`select 1`; // a second, ordinary backend of the same application
      const listener = await pg.sql("select pid from pg_stat_activity where query ilike 'listen%'");
      expect(listener).toMatch(/^\d+$/);

      expect(await pg.terminate("query ilike 'listen%'")).toBe(1);
      // terminate() returns once the backend is gone (the client may already be re-listening on a new one).
      expect(await pg.sql(`select count(*) from pg_stat_activity where pid = ${listener}`)).toBe("0");
      expect(await pg.terminate("application_name = 'nobody'")).toBe(0);
      expect(await pg.terminate("application_name = 'cluster-test'")).toBeGreaterThanOrEqual(1);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it("destroy stops the server and removes its directory, once", async () => {
    const other = await startThrowawayPostgres();
    expect(other.port).not.toBe(pg.port);
    expect(statSync(other.dataDir).isDirectory()).toBe(true);
    await other.destroy();
    expect(existsSync(other.dir)).toBe(false);
    expect(await probe(other.port)).toBe("ECONNREFUSED");
    await other.destroy();
    await expect(other.start()).rejects.toThrow(/destroyed/);
  }, 30_000);

  it("a process killed with SIGKILL leaves no server behind: the watchdog stops it and removes the dir", async () => {
    const helper = new URL("../../scripts/lib/postgres-cluster.ts", import.meta.url).href;
    const script = `const { startThrowawayPostgres } = await import(${JSON.stringify(helper)});
      const pg = await startThrowawayPostgres();
      process.stdout.write(JSON.stringify({ dir: pg.dir, port: pg.port }), () => process.kill(process.pid, "SIGKILL"));`;
    // The child imports the .ts helper, so it needs the project's Node 22 (type stripping), not whatever
    // Node runs vitest (`node_modules/.bin/vitest` run directly uses the system's).
    const projectNode = fileURLToPath(new URL("../../node_modules/.bin/node", import.meta.url));
    const node = existsSync(projectNode) ? projectNode : process.execPath;
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(node, ["--input-type=module", "-e", script], (error, out, err) => (out ? resolve(out) : reject(error ?? new Error(err))));
    });
    const { dir, port } = JSON.parse(stdout) as { dir: string; port: number };
    expect(existsSync(dir)).toBe(true);
    // The watchdog looks once a second; wait for the real outcome, bounded.
    for (let i = 0; i < 100 && existsSync(dir); i++) await sleep(50);
    expect(existsSync(dir)).toBe(false);
    expect(await probe(port)).toBe("ECONNREFUSED");
  }, 30_000);
});
