import { execFile, execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, appendFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * A throwaway PostgreSQL cluster for tests and local runs: `initdb` into a fresh temp dir, a server on
 * 127.0.0.1 and a free port (never the system service, never a fixed port), unix socket inside the temp
 * dir, trust auth for the superuser `postgres` on loopback. Only Node built-ins and PostgreSQL's own
 * binaries (initdb, pg_ctl, psql) are used, so it works from vitest (`environment: node`) and from a plain
 * `node script.ts` alike.
 *
 *   const pg = await startThrowawayPostgres();
 *   const url = await pg.createDatabase("items");   // postgres://postgres@127.0.0.1:PORT/items
 *   await pg.sql("select 1");                        // "1"
 *   await pg.stop();  await pg.start();              // same data dir, same port
 *   await pg.terminate("query ilike 'listen%'");     // kills the listeners, returns how many
 *   await pg.destroy();                              // server down, temp dir removed
 *
 * As root (CI containers), initdb refuses to run, so initdb and pg_ctl run as the `postgres` OS user the
 * Debian package creates (`runuser -u postgres --`) and the temp dir is chowned to it. A cluster still
 * running when the process exits is stopped (immediate) and its dir removed, by an exit hook on a normal
 * exit and by a detached watchdog shell when the process is killed, so crashed or killed test runs do not
 * leave servers behind.
 *
 * Run directly, it starts one cluster, prints its URL and keeps it until Ctrl-C:
 *   node scripts/lib/postgres-cluster.ts
 */

/** The superuser every throwaway cluster is created with; trusted on loopback, no password. */
export const SUPERUSER = "postgres";

/** The command that installs the binaries; named in every "PostgreSQL not found" error. */
export const INSTALL_HINT = "bash scripts/ci-install-postgresql.sh";

export interface ThrowawayPostgres {
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  url: string;
  port: number;
  host: "127.0.0.1";
  user: string;
  /** The temp dir holding everything (data dir, socket dir, server log); removed by destroy(). */
  dir: string;
  dataDir: string;
  /** The server's log (pg_ctl -l); its tail is quoted in start errors. */
  logFile: string;
  /** The URL of a database of this cluster (it need not exist). */
  urlFor(database: string): string;
  /**
   * Runs SQL as the superuser through psql (`-X -q -A -t -v ON_ERROR_STOP=1`: unaligned, tuples only,
   * `|` between columns, no command tags) and resolves with its stdout without the final newline. Several
   * statements may be given; an error rejects with psql's message.
   */
  sql(query: string, database?: string): Promise<string>;
  /** CREATE DATABASE (quoted name); resolves with its URL. */
  createDatabase(name: string): Promise<string>;
  /**
   * Server down (pg_ctl stop -w); a no-op when down. "fast" (default): clients are disconnected (the
   * server sends 57P01), a shutdown checkpoint, nothing committed is lost. "immediate": crash-like,
   * recovery on the next start, and since synchronous_commit is off, commits of the last few hundred ms
   * may be lost (run `set synchronous_commit = on` in a session whose commits must survive it).
   */
  stop(mode?: "fast" | "immediate"): Promise<void>;
  /** Server up again on the same data dir and port (pg_ctl start -w). A no-op when running. */
  start(): Promise<void>;
  /** stop("fast") then start(). */
  restart(): Promise<void>;
  /**
   * pg_terminate_backend on every client backend (other than psql's own) whose pg_stat_activity row matches
   * the SQL predicate `where`, e.g. `application_name = 'feed'` or `query ilike 'listen%'` (postgres.js sends
   * `listen "channel"` in lower case); waits (up to 5 s each) until they are gone and resolves with how many
   * were terminated. Needs PostgreSQL 14+ (pg_terminate_backend with a timeout).
   */
  terminate(where: string): Promise<number>;
  /** Whether the server answers right now (pg_ctl status). */
  isRunning(): Promise<boolean>;
  /** Stops the server (immediate) and removes the temp dir. Idempotent. */
  destroy(): Promise<void>;
}

export interface ThrowawayPostgresOptions {
  /**
   * postgresql.conf settings on top of the defaults below (and overriding them), e.g.
   * `{ max_connections: "50", log_statement: "'all'" }`. Values are written as given: quote strings.
   */
  settings?: Record<string, string>;
  /**
   * pg_hba.conf lines placed before the defaults (first match wins), e.g.
   * `["host all reject_me 127.0.0.1/32 reject"]`. The defaults trust `postgres` on loopback and the unix
   * socket, and ask every other role for a password (scram-sha-256).
   */
  hba?: string[];
  /** Where the temp dir goes; os.tmpdir() by default. As root it must be reachable by the postgres user. */
  baseDir?: string;
  /** Overrides findPostgresBin(). */
  bin?: string;
}

/** Where findPostgresBin looked, and what it found. */
export interface PostgresBinSearch {
  /** The directory holding initdb; undefined if no place looked at has it. */
  bin: string | undefined;
  /** $PG_BIN, when it was set but holds no initdb (and was passed over). */
  pgBinWithoutInitdb: string | undefined;
  /** Each place looked at, in order, e.g. ["/nonexistent", "/usr/lib/postgresql/15/bin"]. */
  looked: string[];
}

/**
 * Looks for the directory holding initdb/pg_ctl/postgres/psql: $PG_BIN if it holds initdb, else the highest
 * /usr/lib/postgresql/<version>/bin (Debian's layout), else `pg_config --bindir`. A $PG_BIN without initdb
 * is passed over, as scripts/ci-install-postgresql.sh does, and reported in `pgBinWithoutInitdb` so that
 * callers can say so. The arguments exist for tests.
 */
export function searchPostgresBin(pgBin = process.env.PG_BIN, debianRoot = "/usr/lib/postgresql", pgConfig = "pg_config"): PostgresBinSearch {
  const hasInitdb = (dir: string) => existsSync(join(dir, "initdb"));
  const looked: string[] = [];
  const found = (dir: string | undefined, pgBinWithoutInitdb: string | undefined): PostgresBinSearch => ({ bin: dir, pgBinWithoutInitdb, looked });
  let badPgBin: string | undefined;
  if (pgBin) {
    looked.push(pgBin);
    if (hasInitdb(pgBin)) return found(resolve(pgBin), undefined);
    badPgBin = pgBin;
  }
  try {
    const versions = readdirSync(debianRoot)
      .filter((name) => /^\d+$/.test(name))
      .sort((a, b) => Number(b) - Number(a));
    for (const version of versions) {
      const dir = `${debianRoot}/${version}/bin`;
      looked.push(dir);
      if (hasInitdb(dir)) return found(dir, badPgBin);
    }
    if (versions.length === 0) looked.push(`${debianRoot}/<version>/bin`);
  } catch {
    looked.push(`${debianRoot}/<version>/bin`);
  }
  looked.push(`${pgConfig} --bindir`);
  try {
    const dir = execFileSync(pgConfig, ["--bindir"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    if (dir && hasInitdb(dir)) return found(dir, badPgBin);
  } catch {
    // no pg_config on PATH
  }
  return found(undefined, badPgBin);
}

/** The directory holding initdb/pg_ctl/postgres/psql (see searchPostgresBin); undefined if none has initdb. */
export function findPostgresBin(): string | undefined {
  return searchPostgresBin().bin;
}

// Settings for a disposable test server. fsync, full_page_writes and synchronous_commit are off for speed:
// a crash may lose or corrupt this cluster's data, which is fine for a throwaway test database and never
// fine anywhere else. max_connections leaves room for ~6 origin instances × a pool of 20-30 plus listeners,
// reservers and the test's own clients.
const DEFAULT_SETTINGS: Record<string, string> = {
  listen_addresses: "'127.0.0.1'",
  max_connections: "200",
  fsync: "off",
  full_page_writes: "off",
  synchronous_commit: "off",
  shared_buffers: "32MB",
  max_wal_size: "256MB",
  // No collector: the server writes to pg_ctl's -l file, quoted in start errors.
  logging_collector: "off",
  log_line_prefix: "'%m [%p] %q%u@%d '",
};

const isRoot = () => process.getuid?.() === 0;
// runuser lives in /usr/sbin, which a non-login root shell's PATH may lack (CI runners, `sudo -E`).
const RUNUSER = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser", "/bin/runuser"].find((path) => existsSync(path)) ?? "runuser";
interface ClusterEntry {
  dataDir: string;
  dir: string;
  bin: string;
  watchdog: ChildProcess | undefined;
}
const clusters = new Set<ClusterEntry>();
let exitHookInstalled = false;

/** Starts a fresh throwaway cluster; resolves once it accepts connections. */
export async function startThrowawayPostgres(options: ThrowawayPostgresOptions = {}): Promise<ThrowawayPostgres> {
  const bin = options.bin ?? findPostgresBin();
  if (!bin || !existsSync(join(bin, "pg_ctl")) || !existsSync(join(bin, "psql"))) {
    throw new Error(
      `PostgreSQL server binaries (initdb, pg_ctl, psql) not found${bin ? ` in ${bin}` : ""} ` +
        `(looked at $PG_BIN, /usr/lib/postgresql/<version>/bin, pg_config --bindir). ` +
        `Install them with: ${INSTALL_HINT}  (or set PG_BIN to the directory holding initdb)`,
    );
  }
  const asPostgres = isRoot();
  let owner: { uid: number; gid: number } | undefined;
  if (asPostgres) {
    owner = osUser("postgres");
    if (!owner) {
      throw new Error(
        `running as root, and initdb refuses to run as root, but there is no "postgres" OS user to run it as. ` +
          `${INSTALL_HINT} creates it (Debian's postgresql package), or run the tests as a non-root user.`,
      );
    }
  }

  const dir = mkdtempSync(join(options.baseDir ?? tmpdir(), "slim-edge-pg-"));
  const dataDir = join(dir, "data");
  const logFile = join(dir, "server.log");
  const entry: ClusterEntry = { dataDir, dir, bin, watchdog: startWatchdog(dir, dataDir, bin) };
  clusters.add(entry);
  installExitHook();

  const run = (command: string, args: string[], timeoutMs = 60_000) =>
    exec(asPostgres ? RUNUSER : join(bin, command), asPostgres ? ["-u", "postgres", "--", join(bin, command), ...args] : args, {
      cwd: dir,
      timeoutMs,
    });

  try {
    if (owner) {
      chownSync(dir, owner.uid, owner.gid);
      const reachable = spawnSync(RUNUSER, ["-u", "postgres", "--", "test", "-w", dir], { stdio: "ignore" });
      if (reachable.error !== undefined) {
        throw new Error(`cannot run runuser (${reachable.error.message}): as root, the cluster runs as the postgres user through runuser (util-linux)`);
      }
      if (reachable.status !== 0) {
        throw new Error(
          `the postgres OS user cannot write ${dir} (a parent directory is closed to it); ` + `pass baseDir or set TMPDIR to a directory it can reach, such as /tmp`,
        );
      }
    }
    await run("initdb", [
      "-D", dataDir,
      "-U", SUPERUSER,
      "--auth-local=trust",
      "--auth-host=scram-sha-256",
      "-E", "UTF8",
      "--locale=C",
      "--no-sync",
      "--no-instructions",
    ]);

    const hba = [
      "# slim-edge throwaway cluster: first match wins",
      ...(options.hba ?? []),
      "local all all trust",
      `host all ${SUPERUSER} 127.0.0.1/32 trust`,
      "host all all 127.0.0.1/32 scram-sha-256",
      "",
    ].join("\n");
    writeFileSync(join(dataDir, "pg_hba.conf"), hba);
    appendFileSync(join(dataDir, "postgresql.conf"), "\n# slim-edge throwaway cluster\ninclude 'slim-edge.conf'\n");
    if (owner) chownSync(join(dataDir, "pg_hba.conf"), owner.uid, owner.gid);

    const writeSettings = (port: number) => {
      const settings: Record<string, string> = {
        ...DEFAULT_SETTINGS,
        port: String(port),
        unix_socket_directories: `'${dir}'`,
        ...options.settings,
      };
      const file = join(dataDir, "slim-edge.conf");
      writeFileSync(file, Object.entries(settings).map(([key, value]) => `${key} = ${value}`).join("\n") + "\n");
      if (owner) chownSync(file, owner.uid, owner.gid);
    };

    const pgCtlStart = () => run("pg_ctl", ["-D", dataDir, "-l", logFile, "-w", "-t", "60", "start"], 90_000);

    // A free port: bind port 0, release it, start on it. Another process may take it in between; then try
    // once more with a new one.
    let port = await freePort();
    writeSettings(port);
    try {
      await pgCtlStart();
    } catch (error) {
      if (!/could not bind|Address already in use/i.test(tail(logFile))) throw startError(error, logFile);
      port = await freePort();
      writeSettings(port);
      try {
        await pgCtlStart();
      } catch (retryError) {
        throw startError(retryError, logFile);
      }
    }

    const urlFor = (database: string) => `postgres://${SUPERUSER}@127.0.0.1:${port}/${encodeURIComponent(database)}`;

    const psql = async (query: string, database = "postgres") => {
      const { stdout } = await exec(
        join(bin, "psql"),
        ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", String(port), "-U", SUPERUSER, "-d", database, "-f", "-"],
        { input: query, timeoutMs: 60_000, env: { PGCONNECT_TIMEOUT: "5", PGAPPNAME: "throwaway-psql" } },
      );
      return stdout.replace(/\n$/, "");
    };

    const isRunning = async () => {
      try {
        await run("pg_ctl", ["-D", dataDir, "status"], 10_000);
        return true;
      } catch {
        return false; // exit 3: not running (4: no data dir)
      }
    };

    let destroyed = false;
    // stop/start/restart/destroy run one at a time, in call order (a stop still under way when destroy() is
    // called, say from a timer in a test, would otherwise race it).
    let lifecycle: Promise<unknown> = Promise.resolve();
    const serially = <T>(step: () => Promise<T>): Promise<T> => {
      const result = lifecycle.then(step, step);
      lifecycle = result.catch(() => {});
      return result;
    };
    const stopNow = async (mode: "fast" | "immediate") => {
      if (!(await isRunning())) return;
      await run("pg_ctl", ["-D", dataDir, "-m", mode, "-w", "-t", "60", "stop"], 90_000);
    };
    const startNow = async () => {
      if (destroyed) throw new Error("this throwaway PostgreSQL was destroyed");
      if (await isRunning()) return;
      try {
        await pgCtlStart();
      } catch (error) {
        throw startError(error, logFile);
      }
    };

    const cluster: ThrowawayPostgres = {
      url: urlFor("postgres"),
      port,
      host: "127.0.0.1",
      user: SUPERUSER,
      dir,
      dataDir,
      logFile,
      urlFor,
      sql: psql,
      async createDatabase(name) {
        await psql(`CREATE DATABASE ${quoteIdent(name)}`);
        return urlFor(name);
      },
      stop: (mode = "fast") => serially(() => stopNow(mode)),
      start: () => serially(startNow),
      restart: () =>
        serially(async () => {
          await stopNow("fast");
          await startNow();
        }),
      async terminate(where) {
        const out = await psql(
          `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000)) FROM pg_stat_activity ` +
            `WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND (${where})`,
        );
        return Number(out);
      },
      isRunning,
      destroy: () =>
        serially(async () => {
          if (destroyed) return;
          destroyed = true;
          try {
            await stopNow("immediate");
          } finally {
            forget(entry);
          }
        }),
    };
    return cluster;
  } catch (error) {
    stopSync(entry);
    forget(entry);
    throw error;
  }
}

function startError(error: unknown, logFile: string): Error {
  const message = error instanceof Error ? error.message : String(error);
  return new Error(`throwaway PostgreSQL did not start: ${message}\n--- server log (${logFile}) ---\n${tail(logFile)}`);
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no server log)";
  }
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function osUser(name: string): { uid: number; gid: number } | undefined {
  try {
    const uid = Number(execFileSync("id", ["-u", name], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim());
    const gid = Number(execFileSync("id", ["-g", name], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim());
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : undefined;
  } catch {
    return undefined;
  }
}

/** A loopback port nothing listens on right now (bound to port 0, then released). */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolvePort(port));
    });
  });
}

