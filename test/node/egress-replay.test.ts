// The replay end to end in-process, with a fake edge in place of wrangler: client → fake edge → relay →
// seed origin. Checks that origin exchanges are charged to the edge request that caused them (by item id,
// as in the "after" system), that requests answered at the edge are charged nothing, that clients
// revalidate with the ETag they got, that writes land, and that socket and message counts agree.
import { createServer, request as httpRequest, type Agent, Agent as HttpAgent } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { totalOf } from "../../bench/egress/http-stream.ts";
import { ByteRelay } from "../../bench/egress/relay.ts";
import { Replayer, type RequestRecord } from "../../bench/egress/replay.ts";
import { startSeedSystem } from "../../bench/egress/seed-system.ts";
import type { EdgeRequest, TrafficEvent } from "../../bench/egress/traffic.ts";

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

/** A stand-in edge: answers OPTIONS and even ids itself, forwards odd ids (with If-None-Match) to `originPort`. */
async function fakeEdge(originPort: number, agent: Agent): Promise<number> {
  const server = createServer((req, res) => {
    const id = /^\/items\/(\d+)$/.exec(req.url ?? "")?.[1];
    if (req.method === "OPTIONS" || id === undefined || Number(id) % 2 === 0) {
      res.writeHead(req.method === "OPTIONS" ? 204 : 200, { "Content-Length": "0" });
      res.end();
      return;
    }
    const headers: Record<string, string> = {};
    if (req.headers["if-none-match"]) headers["if-none-match"] = req.headers["if-none-match"];
    const upstream = httpRequest({ host: "127.0.0.1", port: originPort, path: req.url, headers, agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  closers.push(() => new Promise((r) => (server.closeAllConnections(), server.close(r))));
  return (server.address() as AddressInfo).port;
}

function read(id: string, client: string, revalidate = false): EdgeRequest {
  return {
    kind: "request",
    method: "GET",
    path: `/items/${id}`,
    id,
    class: revalidate ? "revalidate" : "read",
    client,
    ifNoneMatch: revalidate ? { prev: true } : undefined,
    headers: [["Origin", "https://app.example.com"]],
    warmup: false,
  };
}

describe("replay through a relay (item-id attribution)", () => {
  for (const overlap of [false, true]) {
    it(`charges origin bytes to the edge request that caused them${overlap ? " (overlapping reads)" : ""}`, async () => {
      const seed = await startSeedSystem([
        ["1", '{"id":"1","name":"one"}'],
        ["2", '{"id":"2"}'],
        ["3", '{"id":"3","name":"three"}'],
      ]);
      closers.push(() => seed.close());
      let replayer: Replayer | undefined;
      const relay = new ByteRelay<RequestRecord>({
        upstreamPort: seed.port,
        attribute: (head, connection) => replayer!.attribute(head, connection) as RequestRecord,
        onResponse: (token, response) => replayer!.onOriginResponse(token, response),
      });
      await relay.listen();
      closers.push(() => relay.close());
      const agent = new HttpAgent({ keepAlive: true, maxSockets: 4 });
      closers.push(async () => agent.destroy());
      const edgePort = await fakeEdge(relay.port, agent);
      const writes: string[] = [];
      replayer = new Replayer({
        port: edgePort,
        concurrency: 4,
        mode: "item-id",
        overlap,
        write: async (e) => {
          writes.push(`${e.method} ${e.id}`);
        },
      });

      const events: TrafficEvent[] = [];
      for (let round = 0; round < 20; round++) {
        events.push(read("1", `c${round % 3}`, round >= 3), read("2", "c0"), read("3", "c1", round >= 2));
        if (round === 10) events.push({ kind: "write", method: "PUT", id: "1", body: "{}", warmup: false });
        events.push({ ...read("3", "c2"), method: "OPTIONS", class: "preflight", headers: [["Origin", "https://app.example.com"], ["Access-Control-Request-Method", "GET"]] });
      }
      const records = await replayer.run(events);
      expect(await relay.whenIdle(2000)).toBe(true);
      replayer.close();

      expect(records).toHaveLength(80);
      expect(records.every((r) => r.error === undefined)).toBe(true);
      expect(writes).toEqual(["PUT 1"]);
      const byId = (id: string, method = "GET") => records.filter((r) => r.event.id === id && r.event.method === method);
      // Even ids and preflights are answered by the edge: nothing charged.
      for (const r of [...byId("2"), ...byId("3", "OPTIONS")]) expect(r.originExchanges).toBe(0);
      // Odd ids cost exactly one origin exchange each.
      for (const r of [...byId("1"), ...byId("3")]) expect(r.originExchanges).toBe(1);
      // Clients revalidated with the ETag they were given: 304s, each with the 314 CORS bytes of the seed.
      const revalidations = byId("1").filter((r) => r.sentIfNoneMatch);
      expect(revalidations.length).toBeGreaterThan(10);
      expect(revalidations.every((r) => r.originStatuses[0] === 304)).toBe(true);
      expect(revalidations.every((r) => r.originCors === 314)).toBe(true);
      // Nothing unattributed; the socket count equals the sum over records.
      expect(replayer.unattributed.exchanges).toBe(0);
      const charged = records.reduce((n, r) => n + totalOf(r.origin), 0);
      expect(relay.snapshot().upstreamBytes).toBe(charged);
      expect(relay.snapshot().responseMessageBytes).toBe(charged);
      expect(replayer.edgeSocketBytes).toBe(records.reduce((n, r) => n + totalOf(r.edge), 0));
    });
  }

  it("keeps staleness probes apart: they take their turn per id, and their origin and edge bytes are their own", async () => {
    const seed = await startSeedSystem([
      ["1", '{"id":"1","name":"one"}'],
      ["3", '{"id":"3"}'],
    ]);
    closers.push(() => seed.close());
    let replayer: Replayer | undefined;
    const relay = new ByteRelay<RequestRecord>({
      upstreamPort: seed.port,
      attribute: (head, connection) => replayer!.attribute(head, connection) as RequestRecord,
      onResponse: (token, response, request) => replayer!.onOriginResponse(token, response, request),
    });
    await relay.listen();
    closers.push(() => relay.close());
    const agent = new HttpAgent({ keepAlive: true, maxSockets: 4 });
    closers.push(async () => agent.destroy());
    const edgePort = await fakeEdge(relay.port, agent);
    replayer = new Replayer({ port: edgePort, concurrency: 4, mode: "item-id", write: async () => {} });

    const events: TrafficEvent[] = [];
    for (let i = 0; i < 30; i++) events.push(read("1", `c${i}`), read("3", `c${i}`), read("2", `c${i}`));
    const [records, answers] = await Promise.all([replayer.run(events), Promise.all(Array.from({ length: 10 }, () => replayer!.probe("1")))]);
    expect(await relay.whenIdle(2000)).toBe(true);
    replayer.close();

    expect(answers.every((a) => a.status === 200 && a.etag !== undefined && a.at > 0 && a.error === undefined)).toBe(true);
    expect(replayer.probeRecords).toHaveLength(10);
    // Each read and each probe of an odd id cost exactly one origin exchange, charged to itself.
    for (const r of [...records.filter((r) => r.event.id !== "2"), ...replayer.probeRecords]) expect(r.originExchanges).toBe(1);
    expect(replayer.probeRecords.every((r) => r.probe === true)).toBe(true);
    expect(records.some((r) => r.probe === true)).toBe(false);
    const sum = (rs: RequestRecord[], pick: (r: RequestRecord) => number) => rs.reduce((n, r) => n + pick(r), 0);
    expect(relay.snapshot().upstreamBytes).toBe(sum(records, (r) => totalOf(r.origin)) + sum(replayer.probeRecords, (r) => totalOf(r.origin)));
    expect(replayer.edgeSocketBytes).toBe(sum(records, (r) => totalOf(r.edge)));
    expect(replayer.probeEdgeSocketBytes).toBe(sum(replayer.probeRecords, (r) => totalOf(r.edge)));
    // The Cache-Tag cost counts the traffic's origin 200s (60 reads of ids 1 and 3), not the probes'.
    expect(replayer.originItemAnswers).toEqual({ ok: { count: 60, idChars: 60 }, notFound: { count: 0, idChars: 0 } });
  });
});
