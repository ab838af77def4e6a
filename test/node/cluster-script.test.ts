// The local cluster (`npm run cluster`, scripts/cluster.ts) comes up, carries a write on one instance to
// the read on another, and leaves nothing behind on Ctrl-C, nor when it refuses bad arguments (exit 2) or
// a port another process holds (exit 1); and the cluster benchmark's arithmetic
// (bench/cluster/: percentiles, staleness, propagation lag, the feed/TTL replay) is right. The smoke test
// needs PostgreSQL's server binaries (bash scripts/ci-install-postgresql.sh).

import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import { parseSettings } from "../../bench/cluster/args.ts";
import { propagation, type ProbedWrite } from "../../bench/cluster/propagation.ts";
import { replay, type ReplayOptions } from "../../bench/cluster/replay.ts";
import { staleness, type CommittedWrite, type ObservedRead } from "../../bench/cluster/staleness.ts";
import { summarize } from "../../bench/cluster/stats.ts";
import { percentile } from "../../bench/lib/stats.ts";
import { searchPostgresBin } from "../../scripts/lib/postgres-cluster.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const NODE = resolve(ROOT, "node_modules/.bin/node");

describe("percentiles", () => {
  it("are nearest-rank: the smallest sample with at least p of the samples at or below it", () => {
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(hundred, 0.5)).toBe(50);
    expect(percentile(hundred, 0.99)).toBe(99);
    expect(percentile(hundred, 1)).toBe(100);
    expect(percentile([7], 0.99)).toBe(7);
    expect(percentile([], 0.5)).toBe(0);
    // 50 samples: p99 is the largest (rank ceil(49.5) = 50), p50 the 25th.
    const fifty = Array.from({ length: 50 }, (_, i) => i);
    expect(percentile(fifty, 0.99)).toBe(49);
    expect(percentile(fifty, 0.5)).toBe(24);
  });

  it("summarize sorts a copy and reports count, p50, p99 and max", () => {
    const values = [5, 1, 4, 2, 3];
    expect(summarize(values)).toEqual({ count: 5, p50: 3, p99: 5, max: 5 });
    expect(values).toEqual([5, 1, 4, 2, 3]);
    expect(summarize([])).toEqual({ count: 0, p50: 0, p99: 0, max: 0 });
  });
});

describe("staleness accounting", () => {
  const SEED = '"Ab1"';
  const writes: CommittedWrite[] = [
    { id: "7", etag: '"Cd2"', committedAt: 100 },
    { id: "7", etag: '"Ef3"', committedAt: 200 },
  ];
  const read = (sentAt: number, etag: string, id = "7"): ObservedRead => ({ id, instance: 1, sentAt, etag });
  const judge = (reads: ObservedRead[], boundMs = 50) => staleness(writes, reads, { initialEtags: new Set([SEED]), boundMs });

  it("a read sent before a write's 204 may return the old version (the write had not committed, as far as the client knew)", () => {
    const r = judge([read(50, SEED), read(99.9, SEED)]);
    expect(r.stale).toBe(0);
  });

  it("a read sent after a 204 that returns an older version is stale, aged from the first write it missed", () => {
    const r = judge([read(130, SEED), read(230, '"Cd2"'), read(260, SEED)]);
    expect(r.stale).toBe(3);
    expect(r.worst.map((s) => [s.sentAt, s.ageMs, s.versionsBehind])).toEqual([
      [260, 160, 2],
      [130, 30, 1],
      [230, 30, 1],
    ]);
    expect(r.maxAgeMs).toBe(160);
    // Only the read 160 ms late is beyond a 50 ms bound.
    expect(r.beyondBound).toBe(1);
  });

  it("the current version, or a newer one whose 204 is still on its way, is never stale", () => {
    const r = judge([read(150, '"Cd2"'), read(150, '"Ef3"'), read(250, '"Ef3"')]);
    expect(r.stale).toBe(0);
    expect(r.reads).toBe(3);
  });

  it("ids never written are current; an ETag no write announced is counted apart, not judged", () => {
    const r = judge([read(500, SEED, "8"), read(500, '"Zz9"')]);
    expect(r.stale).toBe(0);
    expect(r.unknownVersion).toBe(1);
  });

  it("orders an id's versions by commit, whatever order the writes were recorded in", () => {
    const r = staleness([...writes].reverse(), [read(230, '"Cd2"')], { initialEtags: new Set([SEED]), boundMs: 50 });
    expect(r.stale).toBe(1);
    expect(r.worst[0]!.ageMs).toBe(30);
  });
});

