// ORIGIN_PROCESSES=3 on the embedded SQLite store, as real processes (node src/origin/main.ts): three
// workers on one port, writes relayed between their caches through the primary, one /metrics for all of
// them, the fast path on connections the primary passes, a killed worker replaced, and SIGTERM letting an
// in-flight request finish. Waits are on what the processes print or answer, bounded; nothing sleeps.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startCloudflareApiStandIn } from "../../scripts/lib/cloudflare-api-stand-in.ts";
import { connectionsByWorker, eventually, listening, parseMetrics, scrape, spawnOrigin, type OriginProcess } from "./cluster-harness.ts";
import { get, registerCleanup, RawConnection, tempDir, withBody } from "./harness.ts";

const TIMEOUT = { timeout: 20_000 };

function cluster(env: Record<string, string> = {}, args = ["--seed=3"]): OriginProcess {
  const p = spawnOrigin({ ORIGIN_PROCESSES: "3", DATABASE_URL: join(tempDir(), "data", "items.sqlite"), ...env }, args);
  registerCleanup(() => p.kill());
  return p;
}

describe("ORIGIN_PROCESSES=3 on SQLite", () => {
  it("serves one port from three workers, relays a write to the others, and merges their metrics", TIMEOUT, async () => {
    const p = cluster();
    const { line, port, metricsPort } = await listening(p);
    expect(line).toMatch(
      /^origin listening on http:\/\/127\.0\.0\.1:\d+ \(3 processes, writes relayed between them; 3 items in .*items\.sqlite \(seeded 3 sample items\); no token check; metrics http:\/\/127\.0\.0\.1:\d+\/metrics\)$/,
    );
    expect(p.stdout().match(/listening on/g)).toHaveLength(1);

    // Connections opened one after another go round the workers: every worker serves some.
    const byWorker = await connectionsByWorker(port, metricsPort!, 9);
    expect([...byWorker.keys()].sort()).toEqual(["1", "2", "3"]);
    const one = (worker: string) => byWorker.get(worker)![0]!;

    // Every worker has item 1 cached now; a write through worker 1 reaches the other two.
    const before = await one("2").send(get("/items/1"));
    const put = await one("1").send(withBody("PUT", "/items/1", '{"v":2}'));
    expect(put.status).toBe(204);
    const etag = put.header("etag")!;
    expect(etag).not.toBe(before.header("etag"));
    expect((await one("1").send(get("/items/1"))).body.toString()).toBe('{"v":2}'); // the writer, at once
    for (const worker of ["2", "3"]) {
      // Within the IPC hop (primary → worker): poll, bounded.
      const r = await eventually(`worker ${worker} serving the write`, async () => {
        const res = await one(worker).send(get("/items/1", { "If-None-Match": before.header("etag")! }));
        return res.status === 200 ? res : undefined;
      });
      expect(r.header("etag")).toBe(etag); // ETags agree across processes
      expect(r.body.toString()).toBe('{"v":2}');
    }

    // One page for the machine: counters are the sums of each worker's own page (served on PORT).
    const merged = await scrape(metricsPort!);
    const own = await Promise.all(
      ["1", "2", "3"].map(async (worker) => parseMetrics((await one(worker).send(get("/metrics"))).body.toString())),
    );
    const reads = { route: "/items/:id", method: "GET", status: "200" };
    const perWorker = own.map((page) => page.value("origin_http_requests_total", reads)!);
    expect(merged.value("origin_http_requests_total", reads)).toBe(perWorker.reduce((a, b) => a + b, 0));
    for (const [i, worker] of ["1", "2", "3"].entries()) {
      expect(merged.value("origin_worker_http_requests_total", { worker })).toBeGreaterThanOrEqual(perWorker[i]!);
    }
    expect(merged.value("origin_cache_max_bytes")).toBe(3 * 8 * 2 ** 20); // three caches on the machine
    expect(merged.value("origin_feed_changes_total")).toBe(2); // the write, applied by the two others
    expect(merged.value("origin_feed_healthy")).toBe(1);
    expect(merged.value("origin_cluster_processes")).toBe(3);
    expect(merged.sum("origin_cluster_worker_up")).toBe(3);
    const pids = ["1", "2", "3"].map((worker) => merged.text.match(new RegExp(`origin_cluster_worker_info\\{worker="${worker}",pid="(\\d+)"\\} 1`))?.[1]);
    expect(new Set(pids).size).toBe(3);
    expect(merged.value("process_resident_memory_bytes")).toBeGreaterThan(merged.value("origin_worker_resident_memory_bytes", { worker: "1" })!);

    const health = await fetch(`http://127.0.0.1:${metricsPort}/healthz`);
    expect(health.status).toBe(204);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/nope`)).status).toBe(404);
    // Host as on every other port: none in HTTP/1.1, or two, is the origin's own 400.
    for (const hosts of ["", "Host: a\r\nHost: b\r\n"]) {
      const c = await RawConnection.open(metricsPort!);
      const refused = await c.send(`GET /healthz HTTP/1.1\r\n${hosts}\r\n`);
      expect([refused.status, refused.header("connection"), refused.header("date")]).toEqual([400, "close", undefined]);
    }
    const c = await RawConnection.open(metricsPort!);
    const http2 = await c.send("GET /healthz HTTP/2.0\r\nHost: o\r\n\r\n");
    expect([http2.status, http2.header("connection")]).toEqual([505, "close"]);
  });

  it("answers simple reads on the fast path in every worker, and hands a write on the same connection to node:http", TIMEOUT, async () => {
    const p = cluster();
    const { port, metricsPort } = await listening(p);
    const byWorker = await connectionsByWorker(port, metricsPort!, 3);
    const handOffs = (await scrape(metricsPort!)).value("origin_fast_path_handoffs_total")!;
    for (const [worker, [c]] of byWorker) {
      // An item of its own per worker: a write relayed from another worker would race the reads below.
      const path = `/items/${worker}`;
      const r = await c!.send(get(path));
      const etag = r.header("etag")!;
      expect(r.text).toBe(`HTTP/1.1 200 OK\r\nETag: ${etag}\r\nContent-Length: ${r.body.length}\r\n\r\n${r.body.toString()}`);
      // Pipelined: a 304, then a write (the fast path hands the connection to node:http), then a read.
      const body = `{"worker":${worker}}`;
      c!.socket.write(Buffer.concat([Buffer.from(get(path, { "If-None-Match": etag })), withBody("PUT", path, body), Buffer.from(get(path))]));
      const notModified = await c!.next();
      expect(notModified.text).toBe(`HTTP/1.1 304 Not Modified\r\nETag: ${etag}\r\n\r\n`);
      const put = await c!.next();
      expect(put.status).toBe(204);
      const read = await c!.next();
      expect(read.text).toBe(`HTTP/1.1 200 OK\r\nETag: ${put.header("etag")}\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      expect(c!.leftover.length).toBe(0);
    }
    // Each of the three connections was read by a fast path first (only the fast path hands off).
    expect((await scrape(metricsPort!)).value("origin_fast_path_handoffs_total")).toBe(handOffs + 3);
  });

  it("replaces a killed worker; the others keep answering and drop what they cached", TIMEOUT, async () => {
    const p = cluster();
    const { port, metricsPort } = await listening(p);
    const first = await scrape(metricsPort!);
    const pid = Number(first.text.match(/origin_cluster_worker_info\{worker="2",pid="(\d+)"\} 1/)![1]);
    process.kill(pid, "SIGKILL");
    await p.output(new RegExp(`worker 2 \\(pid ${pid}\\) died \\(signal SIGKILL\\); starting a new one in \\d+ ms`));

    // Until worker 2 is back, new connections reach workers 1 and 3: every read is answered.
    let isBack = false;
    p.output(/worker 2 is back \(pid \d+\)/).then(
      () => (isBack = true),
      () => {},
    );
    let answered = 0;
    await eventually("worker 2 back", async () => {
      const res = await fetch(`http://127.0.0.1:${port}/items/3`, { signal: AbortSignal.timeout(10_000) });
      expect(res.status).toBe(200);
      await res.text();
      answered++;
      return isBack ? true : undefined;
    });
    expect(answered).toBeGreaterThan(0);
    const page = await eventually("worker 2 back in /metrics", async () => {
      const m = await scrape(metricsPort!);
      return m.sum("origin_cluster_worker_up") === 3 ? m : undefined;
    });
    expect(page.value("origin_cluster_worker_restarts_total", { worker: "2" })).toBe(1);
    expect(page.text).not.toContain(`pid="${pid}"`);
    // The dead worker may have committed a write it never relayed: the others dropped everything.
    expect(page.value("origin_feed_resets_total")).toBe(2);

    // The new worker takes part in the relay like the others.
    const byWorker = await connectionsByWorker(port, metricsPort!, 3);
    expect([...byWorker.keys()].sort()).toEqual(["1", "2", "3"]);
    const put = await byWorker.get("2")![0]!.send(withBody("PUT", "/items/1", '{"after":"restart"}'));
    expect(put.status).toBe(204);
    for (const worker of ["1", "3"]) {
      await eventually(`worker ${worker} serving the new worker's write`, async () => {
        const r = await byWorker.get(worker)![0]!.send(get("/items/1"));
        return r.header("etag") === put.header("etag") ? r : undefined;
      });
    }
  });

  it("a worker replacing one that died serves without purging when the purge token was refused since the cluster started, instead of stopping them all", TIMEOUT, async () => {
    const TOKEN = "cluster-purge-token";
    const ZONE = "0123456789abcdef0123456789abcdef";
    const standIn = await startCloudflareApiStandIn({ token: TOKEN, zoneId: ZONE, plan: "pro" });
    registerCleanup(() => standIn.close());
    const p = cluster({ CLOUDFLARE_API_BASE: standIn.baseUrl, CLOUDFLARE_ZONE_ID: ZONE, CLOUDFLARE_API_TOKEN: TOKEN, CLOUDFLARE_PURGE_REPEAT_MS: "0" });
    const { port, metricsPort } = await listening(p);
    standIn.revokePurge(TOKEN); // edited in the dashboard while the cluster runs
    const pid = Number((await scrape(metricsPort!)).text.match(/origin_cluster_worker_info\{worker="1",pid="(\d+)"\} 1/)![1]);
    process.kill(pid, "SIGKILL"); // worker 1 purges for all (SQLite): its replacement checks the token again
    await p.output(/worker 1 is back \(pid \d+\)/);
    await p.output(/purge: serving without purging the edge until Cloudflare accepts the token again \(tried every 60 s\)/);
    expect((await fetch(`http://127.0.0.1:${port}/items/3`)).status).toBe(200);
    expect(p.stdout() + p.stderr()).not.toMatch(/giving up|failed to start/);
    expect((await scrape(metricsPort!)).sum("origin_cluster_worker_up")).toBe(3);
  });

  it("on SIGTERM lets an in-flight request finish in its worker, then exits 0 once every worker has closed", TIMEOUT, async () => {
    const database = join(tempDir(), "items.sqlite");
    const p = cluster({ DATABASE_URL: database });
    const { port, metricsPort } = await listening(p);
    const handOffs = (await scrape(metricsPort!)).value("origin_fast_path_handoffs_total")!;
    const c = await RawConnection.open(port);
    const put = withBody("PUT", "/items/slow", '{"in":"flight"}');
    const answer = c.next();
    c.socket.write(put.subarray(0, put.length - 5)); // the head and part of the body
    // The worker has the request once its fast path handed the connection to node:http.
    await eventually("the PUT handed to node:http", async () =>
      (await scrape(metricsPort!)).value("origin_fast_path_handoffs_total") === handOffs + 1 ? true : undefined,
    );

    p.child.kill("SIGTERM");
    await p.output(/origin: SIGTERM, finishing in-flight requests in 3 processes and closing the database/);
    for (const worker of [1, 2, 3]) await p.output(new RegExp(`\\[worker ${worker}\\] origin: SIGTERM, finishing in-flight requests`));
    expect(p.child.exitCode).toBe(null); // one worker still holds the request

    c.socket.write(put.subarray(put.length - 5));
    expect((await answer).status).toBe(204);
    c.socket.end(); // a keep-alive connection node:http serves stays open until its client leaves, or the grace period ends
    expect(await p.exited).toEqual({ code: 0, signal: null });
    expect(p.stderr()).not.toMatch(/died|giving up|error/);

    // The write was committed before its 204: a fresh single process reads it.
    const again = spawnOrigin({ DATABASE_URL: database, METRICS_PORT: "off" });
    registerCleanup(() => again.kill());
    const single = await listening(again);
    expect(single.line).not.toContain("processes");
    const read = await fetch(`http://127.0.0.1:${single.port}/items/slow`);
    expect(await read.text()).toBe('{"in":"flight"}');
  });
});
