// The egress meter's byte accounting: the HTTP message splitter and the byte-counting relay must agree with
// the socket to the byte on well-formed traffic, whatever the chunk boundaries and framing, and the seed
// ("before") emulation must put the ingress-nginx/Node bytes on the wire.
import { createServer, connect, type Server, type Socket } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { HttpStream, totalOf, type Message } from "../../bench/egress/http-stream.ts";
import { ByteRelay } from "../../bench/egress/relay.ts";
import { INGRESS_NGINX_CORS, INGRESS_NGINX_CORS_BYTES, freshFor, koaEtag, startSeedSystem } from "../../bench/egress/seed-system.ts";

const CONTENT_LENGTH = "HTTP/1.1 200 OK\r\nETag: \"1\"\r\nContent-Length: 5\r\n\r\nhello";
const NOT_MODIFIED = 'HTTP/1.1 304 Not Modified\r\nETag: "1"\r\n\r\n';
const CHUNKED = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n";
const NO_CONTENT = "HTTP/1.1 204 \r\n\r\n";
const CORS = "HTTP/1.1 404 Not Found\r\nAccess-Control-Allow-Origin: *\r\nContent-Length: 0\r\n\r\n";

function split(wire: string, chunkSize: number, bodyless = false): Message[] {
  const messages: Message[] = [];
  const stream = new HttpStream({ kind: "response", bodyless: () => bodyless, onMessage: (m) => messages.push(m) });
  const bytes = Buffer.from(wire, "latin1");
  for (let i = 0; i < bytes.length; i += chunkSize) stream.push(bytes.subarray(i, i + chunkSize));
  return messages;
}

describe("HttpStream", () => {
  it("splits status line, headers and body exactly, whatever the chunk boundaries", () => {
    const wire = CONTENT_LENGTH + NOT_MODIFIED + CHUNKED + NO_CONTENT + CORS;
    for (const size of [1, 2, 3, 7, 64, wire.length]) {
      const messages = split(wire, size);
      expect(messages.map((m) => m.head.status)).toEqual([200, 304, 200, 204, 404]);
      expect(messages.reduce((n, m) => n + totalOf(m.raw), 0)).toBe(wire.length);
      expect(messages.reduce((n, m) => n + totalOf(m.message), 0)).toBe(wire.length);
    }
    const [ok, notModified, chunked, noContent, cors] = split(wire, 5);
    expect(ok!.message).toEqual({ startLine: 17, headers: 11 + 19 + 2, body: 5 });
    expect(totalOf(notModified!.message)).toBe(40); // the origin's 304 budget with a 3-character ETag
    expect(chunked!.message.body).toBe(CHUNKED.length - CHUNKED.indexOf("\r\n\r\n") - 4);
    expect(noContent!.message).toEqual({ startLine: 15, headers: 2, body: 0 });
    expect(cors!.corsHeaderBytes).toBe("Access-Control-Allow-Origin: *\r\n".length);
  });

  it("recomputes sizes from parsed fields: `Name:value` on the wire counts as `Name: value`", () => {
    const [m] = split("HTTP/1.1 200 OK\r\nContent-Length:2\r\n\r\nhi", 4);
    expect(totalOf(m!.raw)).toBe(39);
    expect(totalOf(m!.message)).toBe(40);
  });

  it("gives answers to HEAD no body even with Content-Length", () => {
    const wire = "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n";
    const messages = split(wire + wire, 3, true);
    expect(messages).toHaveLength(2);
    expect(messages[0]!.message.body).toBe(0);
  });

  it("reads a body delimited by the connection closing", () => {
    const messages: Message[] = [];
    const stream = new HttpStream({ kind: "response", onMessage: (m) => messages.push(m) });
    stream.push(Buffer.from("HTTP/1.1 200 OK\r\n\r\nuntil close"));
    expect(messages).toHaveLength(0);
    expect(stream.end().unterminatedBytes).toBe(0);
    expect(messages[0]!.message.body).toBe(11);
  });

  it("reports what a closed connection left unterminated", () => {
    const stream = new HttpStream({ kind: "response", onMessage: () => {} });
    stream.push(Buffer.from("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"));
    expect(stream.end().unterminatedBytes).toBe(17 + 20 + 2 + 3);
  });

  it("refuses what it cannot frame", () => {
    const bad = (wire: string) => () => split(wire, 100);
    expect(bad("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n")).toThrow(/Content-Length/);
    expect(bad("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")).toThrow(/conflicting/);
    expect(bad("SPDY/3 200 OK\r\n\r\n")).toThrow(/status line/);
    expect(bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")).toThrow(/chunk size/);
  });

  it("parses requests: method, target, and header values", () => {
    const heads: string[] = [];
    const stream = new HttpStream({ kind: "request", onHead: (h) => heads.push(`${h.method} ${h.target}`), onMessage: () => {} });
    stream.push(Buffer.from("GET /items/1 HTTP/1.1\r\nHost: x\r\n\r\nPUT /items/2 HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}HEAD /items/3 HTTP/1.1\r\n\r\n"));
    expect(heads).toEqual(["GET /items/1", "PUT /items/2", "HEAD /items/3"]);
  });
});

// ---------------------------------------------------------------------------------------------------

const servers: Array<{ close(): unknown }> = [];
afterAll(async () => {
  for (const s of servers) await s.close();
});

/** An upstream that answers each request line with the next canned response, written in odd pieces. */
async function cannedUpstream(responses: string[]): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => {
    let i = 0;
    let buffered = "";
    let writing = Promise.resolve();
    const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
    socket.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("latin1");
      let end: number;
      while ((end = buffered.indexOf("\r\n\r\n")) !== -1) {
        buffered = buffered.slice(end + 4);
        const wire = Buffer.from(responses[i++ % responses.length]!, "latin1");
        // Each answer in two writes a moment apart, to exercise reassembly in the relay's parser.
        const cut = Math.max(1, Math.floor(wire.length / 3));
        writing = writing.then(async () => {
          socket.write(wire.subarray(0, cut));
          await tick();
          socket.write(wire.subarray(cut));
          await tick();
        });
      }
    });
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  servers.push({ close: () => new Promise((r) => server.close(r)) });
  return { server, port: (server.address() as { port: number }).port };
}