/** PG* variables from the caller's environment must not redirect our psql/pg_ctl to another server. */
function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith("PG")) env[key] = value;
  return { ...env, LC_ALL: "C", ...extra };
}

function exec(
  file: string,
  args: string[],
  options: { cwd?: string; input?: string; timeoutMs: number; env?: Record<string, string> },
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolveRun, reject) => {
    const child = execFile(
      file,
      args,
      { cwd: options.cwd, env: childEnv(options.env), timeout: options.timeoutMs, killSignal: "SIGKILL", maxBuffer: 64 << 20, encoding: "utf8" },
      (error, stdout, stderr) => {
        if (error) {
          const command = [file, ...args].join(" ");
          const detail = (stderr || stdout || error.message).trim();
          reject(new Error(`${command} failed (${error.code ?? error.signal ?? "error"}): ${detail}`));
        } else {
          resolveRun({ stdout, stderr });
        }
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
    else child.stdin?.end();
  });
}

function stopSync(entry: { dataDir: string; bin: string }): void {
  if (!existsSync(join(entry.dataDir, "postmaster.pid"))) return;
  const pgCtl = join(entry.bin, "pg_ctl");
  const args = ["-D", entry.dataDir, "-m", "immediate", "-w", "-t", "30", "stop"];
  spawnSync(isRoot() ? RUNUSER : pgCtl, isRoot() ? ["-u", "postgres", "--", pgCtl, ...args] : args, {
    stdio: "ignore",
    env: childEnv(),
    cwd: "/",
    timeout: 40_000,
  });
}