describe("propagation lag", () => {
  const probes = (instance: number, servedAt: number | undefined, lastStaleSentAt?: number) => ({
    instance,
    servedAt,
    lastStaleSentAt,
    probes: lastStaleSentAt === undefined ? 1 : 3,
    staleAnswers: lastStaleSentAt === undefined ? 0 : 2,
  });

  it("is commit → the last instance serving the new version, split into the writer and the others", () => {
    const writes: ProbedWrite[] = [
      { id: "1", writer: 0, committedAt: 1000, instances: [probes(0, 1000.5), probes(1, 1002, 1001), probes(2, 1004, 1003.5)] },
      { id: "2", writer: 1, committedAt: 2000, instances: [probes(0, 2001), probes(1, 2000.25), probes(2, 2003, 2002)] },
    ];
    const r = propagation(writes);
    expect(r.all).toEqual({ count: 2, p50: 3, p99: 4, max: 4 });
    expect(r.writer).toEqual({ count: 2, p50: 0.25, p99: 0.5, max: 0.5 });
    expect(r.others.count).toBe(4);
    expect(r.others.max).toBe(4);
    expect(r.gaveUp).toBe(0);
    // Resolution: first 304 − last stale probe sent, median of 1, 0.5, 1.
    expect(r.resolutionMs).toBe(1);
    expect(r.probesPerWrite).toBe(6);
    expect(r.staleAnswersPerWrite).toBe(3);
  });

  it("a write some instance never served within the bound is counted as given up, not as a small lag", () => {
    const r = propagation([{ id: "1", writer: 0, committedAt: 0, instances: [probes(0, 1), probes(1, undefined, 1999)] }]);
    expect(r.gaveUp).toBe(1);
    expect(r.all.count).toBe(0);
  });
});

describe("feed vs TTL replay", () => {
  const base: Omit<ReplayOptions, "mode" | "ttlSeconds"> = {
    instances: 3,
    items: 200,
    zipfS: 0.9,
    seed: 1,
    readsPerSecond: 50,
    writesPerSecond: 2,
    seconds: 900,
    lagMs: 0,
    boundMs: 250,
    cacheMaxBytes: 1 << 20,
    entryBytes: 100,
  };

  it("with the feed, a read never serves a version older than the last write (no lag); with a TTL and no feed, it does", () => {
    const feed = replay({ ...base, mode: "feed", ttlSeconds: 86400 });
    const ttl = replay({ ...base, mode: "ttl", ttlSeconds: 300 });
    expect(feed.writes).toBe(1800);
    for (const i of feed.instances) {
      expect(i.stale).toBe(0);
      expect(i.hits + i.misses).toBe(i.reads);
    }
    expect(ttl.instances.every((i) => i.stale > 0 && i.maxStaleAgeMs <= 300_000)).toBe(true);
  });

  it("with the feed, a writer keeps what its own write cached: a lone instance never misses", () => {
    const alone = replay({ ...base, instances: 1, mode: "feed", ttlSeconds: 86400, lagMs: 5 });
    expect(alone.writes).toBe(1800);
    expect(alone.instances[0]!.misses).toBe(0);
    expect(alone.instances[0]!.stale).toBe(0);
    // With others writing too, each other writer's report drops the entry: the next read misses.
    const three = replay({ ...base, mode: "feed", ttlSeconds: 86400 });
    expect(three.instances.every((i) => i.misses > 0 && i.stale === 0)).toBe(true);
  });

  it("a lag lets reads within it see the old version, and only within it", () => {
    const lagged = replay({ ...base, mode: "feed", ttlSeconds: 86400, lagMs: 40, readsPerSecond: 500 });
    const stale = lagged.instances.reduce((n, i) => n + i.stale, 0);
    expect(stale).toBeGreaterThan(0);
    expect(Math.max(...lagged.instances.map((i) => i.maxStaleAgeMs))).toBeLessThanOrEqual(40);
    expect(lagged.instances.every((i) => i.beyondBound === 0)).toBe(true);
  });

  it("counts the reads in the given spans apart", () => {
    const r = replay({ ...base, mode: "feed", ttlSeconds: 86400, seconds: 10, spansMs: [[0, 5000]] });
    // 50 read slots per second, one read per instance each: slots at 20, 40, … 4980 ms fall in the span.
    expect(r.inSpans.map((s) => s.reads)).toEqual([249, 249, 249]);
  });
});

describe("--postgres settings", () => {
  it("parses name=value pairs and refuses anything else", () => {
    expect(parseSettings("jit=off, work_mem=8MB")).toEqual({ jit: "off", work_mem: "8MB" });
    expect(parseSettings("")).toEqual({});
    expect(() => parseSettings("jit")).toThrow(/name=value/);
  });
});

/** Resolves with "connected" or the connect error code. */
function probePort(port: number): Promise<string> {
  return new Promise((done) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      done("connected");
    });
    socket.once("error", (error: NodeJS.ErrnoException) => done(error.code ?? error.message));
  });
}