function client(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => resolve(socket));
    socket.once("error", reject);
  });
}

describe("ByteRelay", () => {
  it("counts origin bytes on the socket and from parsed messages, pairs each answer with its request", async () => {
    const responses = [CONTENT_LENGTH, NOT_MODIFIED, CHUNKED, NO_CONTENT];
    const upstream = await cannedUpstream(responses);
    const seen: Array<{ token: string | undefined; status: number; bytes: number }> = [];
    const relay = new ByteRelay<string>({
      upstreamPort: upstream.port,
      attribute: (head) => `${head.method} ${head.target}`,
      onResponse: (token, response) => seen.push({ token, status: response.head.status, bytes: totalOf(response.message) }),
    });
    await relay.listen();
    servers.push(relay);
    const socket = await client(relay.port);
    const received: Buffer[] = [];
    socket.on("data", (c: Buffer) => received.push(c));
    const total = responses.join("").length;
    // Pipelined: the relay must pair answers in order.
    socket.write("GET /items/a HTTP/1.1\r\nHost: x\r\n\r\nGET /items/b HTTP/1.1\r\nIf-None-Match: \"1\"\r\n\r\n");
    socket.write("GET /items/c HTTP/1.1\r\n\r\nDELETE /items/d HTTP/1.1\r\n\r\n");
    await new Promise<void>((resolve) => {
      const check = () => (Buffer.concat(received).length >= total ? resolve() : setTimeout(check, 5));
      check();
    });
    expect(await relay.whenIdle(1000)).toBe(true);
    socket.destroy();

    const counters = relay.snapshot();
    expect(Buffer.concat(received).toString("latin1")).toBe(responses.join(""));
    expect(counters.upstreamBytes).toBe(total);
    expect(counters.responseMessageBytes).toBe(total);
    expect(counters.responses).toBe(4);
    expect(counters.requests).toBe(4);
    expect(counters.unpairedResponses).toBe(0);
    expect(counters.framingErrors).toEqual([]);
    expect(seen).toEqual([
      { token: "GET /items/a", status: 200, bytes: CONTENT_LENGTH.length },
      { token: "GET /items/b", status: 304, bytes: NOT_MODIFIED.length },
      { token: "GET /items/c", status: 200, bytes: CHUNKED.length },
      { token: "DELETE /items/d", status: 204, bytes: NO_CONTENT.length },
    ]);
  });

  it("keeps counting bytes but reports a stream it cannot parse", async () => {
    const garbage = "HTTP/1.1 200 OK\r\nContent-Length: nope\r\n\r\n";
    const upstream = await cannedUpstream([garbage]);
    const relay = new ByteRelay<undefined>({ upstreamPort: upstream.port, attribute: () => undefined, onResponse: () => {} });
    await relay.listen();
    servers.push(relay);
    const socket = await client(relay.port);
    let got = 0;
    socket.on("data", (c: Buffer) => (got += c.length));
    socket.write("GET / HTTP/1.1\r\n\r\n");
    await new Promise<void>((resolve) => {
      const check = () => (got >= garbage.length ? resolve() : setTimeout(check, 5));
      check();
    });
    socket.destroy();
    const counters = relay.snapshot();
    expect(counters.upstreamBytes).toBe(garbage.length);
    expect(counters.framingErrors.join()).toMatch(/Content-Length/);
  });
});

