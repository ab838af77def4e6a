import { describe, expect, it } from "vitest";
import { sampleItem } from "../../src/origin/store/sample-items.ts";
import { epochOf, etagFor, get, notModified, once, RawConnection, start, withBody } from "./harness.ts";

const ITEM_1 = sampleItem(1);
/** Bytes of a 304 around its ETag: `HTTP/1.1 304 Not Modified\r\nETag: ` … `\r\n\r\n`. */
const NOT_MODIFIED_FRAME = "HTTP/1.1 304 Not Modified\r\nETag: \r\n\r\n".length; // 37

describe("wire bytes, read from a raw socket", () => {
  it("answers every item status with exactly the planned bytes on one kept-alive connection", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "3" });
    const c = await RawConnection.open(origin.port);

    const ok = await c.send(get("/items/1"));
    const etag = ok.header("etag")!; // epoch (2 random characters) + version 1
    expect(etag).toBe(etagFor(epochOf(etag), 1));
    expect(etag.length).toBe(5);
    expect(ok.text).toBe(`HTTP/1.1 200 OK\r\nETag: ${etag}\r\nContent-Length: ${ITEM_1.length}\r\n\r\n${ITEM_1}`);

    const head = await c.send(get("/items/1", {}, "HEAD"), true);
    expect(head.text).toBe(`HTTP/1.1 200 OK\r\nETag: ${etag}\r\nContent-Length: ${ITEM_1.length}\r\n\r\n`);

    const unchanged = await c.send(get("/items/1", { "If-None-Match": etag }));
    expect(unchanged.text).toBe(notModified(etag));
    expect(unchanged.raw.byteLength).toBe(NOT_MODIFIED_FRAME + etag.length); // 42

    const headNotModified = await c.send(get("/items/1", { "If-None-Match": etag }, "HEAD"), true);
    expect(headNotModified.text).toBe(notModified(etag));

    const missing = await c.send(get("/items/nope"));
    expect(missing.text).toBe("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");

    const put = await c.send(withBody("PUT", "/items/new-1", '{"a": 1}'));
    expect(put.text).toBe(`HTTP/1.1 204 No Content\r\nETag: ${etag}\r\n\r\n`); // same session, version 1
    expect(put.raw.byteLength).toBe("HTTP/1.1 204 No Content\r\nETag: \r\n\r\n".length + etag.length); // 40

    const del = await c.send(get("/items/new-1", {}, "DELETE"));
    expect(del.text).toBe("HTTP/1.1 204 No Content\r\n\r\n");
    expect(del.raw.byteLength).toBe(27);

    const other = await c.send(get("/nothing-here"));
    expect(other.text).toBe("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");

    const method = await c.send(get("/items/1", {}, "POST"));
    expect(method.text).toBe("HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nAllow: GET, HEAD, PUT, DELETE\r\n\r\n");

    const badId = await c.send(get("/items/a.b"));
    const badIdBody = '{"error":"bad id: use 1-128 characters of A-Z a-z 0-9 _ -"}\n';
    expect(badId.text).toBe(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${badIdBody.length}\r\n\r\n${badIdBody}`,
    );

    // Still the same connection, nothing stray on it, never a Connection/Keep-Alive/Date line.
    const again = await c.send(get("/items/1", { "If-None-Match": etag }));
    expect(again.raw.byteLength).toBe(NOT_MODIFIED_FRAME + etag.length);
    expect(c.leftover.byteLength).toBe(0);
    expect(c.socket.destroyed).toBe(false);
  });

  it("compares If-None-Match weakly, with lists and *", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "1" });
    const c = await RawConnection.open(origin.port);
    const e = epochOf((await c.send(get("/items/1"))).header("etag"));
    const t = (v: number) => etagFor(e, v); // t(1) is the item's ETag
    for (const inm of [`W/${t(1)}`, `"0", ${t(1)}`, `"x" , W/${t(1)}`, "*", `"a,b", ${t(1)}`]) {
      expect((await c.send(get("/items/1", { "If-None-Match": inm }))).status, inm).toBe(304);
    }
    const bare = t(1).slice(1, -1);
    // Malformed never matches: `*` is the whole value or nothing (`*,`, `, *`).
    for (const inm of [t(2), `W/${t(2)}, ${t(11)}`, `"${bare}`, bare, `${t(1)}x`, `*, ${t(1)}`, '"1"', `"${e}"`, "*,", ", *", ` * ,`]) {
      expect((await c.send(get("/items/1", { "If-None-Match": inm }))).status, inm).toBe(200);
    }
    // `*` needs a current representation.
    expect((await c.send(get("/items/absent", { "If-None-Match": "*" }))).status).toBe(404);
    // Repeated header fields form one list.
    const twoLines = `GET /items/1 HTTP/1.1\r\nHost: o\r\nIf-None-Match: ${t(7)}\r\nIf-None-Match: W/${t(1)}\r\n\r\n`;
    expect((await c.send(twoLines)).status).toBe(304);
  });

  it("keeps ETags short: epoch + version, 5 characters to version 63, 6 from 64 (304 of 43 bytes)", async () => {
    const origin = await start();
    const c = await RawConnection.open(origin.port);
    const tags: string[] = [];
    for (let v = 1; v <= 64; v++) tags.push((await c.send(withBody("PUT", "/items/x", `{"v":${v}}`))).header("etag")!);
    const e = epochOf(tags[0]);
    expect(tags).toEqual(tags.map((_, i) => etagFor(e, i + 1)));
    expect(tags[62]!.length).toBe(5); // version 63
    const last = tags[63]!;
    expect(last).toBe(`"${e}10"`);
    const r = await c.send(get("/items/x", { "If-None-Match": last }));
    expect(r.text).toBe(notModified(last));
    expect(r.raw.byteLength).toBe(NOT_MODIFIED_FRAME + last.length); // 43
  });

  it("ORIGIN_REASON_PHRASE=false drops reason phrases (30-byte 304)", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "1", ORIGIN_REASON_PHRASE: "false" });
    const ok = await once(origin.port, get("/items/1"));
    const etag = ok.header("etag")!;
    expect(ok.text.startsWith(`HTTP/1.1 200 \r\nETag: ${etag}\r\n`)).toBe(true);
    const r = await once(origin.port, get("/items/1", { "If-None-Match": etag }));
    expect(r.text).toBe(notModified(etag, ""));
    expect(r.raw.byteLength).toBe(NOT_MODIFIED_FRAME - "Not Modified".length + etag.length); // 30
  });

  it("ORIGIN_SEND_DATE=true restores Date and nothing else", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "1", ORIGIN_SEND_DATE: "true" });
    expect(origin.fastPath).toBe(false); // node:http writes Date
    const etag = (await once(origin.port, get("/items/1"))).header("etag")!;
    const r = await once(origin.port, get("/items/1", { "If-None-Match": etag }));
    expect(r.text.startsWith(`HTTP/1.1 304 Not Modified\r\nETag: ${etag}\r\nDate: `)).toBe(true);
    expect(r.text).toMatch(/^HTTP\/1\.1 304 Not Modified\r\nETag: "[^"]+"\r\nDate: [A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT\r\n\r\n$/);
  });

  it("keeps idle connections open past Cloudflare's 900 s reuse window by default", async () => {
    const origin = await start();
    expect(origin.server.keepAliveTimeout).toBeGreaterThan(900_000);
    const custom = await start({ KEEP_ALIVE_TIMEOUT_SECONDS: "1200" });
    expect(custom.server.keepAliveTimeout).toBe(1_200_000);
  });

  it("answers any method but GET and HEAD on /healthz and /metrics with 405 and Allow, on either port, and counts it", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "1" });
    const metricsPort = Number(new URL(origin.metricsUrl!).port);
    for (const port of [origin.port, metricsPort]) {
      for (const path of ["/healthz", "/metrics"]) {
        const c = await RawConnection.open(port);
        const r = await c.send(get(path, {}, "POST"));
        expect(r.text).toBe("HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nAllow: GET, HEAD\r\n\r\n");
        c.socket.destroy();
      }
    }
    const page = await (await fetch(`${origin.metricsUrl!}/metrics`)).text();
    expect(page).toMatch(/^origin_http_requests_total\{[^}]*status="405"[^}]*\} [1-9]/m);
  });

  it.each([["fast path", "true"], ["node:http only", "false"]])("takes a request target in absolute-form as its path, on either port (RFC 9112 §3.2.2 MUST) (%s)", async (_, fastPath) => {
    const origin = await start({ ORIGIN_FAST_PATH: fastPath, SEED_SAMPLE_ITEMS: "1" });
    const metricsPort = Number(new URL(origin.metricsUrl!).port);
    const c = await RawConnection.open(origin.port);
    expect((await c.send(get("http://origin/items/1"))).body.toString()).toBe(sampleItem(1));
    expect((await c.send(get("HTTPS://origin:8443/items/1?x=1", {}, "HEAD"), true)).status).toBe(200);
    expect((await c.send(withBody("PUT", "http://origin/items/abs", '{"v":1}'))).status).toBe(204);
    expect((await c.send(get("http://origin/healthz"))).status).toBe(204);
    expect((await c.send(get("http://origin"))).status).toBe(404);
    const m = await RawConnection.open(metricsPort);
    expect((await m.send(get("http://origin/healthz"))).status).toBe(204);
    expect(await origin.store.get("abs")).toBeDefined();
  });

  it("closes when the client asks, without adding a Connection line", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "1" });
    const c = await RawConnection.open(origin.port);
    const etag = (await c.send(get("/items/1"))).header("etag")!;
    const r = await c.send(get("/items/1", { Connection: "close", "If-None-Match": etag }));
    expect(r.text).toBe(notModified(etag));
    await c.closed;
  });

  it("serves pipelined requests in order", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "2" });
    const etag = (await once(origin.port, get("/items/1", {}, "HEAD"), true)).header("etag")!;
    const c = await RawConnection.open(origin.port);
    const a = c.next();
    const b = c.next();
    const d = c.next();
    c.socket.write(get("/items/2") + get("/items/1", { "If-None-Match": etag }) + get("/items/zzz"));
    expect((await a).body.toString()).toBe(sampleItem(2));
    expect((await b).status).toBe(304);
    expect((await d).status).toBe(404);
  });
});
