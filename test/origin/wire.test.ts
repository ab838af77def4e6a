import { describe, expect, it } from "vitest";
import { sampleItem } from "../../src/origin/seed.ts";
import { get, once, RawConnection, start, withBody } from "./harness.ts";

const ITEM_1 = sampleItem(1);

describe("wire bytes, read from a raw socket", () => {
  it("answers every item status with exactly the planned bytes on one kept-alive connection", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "3" });
    const c = await RawConnection.open(origin.port);

    const ok = await c.send(get("/items/1"));
    expect(ok.text).toBe(`HTTP/1.1 200 OK\r\nETag: "1"\r\nContent-Length: ${ITEM_1.length}\r\n\r\n${ITEM_1}`);

    const head = await c.send(get("/items/1", {}, "HEAD"), true);
    expect(head.text).toBe(`HTTP/1.1 200 OK\r\nETag: "1"\r\nContent-Length: ${ITEM_1.length}\r\n\r\n`);

    const notModified = await c.send(get("/items/1", { "If-None-Match": '"1"' }));
    expect(notModified.text).toBe('HTTP/1.1 304 Not Modified\r\nETag: "1"\r\n\r\n');
    expect(notModified.raw.byteLength).toBe(40);

    const headNotModified = await c.send(get("/items/1", { "If-None-Match": '"1"' }, "HEAD"), true);
    expect(headNotModified.text).toBe('HTTP/1.1 304 Not Modified\r\nETag: "1"\r\n\r\n');

    const missing = await c.send(get("/items/nope"));
    expect(missing.text).toBe("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");

    const put = await c.send(withBody("PUT", "/items/new-1", '{"a": 1}'));
    expect(put.text).toBe('HTTP/1.1 204 No Content\r\nETag: "1"\r\n\r\n');

    const del = await c.send(get("/items/new-1", {}, "DELETE"));
    expect(del.text).toBe("HTTP/1.1 204 No Content\r\n\r\n");
    expect(del.raw.byteLength).toBe(27);

    const other = await c.send(get("/nothing-here"));
    expect(other.text).toBe("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");

    const method = await c.send(get("/items/1", {}, "POST"));
    expect(method.text).toBe("HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nAllow: GET, HEAD, PUT, DELETE\r\n\r\n");

    const badId = await c.send(get("/items/a.b"));
    const badIdBody = '{"error":"bad id: use 1-128 characters from A-Z a-z 0-9 _ -"}\n';
    expect(badId.text).toBe(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${badIdBody.length}\r\n\r\n${badIdBody}`,
    );

    // Still the same connection, nothing stray on it, never a Connection/Keep-Alive/Date line.
    const again = await c.send(get("/items/1", { "If-None-Match": '"1"' }));
    expect(again.raw.byteLength).toBe(40);
    expect(c.leftover.byteLength).toBe(0);
    expect(c.socket.destroyed).toBe(false);
  });

  it("compares If-None-Match weakly, with lists and *", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "1" });
    const c = await RawConnection.open(origin.port);
    for (const inm of ['W/"1"', '"0", "1"', '"x" , W/"1"', "*", '"a,b", "1"']) {
      expect((await c.send(get("/items/1", { "If-None-Match": inm }))).status, inm).toBe(304);
    }
    for (const inm of ['"2"', 'W/"2", "11"', '"1', "1", '"1"x', "*, \"1\""]) {
      expect((await c.send(get("/items/1", { "If-None-Match": inm }))).status, inm).toBe(200);
    }
    // `*` needs a current representation.
    expect((await c.send(get("/items/absent", { "If-None-Match": "*" }))).status).toBe(404);
    // Repeated header fields form one list.
    const twoLines = "GET /items/1 HTTP/1.1\r\nHost: o\r\nIf-None-Match: \"7\"\r\nIf-None-Match: W/\"1\"\r\n\r\n";
    expect((await c.send(twoLines)).status).toBe(304);
  });

  it("keeps ETags short: version 64 is a 4-character ETag and its 304 is 41 bytes", async () => {
    const origin = await start();
    const c = await RawConnection.open(origin.port);
    let last = "";
    for (let v = 1; v <= 64; v++) last = (await c.send(withBody("PUT", "/items/x", `{"v":${v}}`))).header("etag")!;
    expect(last).toBe('"10"');
    const r = await c.send(get("/items/x", { "If-None-Match": '"10"' }));
    expect(r.text).toBe('HTTP/1.1 304 Not Modified\r\nETag: "10"\r\n\r\n');
    expect(r.raw.byteLength).toBe(41);
  });

  it("ORIGIN_REASON_PHRASE=false drops reason phrases (28-byte 304)", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "1", ORIGIN_REASON_PHRASE: "false" });
    const r = await once(origin.port, get("/items/1", { "If-None-Match": '"1"' }));
    expect(r.text).toBe('HTTP/1.1 304 \r\nETag: "1"\r\n\r\n');
    expect(r.raw.byteLength).toBe(28);
    const ok = await once(origin.port, get("/items/1"));
    expect(ok.text.startsWith('HTTP/1.1 200 \r\nETag: "1"\r\n')).toBe(true);
  });

  it("ORIGIN_SEND_DATE=true restores Date and nothing else", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "1", ORIGIN_SEND_DATE: "true" });
    expect(origin.fastPath).toBe(false); // node:http writes Date
    const r = await once(origin.port, get("/items/1", { "If-None-Match": '"1"' }));
    expect(r.text).toMatch(/^HTTP\/1\.1 304 Not Modified\r\nETag: "1"\r\nDate: [A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT\r\n\r\n$/);
  });

  it("keeps idle connections open past Cloudflare's 900 s reuse window by default", async () => {
    const origin = await start();
    expect(origin.server.keepAliveTimeout).toBeGreaterThan(900_000);
    const custom = await start({ KEEP_ALIVE_TIMEOUT_SECONDS: "1200" });
    expect(custom.server.keepAliveTimeout).toBe(1_200_000);
  });

  it("closes when the client asks, without adding a Connection line", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "1" });
    const c = await RawConnection.open(origin.port);
    const r = await c.send(get("/items/1", { Connection: "close", "If-None-Match": '"1"' }));
    expect(r.text).toBe('HTTP/1.1 304 Not Modified\r\nETag: "1"\r\n\r\n');
    await c.closed;
  });

  it("serves pipelined requests in order", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "2" });
    const c = await RawConnection.open(origin.port);
    const a = c.next();
    const b = c.next();
    const d = c.next();
    c.socket.write(get("/items/2") + get("/items/1", { "If-None-Match": '"1"' }) + get("/items/zzz"));
    expect((await a).body.toString()).toBe(sampleItem(2));
    expect((await b).status).toBe(304);
    expect((await d).status).toBe(404);
  });
});