/** A cluster a test left running: SIGINT, then SIGKILL if it has not gone after 5 s. */
async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill("SIGINT");
    await sleep(5000);
    if (child.exitCode === null) child.kill("SIGKILL");
  }
}

describe("npm run cluster -- --instances 2", () => {
  let child: ChildProcess | undefined;

  afterAll(() => stopChild(child));

  it("comes up, serves a write on one instance and the read on the other, and stops cleanly on SIGINT", async () => {
    // What `npm run cluster -- --instances 2` runs, on free ports (a fixed one may be taken on a shared machine).
    child = spawn(NODE, ["scripts/cluster.ts", "--instances", "2", "--port", "0", "--items", "20"], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (text: string) => (out += text));
    child.stderr!.setEncoding("utf8").on("data", (text: string) => (out += text));
    const exited = new Promise<number | null>((done) => child!.once("exit", (code) => done(code)));

    const deadline = Date.now() + 60_000;
    while (!out.includes("Ctrl-C stops everything.")) {
      if (child.exitCode !== null) throw new Error(`scripts/cluster.ts exited (${child.exitCode}) before it was up:\n${out}`);
      if (Date.now() > deadline) throw new Error(`scripts/cluster.ts was not up within 60 s:\n${out}`);
      await sleep(100);
    }
    const url = (n: number) => new RegExp(`origin ${n} +(http://127\\.0\\.0\\.1:\\d+)`).exec(out)?.[1];
    const [first, second] = [url(1), url(2)];
    const dir = /\(in (\S+), removed on Ctrl-C\)/.exec(out)?.[1];
    expect(first && second && dir, out).toBeTruthy();
    expect(out).toContain(`curl -i -X PUT ${first}/items/1`);
    expect(out).toContain(`curl -i ${second}/items/1`);
    expect(existsSync(dir!)).toBe(true);

    // Seeded, and the same ETag on both instances.
    const before = await fetch(`${second}/items/1`);
    expect(before.status).toBe(200);
    expect((await fetch(`${first}/items/1`)).headers.get("etag")).toBe(before.headers.get("etag"));
    const body = JSON.stringify({ id: "1", name: "written on origin 1" });
    const put = await fetch(`${first}/items/1`, { method: "PUT", headers: { "content-type": "application/json" }, body });
    expect(put.status).toBe(204);
    const etag = put.headers.get("etag");
    expect(etag).not.toBe(before.headers.get("etag"));

    // The other instance serves it within the feed's lag (milliseconds; 2 s is the test's patience).
    let seen: { etag: string | null; body: string } | undefined;
    for (const until = Date.now() + 2000; Date.now() < until; await sleep(10)) {
      const res = await fetch(`${second}/items/1`);
      seen = { etag: res.headers.get("etag"), body: await res.text() };
      if (seen.etag === etag) break;
    }
    expect(seen).toEqual({ etag, body });

    const ports = [first!, second!].map((u) => Number(new URL(u).port));
    child.kill("SIGINT");
    const code = await Promise.race([exited, sleep(30_000).then(() => "timeout" as const)]);
    expect(code, out).toBe(0);
    expect(out).toContain("SIGINT: stopping the instances");
    expect(existsSync(dir!)).toBe(false);
    for (const port of ports) expect(await probePort(port)).toBe("ECONNREFUSED");
  }, 120_000);
});

