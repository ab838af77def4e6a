import fc from "fast-check";
import { connect } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFER, INCOMPLETE, newFastRequest, parseFastRequest, PARSED } from "../../src/origin/http/fast/recogniser.ts";
import { sampleItem } from "../../src/origin/store/sample-items.ts";
import type { ItemStore, StoredItem } from "../../src/origin/store/item-store.ts";
import { SqliteItemStore } from "../../src/origin/store/sqlite-store.ts";
import { randomEpoch } from "../../src/origin/store/etag.ts";
import type { RunningOrigin } from "../../src/origin/start-origin.ts";
import { deferred, etagFor, get, notModified, RawConnection, sendThenFin, start, storeWith, tempDir, withBody } from "./harness.ts";

const TOKEN = "fast-path-token-0123456789";

/** The ETag of `version` as written by this origin's store session (seeded items are version 1). */
function sessionTag(origin: RunningOrigin, version: number): string {
  return etagFor((origin.store as SqliteItemStore).writeEpoch, version);
}

describe("fast path recogniser", () => {
  const parse = (text: string) => {
    const out = newFastRequest();
    return { result: parseFastRequest(Buffer.from(text, "latin1"), 0, out), out };
  };

  it("recognises the edge's request and reads the headers it needs", () => {
    const text =
      'GET /items/a-1_B?x=1 HTTP/1.1\r\nHost: o\r\nX-Origin-Token:  t0k \r\nif-none-match: "1"\r\nIf-None-Match: W/"2"\r\n' +
      "Connection: Keep-Alive\r\nCF-Ray: 1234\r\n\r\nGET";
    const { result, out } = parse(text);
    expect(result).toBe(PARSED);
    expect(out).toMatchObject({ head: false, id: "a-1_B", token: "t0k", ifNoneMatch: '"1", W/"2"', close: false });
    expect(out.end).toBe(text.indexOf("\r\n\r\n") + 4);
  });

  it.each([
    ["HEAD /items/1 HTTP/1.1\r\nHost: o\r\nConnection: close\r\n\r\n", PARSED],
    ["GET /items/1 HTTP/1.1\r\nHost: o\r\n", INCOMPLETE],
    ["GE", INCOMPLETE],
    ["", INCOMPLETE],
    ["PUT /items/1 HTTP/1.1\r\n", DEFER],
    ["GET /items/1 HTTP/1.0\r\nHost: o\r\n\r\n", DEFER],
    ["GET /items/1 HTTP/1.1\r\n\r\n", DEFER], // no Host
    ["GET /items/1 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", DEFER],
    ["GET /items/a.b HTTP/1.1\r\nHost: o\r\n\r\n", DEFER],
    ["GET /items/ HTTP/1.1\r\nHost: o\r\n\r\n", DEFER],
    [`GET /items/${"a".repeat(129)} HTTP/1.1\r\nHost: o\r\n\r\n`, DEFER],
    ["GET /items/1#f HTTP/1.1\r\nHost: o\r\n\r\n", DEFER],
    ["GET /healthz HTTP/1.1\r\nHost: o\r\n\r\n", DEFER],
    ["GET  /items/1 HTTP/1.1\r\nHost: o\r\n\r\n", DEFER],
    ["GET /items/1 HTTP/1.1\r\nHost: o\r\nContent-Length: 0\r\n\r\n", DEFER],
    ["GET /items/1 HTTP/1.1\r\nHost: o\r\nTransfer-Encoding: chunked\r\n\r\n", DEFER],
    ["GET /items/1 HTTP/1.1\r\nHost: o\r\nExpect: 100-continue\r\n\r\n", DEFER],
    ["GET /items/1 HTTP/1.1\r\nHost: o\r\nUpgrade: websocket\r\n\r\n", DEFER],
    ["GET /items/1 HTTP/1.1\r\nHost: o\r\nConnection: close, upgrade\r\n\r\n", DEFER],
    ["GET /items/1 HTTP/1.1\r\nHost: o\r\n folded\r\n\r\n", DEFER],
    ["GET /items/1 HTTP/1.1\r\nHost : o\r\n\r\n", DEFER],
    ["GET /items/1 HTTP/1.1\r\nHost: o\nX: y\r\n\r\n", DEFER],
    ["GET /items/1 HTTP/1.1\r\nHost: o\r\nX: a\0b\r\n\r\n", DEFER],
    [`GET /items/1 HTTP/1.1\r\nHost: o\r\nX: ${"v".repeat(9000)}\r\n\r\n`, DEFER],
    [`GET /items/1 HTTP/1.1\r\nHost: o\r\nX: ${"v".repeat(9000)}`, DEFER],
  ])("%j → %i", (text, expected) => {
    expect(parse(text).result).toBe(expected);
  });
});