describe("the seed system (before)", () => {
  it("sends the five ingress-nginx enable-cors headers: 314 bytes", () => {
    expect(INGRESS_NGINX_CORS.map(([name]) => name)).toEqual([
      "Access-Control-Allow-Origin",
      "Access-Control-Allow-Credentials",
      "Access-Control-Allow-Methods",
      "Access-Control-Allow-Headers",
      "Access-Control-Max-Age",
    ]);
    expect(INGRESS_NGINX_CORS_BYTES).toBe(314);
  });

  it("computes ETags like koa-etag and revalidates like koa-conditional-get", () => {
    const etag = koaEtag(Buffer.from("hello"));
    expect(etag).toBe('"5-qvTGHdzF6KLavt4PO0gs2a6pQ00"');
    expect(freshFor(etag, etag)).toBe(true);
    expect(freshFor(`W/${etag}, "other"`, etag)).toBe(true);
    expect(freshFor("*", etag)).toBe(true);
    expect(freshFor('"other"', etag)).toBe(false);
  });

  it("answers with Node's default headers, Koa's, and the CORS block on every response", async () => {
    const seed = await startSeedSystem([["1", '{"id":"1"}']]);
    servers.push(seed);
    const relay = new ByteRelay<string>({ upstreamPort: seed.port, attribute: (h) => h.method!, onResponse: () => {} });
    await relay.listen();
    servers.push(relay);
    const heads: Message[] = [];
    const stream = new HttpStream({ kind: "response", onMessage: (m) => heads.push(m) });
    const socket = await client(relay.port);
    socket.on("data", (c: Buffer) => stream.push(c));
    const ask = async (request: string) => {
      const before = heads.length;
      socket.write(request);
      await new Promise<void>((resolve) => {
        const check = () => (heads.length > before ? resolve() : setTimeout(check, 5));
        check();
      });
      return heads[heads.length - 1]!;
    };
    const ok = await ask("GET /items/1 HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example.com\r\n\r\n");
    const names = ok.head.headers.map(([n]) => n.toLowerCase());
    expect(ok.head.status).toBe(200);
    for (const name of ["date", "connection", "keep-alive", "content-type", "content-length", "etag"]) expect(names).toContain(name);
    expect(ok.head.headers.find(([n]) => n === "Keep-Alive")?.[1]).toBe("timeout=5");
    expect(ok.corsHeaderBytes).toBe(314);
    const etag = ok.head.headers.find(([n]) => n === "ETag")![1];

    const notModified = await ask(`GET /items/1 HTTP/1.1\r\nHost: x\r\nIf-None-Match: ${etag}\r\n\r\n`);
    expect(notModified.head.status).toBe(304);
    expect(notModified.corsHeaderBytes).toBe(314);
    expect(notModified.head.headers.map(([n]) => n.toLowerCase())).not.toContain("content-type");

    const preflight = await ask("OPTIONS /items/1 HTTP/1.1\r\nHost: x\r\nOrigin: https://a.example\r\nAccess-Control-Request-Method: GET\r\n\r\n");
    expect(preflight.head.status).toBe(204);
    expect(preflight.corsHeaderBytes).toBe(314);

    const missing = await ask("GET /items/2 HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(missing.head.status).toBe(404);
    expect(missing.corsHeaderBytes).toBe(314);
    socket.destroy();
    expect(relay.snapshot().upstreamBytes).toBe([ok, notModified, preflight, missing].reduce((n, m) => n + totalOf(m.raw), 0));
  });
});