describe("where npm run cluster looks for PostgreSQL", () => {
  const root = mkdtempSync(join(tmpdir(), "slim-edge-pgbin-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const binWithInitdb = (path: string) => {
    mkdirSync(path, { recursive: true });
    writeFileSync(join(path, "initdb"), "");
    return path;
  };
  const debian = join(root, "postgresql");
  const v15 = binWithInitdb(join(debian, "15", "bin"));
  const own = binWithInitdb(join(root, "own", "bin"));
  const noPgConfig = join(root, "no-pg_config");

  it("takes $PG_BIN when it holds initdb", () => {
    expect(searchPostgresBin(own, debian, noPgConfig)).toEqual({ bin: own, pgBinWithoutInitdb: undefined, looked: [own] });
  });

  it("passes over a $PG_BIN without initdb to the highest /usr/lib/postgresql/<version>/bin, and says so", () => {
    expect(searchPostgresBin("/nonexistent", debian, noPgConfig)).toEqual({ bin: v15, pgBinWithoutInitdb: "/nonexistent", looked: ["/nonexistent", v15] });
  });

  it("lists every place it looked when none has initdb", () => {
    const none = searchPostgresBin("/nonexistent", join(root, "absent"), noPgConfig);
    expect(none).toEqual({
      bin: undefined,
      pgBinWithoutInitdb: "/nonexistent",
      looked: ["/nonexistent", `${join(root, "absent")}/<version>/bin`, `${noPgConfig} --bindir`],
    });
  });
});

describe.skipIf(searchPostgresBin("").bin === undefined)("npm run cluster with PG_BIN=/nonexistent", () => {
  let child: ChildProcess | undefined;
  afterAll(() => stopChild(child));

  it("names the PG_BIN that has no initdb and uses the next place, as docs/origin.md says", async () => {
    const fallback = searchPostgresBin("").bin!;
    child = spawn(NODE, ["scripts/cluster.ts", "--instances", "1", "--port", "0", "--items", "0"], {
      cwd: ROOT,
      env: { ...process.env, PG_BIN: "/nonexistent" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (text: string) => (out += text));
    child.stderr!.setEncoding("utf8").on("data", (text: string) => (out += text));
    const exited = new Promise<number | null>((done) => child!.once("exit", (code) => done(code)));
    for (const deadline = Date.now() + 60_000; !out.includes("Ctrl-C stops everything."); await sleep(100)) {
      if (child.exitCode !== null) throw new Error(`scripts/cluster.ts exited (${child.exitCode}) before it was up:\n${out}`);
      if (Date.now() > deadline) throw new Error(`scripts/cluster.ts was not up within 60 s:\n${out}`);
    }
    expect(out.split("\n")[0]).toBe(`cluster: PG_BIN=/nonexistent has no initdb; using ${fallback} instead`);
    expect(out).not.toContain("not installed");
    child.kill("SIGINT");
    expect(await Promise.race([exited, sleep(30_000).then(() => "timeout" as const)]), out).toBe(0);
  }, 120_000);
});

describe("npm run cluster refuses what it cannot do, and leaves nothing behind", () => {
  /** Runs scripts/cluster.ts with its temp dirs in a fresh one (readable by the postgres OS user, as root). */
  function cluster(args: string[]): Promise<{ code: number | null; out: string; leftovers: string[] }> {
    const tmp = mkdtempSync(join(tmpdir(), "slim-edge-cluster-refusal-"));
    chmodSync(tmp, 0o755);
    const child = spawn(NODE, ["scripts/cluster.ts", ...args], { cwd: ROOT, env: { ...process.env, TMPDIR: tmp }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (text: string) => (out += text));
    child.stderr!.setEncoding("utf8").on("data", (text: string) => (out += text));
    return new Promise((done) =>
      child.once("exit", (code) => {
        const leftovers = readdirSync(tmp);
        rmSync(tmp, { recursive: true, force: true });
        done({ code, out, leftovers });
      }),
    );
  }

  it.each([
    [["--instances", "0"], '--instances must be a whole number from 1 to 16, got "0"'],
    [["--instances", "17"], '--instances must be a whole number from 1 to 16, got "17"'],
    [["--items", "1.5"], '--items must be a whole number from 0 to 10000000, got "1.5"'],
    [["--items=-1"], '--items must be a whole number from 0 to 10000000, got "-1"'],
    [["--port", "65535", "--instances", "3"], '--port must be a whole number from 0 to 65533, got "65535"'],
    [["--worker-port", "http"], '--worker-port must be a whole number from 0 to 65535, got "http"'],
    [["--instance", "2"], "Unknown option '--instance'"],
    [["--instances"], "Option '--instances <value>' argument missing"],
  ])("%j: exit 2 with the problem and the usage, before starting anything", async (args, problem) => {
    const { code, out, leftovers } = await cluster(args);
    expect(code).toBe(2);
    expect(out.split("\n")[0]).toContain(`cluster: ${problem}`);
    expect(out).toContain("usage: npm run cluster [-- --instances N]");
    expect(leftovers).toEqual([]);
  });

  it("--help prints the usage and starts nothing", async () => {
    const { code, out, leftovers } = await cluster(["--help"]);
    expect([code, out.startsWith("usage: npm run cluster"), leftovers]).toEqual([0, true, []]);
  });

  it.skipIf(searchPostgresBin("").bin === undefined)("a port another process holds: exit 1 naming --port, the database removed", async () => {
    const holder = createServer();
    await new Promise<void>((listening) => holder.listen(0, listening));
    try {
      const port = (holder.address() as AddressInfo).port;
      const { code, out, leftovers } = await cluster(["--instances", "1", "--items", "0", "--port", String(port)]);
      expect(code, out).toBe(1);
      expect(out).toMatch(/another process holds the port/i);
      expect(out).toContain("(pick other ports with --port P, or --port 0 for free ones)");
      expect(leftovers).toEqual([]);
    } finally {
      await new Promise((closed) => holder.close(closed));
    }
  }, 120_000);
});