/**
 * The answers up to node's own "400 Bad Request + Connection: close" for unparsable input. After a
 * parse error in a pipelined stream, whether node still manages to send that 400 depends on whether
 * the answer before it has finished writing (node's socketOnError), so it differs between runs of the
 * same path; everything before it must match exactly.
 */
function beforeNodeParseError(out: Buffer): string {
  const text = out.toString("latin1");
  const at = text.indexOf("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n");
  return at === -1 ? text : text.slice(0, at);
}

describe("fast path ≡ node:http path", () => {
  // Both instances write with this epoch, so their ETags (and PUT answers) are the same bytes.
  const EPOCH = randomEpoch();
  const tag = (v: number) => etagFor(EPOCH, v);
  const caseName = (s: string) => fc.constantFrom(s, s.toUpperCase(), s[0]!.toUpperCase() + s.slice(1));
  const safeHeader = fc.oneof(
    fc.tuple(caseName("x-origin-token"), fc.constantFrom(TOKEN, `${TOKEN}x`, "nope", "", ` ${TOKEN} `)),
    fc.tuple(caseName("if-none-match"), fc.constantFrom(tag(1), `W/${tag(1)}`, `${tag(2)}, ${tag(1)}`, "*", tag(1).slice(0, -1), "", '"x"', `*, W/${tag(1)}`, '"1"')),
    fc.tuple(caseName("connection"), fc.constantFrom("keep-alive", "Keep-Alive")),
    fc.tuple(fc.constantFrom("cf-ray", "Accept", "X-Forwarded-For", "cdn-loop", "Accept-Encoding"), fc.constantFrom("1", "a b", "", "gzip, br", "\u00e9t\u00e9")),
  );
  const anyHeader = fc.oneof(
    safeHeader,
    fc.tuple(caseName("host"), fc.constantFrom("origin", "a.example:8788", "")),
    fc.tuple(caseName("connection"), fc.constantFrom("close", "upgrade", "close, te")),
    fc.tuple(fc.constantFrom("content-length", "Expect", "Upgrade", "Transfer-Encoding"), fc.constantFrom("1", "0", "100-continue", "chunked", "")),
  );
  const line = (r: { method: string; id: string; query: string; version: string }) =>
    `${r.method} /items/${r.id}${r.query} ${r.version}`;
  const ids = fc.constantFrom("1", "2", "3", "missing", "a.b", "", "x".repeat(129), "A-b_9");

  /** Requests node:http parses without error and answers on a kept-alive connection. */
  const validRequest = fc
    .record({
      method: fc.constantFrom("GET", "GET", "HEAD"),
      id: ids,
      query: fc.constantFrom("", "?a=1", "?x=%20&y"),
      headers: fc.array(safeHeader, { maxLength: 6 }),
      token: fc.boolean(),
      ows: fc.constantFrom("", " ", "\t", "  "),
    })
    .map((r) => {
      const lines = [line({ ...r, version: "HTTP/1.1" }), "Host: origin"];
      if (r.token) lines.push(`x-origin-token: ${TOKEN}`);
      for (const [k, v] of r.headers) lines.push(`${k}:${r.ows}${v}${r.ows}`);
      return `${lines.join("\r\n")}\r\n\r\n`;
    });

  /** Anything: other methods and versions, framing headers, missing Host, then random byte damage. */
  const anyRequest = fc.oneof(
    validRequest,
    fc
      .record({
        method: fc.constantFrom("GET", "HEAD", "PUT", "DELETE", "OPTIONS", "get"),
        id: ids,
        query: fc.constantFrom("", "?a=1", "?#"),
        version: fc.constantFrom("HTTP/1.1", "HTTP/1.0", "HTTP/2.0"),
        headers: fc.array(anyHeader, { maxLength: 6 }),
        token: fc.boolean(),
      })
      // Writes go to ids no read asks for: a damaged write may or may not complete on each server
      // (node waits for a body that never comes), and that must not change what later reads see.
      .map((r) => (r.method === "PUT" || r.method === "DELETE" ? { ...r, id: `w${r.id.length % 3}` } : r))
      .map((r) => {
        const lines = [line(r)];
        if (r.token) lines.push(`x-origin-token: ${TOKEN}`);
        for (const [k, v] of r.headers) lines.push(`${k}: ${v}`);
        return `${lines.join("\r\n")}\r\n\r\n`;
      }),
  );
  const damaged = fc
    .tuple(anyRequest, fc.nat(), fc.constantFrom("", "\r", "\n", " ", ":", "\0", "\u00ff", "\r\n", "x", "\t"), fc.nat({ max: 2 }))
    .map(([r, at, insert, drop]) => {
      const i = at % (r.length + 1);
      return r.slice(0, i) + insert + r.slice(i + drop);
    });

  async function twoOrigins() {
    const env = { SEED_SAMPLE_ITEMS: "3", ORIGIN_TOKEN: TOKEN };
    const open = (extra: Record<string, string>) => {
      const dir = tempDir();
      return start({ ...env, ...extra }, { dir, store: new SqliteItemStore(join(dir, "items.sqlite"), { writeEpoch: EPOCH }) });
    };
    const fast = await open({});
    const slow = await open({ ORIGIN_FAST_PATH: "false" });
    expect(fast.fastPath).toBe(true);
    expect(slow.fastPath).toBe(false);
    // The generated If-None-Match values do match the seeded items (same epoch on both): 304s get compared.
    const conditional = Buffer.from(`GET /items/1 HTTP/1.1\r\nHost: o\r\nx-origin-token: ${TOKEN}\r\nIf-None-Match: ${tag(1)}\r\n\r\n`);
    for (const o of [fast, slow]) expect((await sendThenFin(o.port, conditional)).toString("latin1")).toBe(notModified(tag(1)));
    return { fast, slow };
  }

  it("answers any single request, well-formed or damaged, exactly like node:http", async () => {
    const { fast, slow } = await twoOrigins();
    await fc.assert(
      fc.asyncProperty(fc.oneof(anyRequest, damaged), async (request) => {
        const bytes = Buffer.from(request, "latin1");
        const [a, b] = await Promise.all([sendThenFin(fast.port, bytes), sendThenFin(slow.port, bytes)]);
        expect(beforeNodeParseError(a)).toBe(beforeNodeParseError(b));
      }),
      { numRuns: 400 },
    );
  });

  it("answers pipelined well-formed requests exactly like node:http", async () => {
    const { fast, slow } = await twoOrigins();
    const sentinel = `GET /items/2 HTTP/1.1\r\nHost: o\r\nx-origin-token: ${TOKEN}\r\nConnection: close\r\n\r\n`;
    await fc.assert(
      // What follows the sentinel's Connection: close is never processed, on either path.
      fc.asyncProperty(fc.array(validRequest, { minLength: 1, maxLength: 5 }), fc.option(validRequest), async (requests, after) => {
        const bytes = Buffer.from(requests.join("") + sentinel + (after ?? ""), "latin1");
        const [a, b] = await Promise.all([sendThenFin(fast.port, bytes), sendThenFin(slow.port, bytes)]);
        expect(a.toString("latin1")).toBe(b.toString("latin1"));
      }),
      { numRuns: 200 },
    );
  });

  // A request the fast path does not serve hands the connection to node:http with the bytes already read;
  // node must then answer them, and anything after them, exactly as if it had read them itself: every
  // answer before a malformed request, then node's 400 (see src/origin/http/fast/hand-off.ts).
  const handedOver = fc.constantFrom(
    `GET /items/1 HTTP/1.1\r\nHost: o\r\nx-origin-token: ${TOKEN}\r\nContent-Length: 2\r\n\r\nab`,
    `GET /items/2 HTTP/1.1\r\nHost: o\r\nx-origin-token: ${TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n`,
    `HEAD /items/3 HTTP/1.1\r\nHost: o\r\nx-origin-token: ${TOKEN}\r\nContent-Length: 1\r\n\r\nx`,
    `GET /healthz HTTP/1.1\r\nHost: o\r\nx-origin-token: ${TOKEN}\r\n\r\n`,
    `OPTIONS /items/1 HTTP/1.1\r\nHost: o\r\nx-origin-token: ${TOKEN}\r\n\r\n`,
    "GET /items/a.b HTTP/1.1\r\nHost: o\r\n\r\n",
  );
  // Writes are left out: whether node answers a write before a later parse error depends on when the
  // writer thread commits, on node:http alone as much as behind the fast path.
  const noWrite = (request: string) => !/^(PUT|DELETE) /.test(request);
  const after = fc.array(fc.oneof(validRequest, damaged.filter(noWrite)), { minLength: 1, maxLength: 3 });

  it("answers what follows a hand-off exactly like node:http, pipelined in one packet", async () => {
    const { fast, slow } = await twoOrigins();
    await fc.assert(
      fc.asyncProperty(handedOver, after, fc.boolean(), async (first, rest, warm) => {
        for (const o of [fast, slow]) if (!warm) o.cache.clear();
        const bytes = Buffer.from(first + rest.join(""), "latin1");
        const [a, b] = await Promise.all([sendThenFin(fast.port, bytes), sendThenFin(slow.port, bytes)]);
        expect(a.toString("latin1")).toBe(b.toString("latin1"));
      }),
      { numRuns: 300 },
    );
  });

  it("answers what follows a hand-off exactly like node:http, sent after the first answer", async () => {
    const { fast, slow } = await twoOrigins();
    await fc.assert(
      fc.asyncProperty(handedOver, after, async (first, rest) => {
        const [a, b] = await Promise.all([fast, slow].map((o) => afterFirstAnswer(o.port, first, rest.join(""))));
        expect(a!.toString("latin1")).toBe(b!.toString("latin1"));
      }),
      { numRuns: 100 },
    );
  });
});