/** Drops a cluster from the registry: its dir is removed and its watchdog is no longer needed. */
function forget(entry: ClusterEntry): void {
  clusters.delete(entry);
  rmSync(entry.dir, { recursive: true, force: true });
  if (entry.watchdog?.pid !== undefined && entry.watchdog.exitCode === null) {
    try {
      entry.watchdog.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
}

/** A normal exit (including an uncaught exception) stops and removes whatever is still running. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const entry of [...clusters]) {
      stopSync(entry);
      forget(entry);
    }
  });
}

/**
 * A process killed by a signal (a test runner's timeout, `timeout`, SIGKILL) runs no exit hook, and its
 * server would live on. So each cluster gets a small detached shell that checks once a second whether this
 * process still exists, and when it is gone stops the server (immediate) and removes the dir. destroy()
 * and the exit hook kill the watchdog once they have cleaned up themselves.
 */
function startWatchdog(dir: string, dataDir: string, bin: string): ChildProcess | undefined {
  const pgCtl = join(bin, "pg_ctl");
  const stop = [...(isRoot() ? [RUNUSER, "-u", "postgres", "--"] : []), pgCtl, "-D", dataDir, "-m", "immediate", "-w", "-t", "30", "stop"];
  const script = 'parent=$1; dir=$2; shift 2; while kill -0 "$parent" 2>/dev/null; do sleep 1; done; "$@" >/dev/null 2>&1; rm -rf "$dir"';
  try {
    const child = spawn("/bin/sh", ["-c", script, "slim-edge-pg-watchdog", String(process.pid), dir, ...stop], {
      detached: true,
      stdio: "ignore",
      cwd: "/",
      env: childEnv(),
    });
    child.on("error", () => {});
    child.unref();
    return child;
  } catch {
    return undefined; // no /bin/sh: the exit hook still covers normal exits
  }
}

// `node scripts/lib/postgres-cluster.ts`: one cluster for local runs, until Ctrl-C.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const cluster = await startThrowawayPostgres();
  console.log(`throwaway PostgreSQL (${userInfo().username === "root" ? "as the postgres user" : "as you"}) in ${cluster.dir}`);
  console.log(`DATABASE_URL=${cluster.url}`);
  console.log("Ctrl-C stops it and removes the directory.");
  const shutdown = () => {
    cluster.destroy().finally(() => process.exit(0));
  };
  process.once("SIGINT", shutdown);
  process.once("SIGTERM", shutdown);
  setInterval(() => {}, 1 << 30);
}
