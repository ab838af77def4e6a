// Several origin instances (real processes: node src/origin/main.ts) on one throwaway PostgreSQL: every
// committed change reaches every instance's cache, whoever made it, across killed listeners and a restarted
// server. Waits are on what the instances answer, bounded; nothing sleeps to synchronise.
import { afterEach, describe, expect, it } from "vitest";
import { startOrigin, type Running } from "../../scripts/lib/local-stack.ts";
import { usePostgres } from "./pg-harness.ts";

const postgres = usePostgres();
const running: Running[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});

/** `n` origin processes on `url`, listening on free ports. */
async function instances(url: string, n: number, env: Record<string, string> = {}): Promise<Running[]> {
  const started = await Promise.all(
    Array.from({ length: n }, () => startOrigin({ databasePath: url, extraEnv: { FEED_POLL_MS: "100", ...env } })),
  );
  running.push(...started);
  return started;
}

async function read(origin: Running, id: string): Promise<{ status: number; etag: string | null; body: string }> {
  const res = await fetch(`${origin.url}/items/${id}`, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, etag: res.headers.get("etag"), body: await res.text() };
}

async function write(origin: Running, id: string, body: string): Promise<string> {
  const res = await fetch(`${origin.url}/items/${id}`, { method: "PUT", headers: { "content-type": "application/json" }, body, signal: AbortSignal.timeout(10_000) });
  expect(res.status).toBe(204);
  return res.headers.get("etag")!;
}

/** Resolves once `origin` serves `body` for `id`; fails after `withinMs` (a liveness bound, not a timing claim). */
async function servesEventually(origin: Running, id: string, body: string, withinMs = 5000): Promise<{ etag: string | null }> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const r = await read(origin, id);
    if (r.body === body) return r;
    if (Date.now() > deadline) throw new Error(`${origin.url} still serves ${JSON.stringify(r.body)} for ${id}, not ${body}, after ${withinMs} ms`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

async function metric(origin: Running, name: string): Promise<number> {
  const text = await (await fetch(`${origin.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.split(" ")[1]);
}

describe("change feed across origin instances on PostgreSQL", () => {
  it("a write on any instance reaches the others, the writer reads it at once, and ETags agree", async () => {
    const all = await instances(await postgres.database(), 3);
    await write(all[0]!, "k", '{"v":0}');
    for (const o of all) expect((await servesEventually(o, "k", '{"v":0}')).etag).toBeTruthy(); // every cache holds k now
    for (const [i, writer] of all.entries()) {
      const body = `{"v":${i + 1}}`;
      const etag = await write(writer, "k", body);
      expect(await read(writer, "k")).toEqual({ status: 200, etag, body }); // read-your-writes, no waiting
      for (const other of all) expect((await servesEventually(other, "k", body)).etag).toBe(etag);
    }
  });

  it("listeners killed during writes: every instance catches up, none keeps a stale entry", { timeout: 30_000 }, async () => {
    const { pg } = postgres;
    const all = await instances(await postgres.database(), 3);
    const ids = Array.from({ length: 10 }, (_, i) => `id${i}`);
    for (const id of ids) await write(all[0]!, id, `{"round":0}`);
    for (const o of all) for (const id of ids) await servesEventually(o, id, `{"round":0}`);
    let killed = 0;
    for (let round = 1; round <= 5; round++) {
      const writes = Promise.all(ids.map((id, i) => write(all[i % 3]!, id, `{"round":${round}}`)));
      killed += await pg.terminate("application_name = 'slim-edge-origin-feed'");
      await writes;
    }
    expect(killed).toBeGreaterThan(0);
    for (const o of all) for (const id of ids) await servesEventually(o, id, `{"round":5}`);
    for (const o of all) {
      expect(await metric(o, "origin_feed_listens_total")).toBeGreaterThan(1);
      // Caught up exactly: no reset, and the feed trusted (so no entry was merely re-read for its age).
      expect(await metric(o, "origin_feed_resets_total")).toBe(0);
      expect(await metric(o, "origin_feed_healthy")).toBe(1);
    }
  });

  it("survives a PostgreSQL restart: changes made after it reach every instance", async () => {
    const { pg } = postgres;
    const all = await instances(await postgres.database(), 2);
    await write(all[0]!, "r", '{"before":true}');
    for (const o of all) await servesEventually(o, "r", '{"before":true}');
    await pg.restart();
    // The first writes after the restart may meet connections the restart closed: retried until one lands.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const res = await fetch(`${all[1]!.url}/items/r`, { method: "PUT", headers: { "content-type": "application/json" }, body: '{"after":true}' });
      if (res.status === 204) break;
      expect(res.status).toBe(503);
      if (Date.now() > deadline) throw new Error("no write succeeded after the restart");
    }
    for (const o of all) await servesEventually(o, "r", '{"after":true}', 20_000);
  });
});
