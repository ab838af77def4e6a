import { connect } from "node:net";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { SqliteItemStore } from "../../src/origin/store/sqlite-store.ts";
import { StoreUnavailableError } from "../../src/origin/store/item-store.ts";
import { epochOf, etagFor, get, RawConnection, sendThenFin, start, storeWith, tempDir, withBody } from "./harness.ts";

describe("writes", () => {
  it("read-your-writes: a PUT replaces what this instance serves at once, ETag moves on", async () => {
    const origin = await start();
    const c = await RawConnection.open(origin.port);
    const v1 = (await c.send(withBody("PUT", "/items/a", '{"v":1}'))).header("etag")!;
    const e = epochOf(v1);
    expect(v1).toBe(etagFor(e, 1));
    const first = await c.send(get("/items/a")); // now cached
    expect(first.body.toString()).toBe('{"v":1}');
    expect(first.header("etag")).toBe(v1);

    const put = await c.send(withBody("PUT", "/items/a", '{"v":2}'));
    expect(put.text).toBe(`HTTP/1.1 204 No Content\r\nETag: ${etagFor(e, 2)}\r\n\r\n`);
    const second = await c.send(get("/items/a", { "If-None-Match": v1 }));
    expect(second.status).toBe(200);
    expect(second.header("etag")).toBe(etagFor(e, 2));
    expect(second.body.toString()).toBe('{"v":2}');
    expect((await c.send(get("/items/a", { "If-None-Match": etagFor(e, 2) }))).status).toBe(304);
  });

  it("DELETE answers 204, the next read is 404, and a re-created item never reuses an old ETag", async () => {
    const origin = await start();
    const c = await RawConnection.open(origin.port);
    const v1 = (await c.send(withBody("PUT", "/items/d", '{"v":1}'))).header("etag")!;
    await c.send(get("/items/d")); // cached
    expect((await c.send(get("/items/d", {}, "DELETE"))).text).toBe("HTTP/1.1 204 No Content\r\n\r\n");
    expect((await c.send(get("/items/d"))).status).toBe(404);
    expect((await c.send(get("/items/d", { "If-None-Match": v1 }))).status).toBe(404);
    // Idempotent.
    expect((await c.send(get("/items/d", {}, "DELETE"))).status).toBe(204);
    const again = await c.send(withBody("PUT", "/items/d", '{"v":"new"}'));
    expect(again.header("etag")).toBe(etagFor(epochOf(v1), 3)); // 1 = first PUT, 2 = the delete, 3 = this PUT
    const read = await c.send(get("/items/d", { "If-None-Match": v1 }));
    expect(read.status).toBe(200);
    expect(read.body.toString()).toBe('{"v":"new"}');
  });

  it("stores JSON minified with every token kept as written", async () => {
    const origin = await start();
    const c = await RawConnection.open(origin.port);
    const body = '{\n  "big": 12345678901234567890,\n  "f": 1.50,\n  "e": 1E3,\n  "s": "a \\" b\\\\",\n  "u": "é ✓"\n}\n';
    await c.send(withBody("PUT", "/items/m", body, { "Content-Type": "application/json; charset=utf-8" }));
    const r = await c.send(get("/items/m"));
    expect(r.body.toString()).toBe('{"big":12345678901234567890,"f":1.50,"e":1E3,"s":"a \\" b\\\\","u":"é ✓"}');
    expect(Number(r.header("content-length"))).toBe(r.body.byteLength);
  });

  it("a write is committed to the database file before the 204, and survives a restart", async () => {
    const dir = tempDir();
    const path = join(dir, "items.sqlite");
    const first = await start({}, { dir });
    const put = await (await RawConnection.open(first.port)).send(withBody("PUT", "/items/keep", '{"k": true}'));
    expect(put.status).toBe(204);
    const etag = put.header("etag")!;

    // Another connection to the same file sees the row as soon as the 204 is out.
    const other = new DatabaseSync(path, { readOnly: true });
    const row = other.prepare("SELECT version, epoch, body FROM items WHERE id = ?").get("keep") as {
      version: number;
      epoch: string;
      body: Uint8Array;
    };
    expect(row.version).toBe(1);
    expect(etagFor(row.epoch, row.version)).toBe(etag);
    expect(Buffer.from(row.body).toString()).toBe('{"k":true}');
    expect((other.prepare("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode).toBe("wal");
    other.close();

    await first.close();
    const second = await start({}, { dir });
    const read = await (await RawConnection.open(second.port)).send(get("/items/keep"));
    // Same ETag after the restart: the row keeps the epoch it was written with.
    expect(read.text).toBe(`HTTP/1.1 200 OK\r\nETag: ${etag}\r\nContent-Length: 10\r\n\r\n{"k":true}`);
  });

  it("concurrent writes from many connections all commit, each with its own version", async () => {
    const origin = await start();
    const conns = await Promise.all(Array.from({ length: 30 }, () => RawConnection.open(origin.port)));
    const same = await Promise.all(conns.map((c, i) => c.send(withBody("PUT", "/items/shared", `{"writer":${i}}`))));
    const versions = same.map((r) => r.header("etag")!).sort();
    expect(new Set(versions).size).toBe(30); // 30 distinct versions: no lost update
    const e = epochOf(versions[0]);
    const distinct = await Promise.all(conns.map((c, i) => c.send(withBody("PUT", `/items/own-${i}`, `{"i":${i}}`))));
    expect(distinct.every((r) => r.status === 204)).toBe(true);
    expect(await origin.store.count()).toBe(31);
    const last = await conns[0]!.send(get("/items/shared"));
    expect(last.header("etag")).toBe(etagFor(e, 30));
    expect(last.header("etag")).toBe(`"${e}U"`); // version 30
    for (let i = 0; i < 30; i += 7) expect((await conns[1]!.send(get(`/items/own-${i}`))).body.toString()).toBe(`{"i":${i}}`);
  });

  it("seeds sample items only into an empty store", async () => {
    const dir = tempDir();
    const first = await start({ SEED_SAMPLE_ITEMS: "5" }, { dir });
    expect(first.seeded).toBe(5);
    await (await RawConnection.open(first.port)).send(get("/items/1", {}, "DELETE"));
    await first.close();
    const second = await start({ SEED_SAMPLE_ITEMS: "50" }, { dir });
    expect(second.seeded).toBe(0);
    expect(await second.store.count()).toBe(4);
  });
});

describe("bad input gets a clear error and changes nothing", () => {
  const cases: { name: string; request: () => Buffer; status: number; error: RegExp; closes?: boolean }[] = [
    { name: "invalid JSON", request: () => withBody("PUT", "/items/x", '{"v": 2'), status: 400, error: /not valid JSON/ },
    { name: "empty body", request: () => withBody("PUT", "/items/x", ""), status: 400, error: /not valid JSON/ },
    {
      name: "invalid UTF-8",
      request: () => withBody("PUT", "/items/x", Buffer.from([0x22, 0xff, 0x22])),
      status: 400,
      error: /UTF-8/,
    },
    {
      name: "wrong content type",
      request: () => withBody("PUT", "/items/x", '{"v":2}', { "Content-Type": "text/plain" }),
      status: 415,
      error: /application\/json/,
    },
    { name: "no content type", request: () => withBody("PUT", "/items/x", '{"v":2}', {}), status: 415, error: /application\/json/ },
    {
      name: "a charset other than UTF-8",
      request: () => withBody("PUT", "/items/x", '{"v":2}', { "Content-Type": "application/json; charset=latin1" }),
      status: 415,
      error: /UTF-8/,
    },
    {
      name: "body over MAX_ITEM_BYTES (declared length)",
      request: () => withBody("PUT", "/items/x", `"${"a".repeat(1024)}"`),
      status: 413,
      error: /MAX_ITEM_BYTES \(1024\)/,
    },
    {
      name: "body over MAX_ITEM_BYTES (chunked)",
      request: () =>
        Buffer.from(
          "PUT /items/x HTTP/1.1\r\nHost: o\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
            `402\r\n"${"a".repeat(1024)}"\r\n0\r\n\r\n`,
        ),
      status: 413,
      error: /MAX_ITEM_BYTES/,
      closes: true,
    },
    { name: "bad id", request: () => withBody("PUT", "/items/x%2Fy", '{"v":2}'), status: 400, error: /bad id/ },
    { name: "id too long", request: () => withBody("PUT", `/items/${"a".repeat(129)}`, '{"v":2}'), status: 400, error: /bad id/ },
  ];

  for (const t of cases) {
    it(t.name, async () => {
      const announced: string[] = [];
      const origin = await start({ MAX_ITEM_BYTES: "1KiB" }, { onCommitted: (id) => announced.push(id) });
      const c = await RawConnection.open(origin.port);
      await c.send(withBody("PUT", "/items/x", '{"v":1}'));
      const before = await c.send(get("/items/x"));
      expect(announced).toEqual(["x"]);

      const r = await c.send(t.request());
      expect(r.status).toBe(t.status);
      expect(r.header("content-type")).toBe("application/json");
      expect(JSON.parse(r.body.toString()).error).toMatch(t.error);

      const check = t.closes ? await RawConnection.open(origin.port) : c; // otherwise the same connection still works
      const after = await check.send(get("/items/x"));
      expect(after.raw.equals(before.raw)).toBe(true);
      expect(await origin.store.count()).toBe(1);
      const stored = await origin.store.get("x");
      expect(stored?.etag).toBe(before.header("etag")); // still version 1
      expect(Buffer.from(stored!.body).toString()).toBe('{"v":1}');
      expect(announced).toEqual(["x"]); // nothing told the other processes, the feed or the purger of a change
    });
  }

  it("a client that goes away in the middle of a body changes nothing and announces nothing", async () => {
    const announced: string[] = [];
    const origin = await start({}, { onCommitted: (id) => announced.push(id) });
    const socket = connect({ port: origin.port, host: "127.0.0.1" });
    await new Promise((resolve) => socket.once("connect", resolve));
    const head = "PUT /items/cut HTTP/1.1\r\nHost: o\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n";
    await new Promise((resolve) => socket.write(`${head}{"v":`, resolve));
    socket.destroy(); // gone, both ways, 15 bytes short
    // A write on a new connection afterwards: the server went on, and the cut one left no trace.
    const r = await (await RawConnection.open(origin.port)).send(withBody("PUT", "/items/after", '{"v":1}'));
    expect(r.status).toBe(204);
    expect(await origin.store.get("cut")).toBeUndefined();
    expect(announced).toEqual(["after"]);
  });

  it("a body of exactly MAX_ITEM_BYTES is accepted", async () => {
    const origin = await start({ MAX_ITEM_BYTES: "1KiB" });
    const body = `"${"a".repeat(1022)}"`;
    const r = await (await RawConnection.open(origin.port)).send(withBody("PUT", "/items/x", body));
    expect(r.status).toBe(204);
  });

  it("a huge declared body is refused and the connection closed", async () => {
    const origin = await start({ MAX_ITEM_BYTES: "1KiB" });
    const c = await RawConnection.open(origin.port);
    const r = await c.send(
      "PUT /items/x HTTP/1.1\r\nHost: o\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n{",
    );
    expect(r.status).toBe(413);
    expect(r.header("connection")).toBe("close");
    await c.closed;
    expect(await origin.store.count()).toBe(0);
  });
});

describe("a write whose outcome is unknown", () => {
  it("answers 503 and tells the other processes the item may have changed (a needless invalidation is cheap)", async () => {
    const dir = tempDir();
    const inner = new SqliteItemStore(join(dir, "items.sqlite"));
    await inner.seedIfEmpty([["a", Buffer.from('{"v":1}')]]);
    const store = storeWith(inner, {
      put: () => Promise.reject(new StoreUnavailableError("the store did not answer within 1000 ms (it may have committed)")),
      delete: () => Promise.reject(new StoreUnavailableError("the store did not answer within 1000 ms (it may have committed)")),
    });
    const told: string[] = [];
    const origin = await start({}, { dir, store, onCommitted: (id) => told.push(id) });
    const c = await RawConnection.open(origin.port);
    expect((await c.send(get("/items/a"))).body.toString()).toBe('{"v":1}'); // cached
    expect((await c.send(withBody("PUT", "/items/a", '{"v":2}'))).status).toBe(503);
    expect((await c.send(get("/items/a", {}, "DELETE"))).status).toBe(503);
    expect(told).toEqual(["a", "a"]);
    // Not served from the cache any more: the next read asks the store, which holds what really committed.
    const reads = origin.loader.storeReads;
    expect((await c.send(get("/items/a"))).body.toString()).toBe('{"v":1}');
    expect(origin.loader.storeReads).toBe(reads + 1);
  });
});

describe("a client that half-closes after its request", () => {
  it.each([["fast path", "true"], ["node:http only", "false"]])("still gets its answer, then the close (%s)", async (_, fastPath) => {
    const origin = await start({ ORIGIN_FAST_PATH: fastPath });
    const put = (await sendThenFin(origin.port, withBody("PUT", "/items/h", '{"v":1}'))).toString("latin1");
    expect(put).toMatch(/^HTTP\/1\.1 204 No Content\r\n/);
    const tag = /ETag: ("[^"]+")/.exec(put)![1]!;
    origin.cache.clear(); // the read is a miss: its answer waits on the store, like the write's
    expect((await sendThenFin(origin.port, Buffer.from(get("/items/h")))).toString("latin1")).toBe(`HTTP/1.1 200 OK\r\nETag: ${tag}\r\nContent-Length: 7\r\n\r\n{"v":1}`);
    expect((await sendThenFin(origin.port, Buffer.from(get("/items/h", {}, "DELETE")))).toString("latin1")).toMatch(/^HTTP\/1\.1 204 No Content\r\n/);
    expect(await origin.store.get("h")).toBeUndefined();
    // Pipelined, then FIN: every answer, in order, then the close.
    const pipelined = Buffer.concat([Buffer.from(get("/items/h")), withBody("PUT", "/items/h", '{"v":2}'), Buffer.from(get("/items/h", {}, "HEAD"))]);
    const answers = (await sendThenFin(origin.port, pipelined)).toString("latin1");
    expect(answers.match(/HTTP\/1\.1 \d{3}/g)).toEqual(["HTTP/1.1 404", "HTTP/1.1 204", "HTTP/1.1 200"]);
  });
});

describe("a request that says Connection: close", () => {
  it.each([["fast path", "true"], ["node:http only", "false"]])("is answered, and nothing the client sends after it is processed (%s)", async (_, fastPath) => {
    const origin = await start({ ORIGIN_FAST_PATH: fastPath, SEED_SAMPLE_ITEMS: "1" });
    const closing = withBody("PUT", "/items/c", '{"v":1}', { "Content-Type": "application/json", Connection: "close" });
    const after = withBody("PUT", "/items/after", '{"v":1}');
    const answers = (await sendThenFin(origin.port, Buffer.concat([Buffer.from(get("/items/1")), closing, after]))).toString("latin1");
    expect(answers.match(/HTTP\/1\.1 \d{3} [^\r]*/g)).toEqual(["HTTP/1.1 200 OK", "HTTP/1.1 204 No Content"]);
    expect(await origin.store.get("c")).toBeDefined();
    expect(await origin.store.get("after")).toBeUndefined();
  });

  it.each([["fast path", "true"], ["node:http only", "false"]])("a malformed request still gets node's own answer and the close (%s)", async (_, fastPath) => {
    const origin = await start({ ORIGIN_FAST_PATH: fastPath });
    const answer = async (request: string) => (await sendThenFin(origin.port, Buffer.from(request))).toString("latin1");
    expect(await answer("GET /items/1 HTTP/1.1\r\nHost: a\r\nBad Header\r\n\r\n")).toBe("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
    expect(await answer(`GET /items/1 HTTP/1.1\r\nHost: a\r\nX-Big: ${"x".repeat(20_000)}\r\n\r\n`)).toBe(
      "HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n",
    );
  });
});

/** Writes `bytes` on a new connection (no half-close) and resolves with everything read once the origin closes it. */
function untilClosed(port: number, bytes: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: "127.0.0.1" });
    const chunks: Buffer[] = [];
    socket.on("data", (d: Buffer) => chunks.push(d));
    socket.on("error", reject);
    socket.on("close", () => resolve(Buffer.concat(chunks).toString("latin1")));
    socket.on("connect", () => socket.write(bytes));
  });
}
const statuses = (answers: string) => answers.match(/HTTP\/1\.1 \d{3} [^\r]*/g);