/** Sends `first`, waits for the first bytes of its answer, then sends `rest` and FIN; everything the server wrote. */
function afterFirstAnswer(port: number, first: string, rest: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: "127.0.0.1", allowHalfOpen: true });
    const chunks: Buffer[] = [];
    socket.on("data", (d: Buffer) => {
      if (chunks.push(d) === 1) socket.end(Buffer.from(rest, "latin1"));
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(Buffer.concat(chunks)));
    socket.on("connect", () => socket.write(Buffer.from(first, "latin1")));
  });
}

describe("fast path connections", () => {
  it("hands a connection to node:http at the first request it does not serve, mid-pipeline", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "2" });
    const [t1, t2] = [sessionTag(origin, 1), sessionTag(origin, 2)];
    const c = await RawConnection.open(origin.port);
    const replies = [c.next(), c.next(), c.next(), c.next()];
    c.socket.write(
      Buffer.concat([
        Buffer.from(get("/items/1", { "If-None-Match": t1 })),
        withBody("PUT", "/items/1", '{"v":2}'),
        Buffer.from(get("/items/1")),
        Buffer.from(get("/items/2", { "If-None-Match": t1 })),
      ]),
    );
    const [a, b, d, e] = await Promise.all(replies);
    expect(a!.text).toBe(notModified(t1));
    expect(b!.text).toBe(`HTTP/1.1 204 No Content\r\nETag: ${t2}\r\n\r\n`);
    expect(d!.text).toBe(`HTTP/1.1 200 OK\r\nETag: ${t2}\r\nContent-Length: 7\r\n\r\n{"v":2}`);
    expect(e!.text).toBe(notModified(t1));
    const handOffs = await origin.metrics.registry.getSingleMetric("origin_fast_path_handoffs_total")!.get();
    expect(handOffs.values[0]!.value).toBe(1);
  });

  it("reassembles a request that arrives one byte at a time", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "1" });
    const t1 = sessionTag(origin, 1);
    const c = await RawConnection.open(origin.port);
    const reply = c.next();
    for (const byte of Buffer.from(get("/items/1", { "If-None-Match": t1 }))) {
      await new Promise<void>((resolve) => c.socket.write(Buffer.of(byte), () => resolve()));
    }
    expect((await reply).text).toBe(notModified(t1));
    expect((await c.send(get("/items/1"))).body.toString()).toBe(sampleItem(1));
  });

  it("keeps pipelined answers in order when one waits on the store", async () => {
    const dir = tempDir();
    const inner = new SqliteItemStore(join(dir, "items.sqlite"));
    await inner.seedIfEmpty([
      ["slow", Buffer.from('"slow"')],
      ["fast", Buffer.from('"fast"')],
    ]);
    const gate = deferred();
    const started = deferred();
    const store: ItemStore = storeWith(inner, {
      async get(id: string): Promise<StoredItem | undefined> {
        const row = await inner.get(id);
        if (id === "slow") {
          started.resolve();
          await gate.promise;
        }
        return row;
      },
    });
    const origin = await start({}, { dir, store });
    const warm = await RawConnection.open(origin.port);
    await warm.send(get("/items/fast")); // cached now
    const c = await RawConnection.open(origin.port);
    const first = c.next();
    const second = c.next();
    c.socket.write(get("/items/slow") + get("/items/fast"));
    await started.promise;
    gate.resolve();
    expect((await first).body.toString()).toBe('"slow"');
    expect((await second).body.toString()).toBe('"fast"');
  });

  it("stops reading while the client does not read, and answers everything once it does", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "1" });
    const c = await RawConnection.open(origin.port);
    const n = 3000;
    c.socket.pause();
    const replies = Array.from({ length: n }, () => c.next());
    c.socket.write(get("/items/1").repeat(n));
    await new Promise<void>((resolve) => c.socket.write("", () => resolve()));
    c.socket.resume();
    const all = await Promise.all(replies);
    expect(all.every((r) => r.body.toString() === sampleItem(1))).toBe(true);
  });

  it("answers 408 and closes when a request head never completes", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "1" }, { headersTimeoutMs: 20 });
    const c = await RawConnection.open(origin.port);
    c.socket.write("GET /items/1 HTTP/1.1\r\nHo");
    const r = await c.next();
    expect(r.text).toBe("HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    await c.closed;
  });

  it("a head cut short by the client's FIN gets node's 400", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "1" });
    const out = await sendThenFin(origin.port, Buffer.from("GET /items/1 HTTP/1.1\r\nHost: o\r\n"));
    expect(out.toString()).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
  });

  it("shutdown closes idle fast-path connections", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "1" });
    const c = await RawConnection.open(origin.port);
    await c.send(get("/items/1"));
    await origin.close();
    await c.closed;
  });
});