describe("CONNECT", () => {
  it.each([["fast path", "true"], ["node:http only", "false"]])("is answered 501 and the connection closed, on either port (%s)", async (_, fastPath) => {
    const origin = await start({ ORIGIN_FAST_PATH: fastPath });
    for (const port of [origin.port, Number(new URL(origin.metricsUrl!).port)]) {
      for (const target of ["example.com:443", "/items/1"]) {
        const answer = (await sendThenFin(port, Buffer.from(`CONNECT ${target} HTTP/1.1\r\nHost: example.com:443\r\n\r\n`))).toString("latin1");
        expect(answer).toBe("HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      }
    }
    // A client that reads the 501 but keeps its side open does not keep the connection: what it sends next
    // meets a closed socket (node's timeouts no longer watch one handed over for CONNECT).
    const open = connect({ port: origin.port, host: "127.0.0.1", allowHalfOpen: true });
    let reply = "";
    open.on("data", (d: Buffer) => (reply += d.toString("latin1")));
    let failed: string | undefined;
    open.on("error", (e: NodeJS.ErrnoException) => (failed = e.code));
    open.write("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
    await new Promise<void>((resolve) => open.once("end", resolve)); // the 501, then the origin's FIN
    expect(reply).toMatch(/^HTTP\/1\.1 501 /);
    // The first write draws the closed socket's reset, a later one reports it.
    for (let i = 0; i < 50 && failed === undefined; i++) {
      open.write("more bytes\r\n");
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(failed).toMatch(/ECONNRESET|EPIPE/);
    open.destroy();
    // Pipelined behind a write still committing: the write's 204 first.
    const connectAfter = Buffer.concat([withBody("PUT", "/items/k", '{"v":1}'), Buffer.from("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")]);
    expect(statuses(await untilClosed(origin.port, connectAfter))).toEqual(["HTTP/1.1 204 No Content", "HTTP/1.1 501 Not Implemented"]);
    expect(await origin.store.get("k")).toBeDefined();
  });
});

describe("a malformed request pipelined behind others", () => {
  it.each([["fast path", "true"], ["node:http only", "false"]])("is answered after them, in order: a committed write's 204 is never replaced by its 400 (%s)", async (_, fastPath) => {
    const origin = await start({ ORIGIN_FAST_PATH: fastPath, SEED_SAMPLE_ITEMS: "1" });
    const junk = Buffer.from("BAD\r\n\r\n");
    const put = await untilClosed(origin.port, Buffer.concat([withBody("PUT", "/items/p", '{"v":1}'), junk]));
    expect(statuses(put)).toEqual(["HTTP/1.1 204 No Content", "HTTP/1.1 400 Bad Request"]);
    expect(put.endsWith("\r\n\r\nHTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")).toBe(true);
    expect(await origin.store.get("p")).toBeDefined();
    // Two writes and a read node answers (If-Match hands it over), then the junk.
    const del = Buffer.from("DELETE /items/p HTTP/1.1\r\nHost: origin\r\n\r\n");
    const read = Buffer.from("GET /items/1 HTTP/1.1\r\nHost: origin\r\nIf-Match: *\r\n\r\n");
    const three = await untilClosed(origin.port, Buffer.concat([withBody("PUT", "/items/q", '{"v":2}'), del, read, junk]));
    expect(statuses(three)).toEqual(["HTTP/1.1 204 No Content", "HTTP/1.1 204 No Content", "HTTP/1.1 200 OK", "HTTP/1.1 400 Bad Request"]);
    expect(await origin.store.get("p")).toBeUndefined();
  });
});

describe("Expect: 100-continue", () => {
  /** Sends a PUT's head alone (the client waits before sending the body) and resolves with the first answer's head. */
  function headAlone(port: number, path: string, headers: Record<string, string>, length: number, method = "PUT") {
    const socket = connect({ port, host: "127.0.0.1" });
    let received = "";
    const waiters: (() => void)[] = [];
    socket.on("data", (d: Buffer) => {
      received += d.toString("latin1");
      for (const wake of waiters.splice(0)) wake();
    });
    const until = async (done: () => boolean) => {
      while (!done()) await new Promise<void>((resolve) => waiters.push(resolve));
    };
    const lines = Object.entries({ Host: "origin", Expect: "100-continue", "Content-Length": String(length), ...headers }).map(([k, v]) => `${k}: ${v}\r\n`);
    socket.write(`${method} ${path} HTTP/1.1\r\n${lines.join("")}\r\n`);
    return {
      socket,
      received: () => received,
      async firstHead(): Promise<string> {
        await until(() => received.includes("\r\n\r\n"));
        return received.slice(0, received.indexOf("\r\n\r\n") + 4);
      },
      until,
    };
  }

  it("refusals decided on the head come without a 100, so the client never sends the body", async () => {
    const origin = await start({ ORIGIN_TOKEN: TOKEN_FOR_CONTINUE, MAX_ITEM_BYTES: "1024" });
    const json = { "Content-Type": "application/json", "x-origin-token": TOKEN_FOR_CONTINUE };
    const cases: [string, Record<string, string>, number, string, string?][] = [
      ["/items/x", { ...json, "x-origin-token": "wrong" }, 10, "HTTP/1.1 401 "],
      ["/items/x", { ...json, "Content-Type": "text/plain" }, 10, "HTTP/1.1 415 "],
      ["/items/x", json, 2048, "HTTP/1.1 413 "],
      ["/items/a%20b", json, 10, "HTTP/1.1 400 "],
      // A second Host line (the first is headAlone's): refused before the route is looked at.
      ["/items/x", { ...json, host: "elsewhere" }, 10, "HTTP/1.1 400 "],
      ["/items/x", json, 10, "HTTP/1.1 405 ", "PATCH"],
    ];
    for (const [path, headers, length, status, method] of cases) {
      const c = headAlone(origin.port, path, headers, length, method);
      // The connection closes after it (the body may or may not follow): said, so the client knows.
      expect(await c.firstHead()).toMatch(new RegExp(`^${status}[^]*\r\nConnection: close\r\n`));
      c.socket.destroy();
    }
    expect(await origin.store.count()).toBe(0);
  });

  it("a write to a table the origin does not own is refused 405 without a 100", async () => {
    const inner = new SqliteItemStore(join(tempDir(), "items.sqlite"));
    const origin = await start({ ORIGIN_TOKEN: TOKEN_FOR_CONTINUE }, { store: storeWith(inner, { writable: false }) });
    const c = headAlone(origin.port, "/items/x", { "Content-Type": "application/json", "x-origin-token": TOKEN_FOR_CONTINUE }, 7);
    expect(await c.firstHead()).toMatch(/^HTTP\/1\.1 405 .*\r\nAllow: GET, HEAD\r\n/s);
    c.socket.destroy();
    expect(await inner.count()).toBe(0);
  });

  it.each([["fast path", "true"], ["node:http only", "false"]])("a request without a body has nothing to wait for: answered, and the requests behind it too (%s)", async (_, fastPath) => {
    const origin = await start({ ORIGIN_FAST_PATH: fastPath, SEED_SAMPLE_ITEMS: "2" });
    const expecting = (method: string, path: string) => `${method} ${path} HTTP/1.1\r\nHost: origin\r\nExpect: 100-continue\r\n\r\n`;
    const bytes = Buffer.from(expecting("GET", "/items/1") + expecting("DELETE", "/items/2") + expecting("GET", "/healthz") + "GET /items/2 HTTP/1.1\r\nHost: origin\r\n\r\n");
    const answers = (await sendThenFin(origin.port, bytes)).toString("latin1");
    expect(answers.match(/HTTP\/1\.1 \d{3} [^\r]*/g)).toEqual(["HTTP/1.1 200 OK", "HTTP/1.1 204 No Content", "HTTP/1.1 204 No Content", "HTTP/1.1 404 Not Found"]);
    expect(answers).not.toMatch(/Connection|100 Continue/);
  });

  it("an expectation other than 100-continue is ignored: the request is answered as without it, token check and wire rules included", async () => {
    const origin = await start({ ORIGIN_TOKEN: TOKEN_FOR_CONTINUE, SEED_SAMPLE_ITEMS: "1" });
    const request = (token: string) => Buffer.from(`GET /items/1 HTTP/1.1\r\nHost: origin\r\nExpect: something-else\r\nx-origin-token: ${token}\r\n\r\n`);
    const refused = (await sendThenFin(origin.port, request("wrong"))).toString("latin1");
    expect(refused).toMatch(/^HTTP\/1\.1 401 Unauthorized\r\n/);
    const answered = (await sendThenFin(origin.port, request(TOKEN_FOR_CONTINUE))).toString("latin1");
    expect(answered).toMatch(/^HTTP\/1\.1 200 OK\r\nETag: "[^"]+"\r\nContent-Length: \d+\r\n\r\n\{/);
    for (const answer of [refused, answered]) expect(answer).not.toMatch(/Date:|Keep-Alive|Connection|417/);
  });

  it("a write it will take gets its 100 Continue, then its answer once the body came", async () => {
    const origin = await start({ ORIGIN_TOKEN: TOKEN_FOR_CONTINUE });
    const body = '{"v":1}';
    const c = headAlone(origin.port, "/items/x", { "Content-Type": "application/json", "x-origin-token": TOKEN_FOR_CONTINUE }, body.length);
    expect(await c.firstHead()).toBe("HTTP/1.1 100 Continue\r\n\r\n");
    c.socket.write(body);
    await c.until(() => c.received().includes("HTTP/1.1 204 "));
    c.socket.destroy();
    expect(await origin.store.count()).toBe(1);
  });
});

const TOKEN_FOR_CONTINUE = "continue-token-0123456789";
