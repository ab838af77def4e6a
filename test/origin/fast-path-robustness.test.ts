// Regression tests for review findings on the fast path (src/origin/http/fast/recogniser.ts) and the origin's
// start-up (src/origin/start-origin.ts). No sleeps: every wait is on an event or a completed exchange.
import { once as onceEvent } from "node:events";
import { connect, Server as NetServer, type Socket } from "node:net";
import { describe, expect, it, vi } from "vitest";
import { EventEmitter } from "node:events";
import { FastConnection, type FastContext } from "../../src/origin/http/fast/fast-connection.ts";
import { DEFER, newFastRequest, parseFastRequest } from "../../src/origin/http/fast/recogniser.ts";
import { sampleItem } from "../../src/origin/store/sample-items.ts";
import { startOrigin } from "../../src/origin/start-origin.ts";
import { get, once, RawConnection, registerCleanup, start, testConfig, withBody } from "./harness.ts";

/** The server side of the next connection accepted by `origin.server`. */
function nextServerSocket(server: NetServer): Promise<Socket> {
  return new Promise((resolve) => server.once("connection", resolve));
}

/** The first response on a fresh connection that sends `bytes` and keeps its side open. */
async function firstResponse(port: number, bytes: string): Promise<string> {
  const c = await RawConnection.open(port);
  const r = await c.send(bytes);
  c.socket.destroy();
  return r.text;
}

describe("fast path: bounded memory under a client that never reads", () => {
  it("stops reading a pipelining client that never reads, and keeps serving others", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "1" });
    const accepted = nextServerSocket(origin.server);
    const client = connect(origin.port, "127.0.0.1");
    client.on("error", () => {});
    client.pause(); // never reads an answer
    const serverSocket = await accepted;
    await onceEvent(client, "connect");
    // 32 MiB of pipelined GETs, handed to the client socket at once (it buffers what the kernel refuses).
    const requests = Buffer.from(get("/items/1").repeat(Math.ceil((32 * 2 ** 20) / get("/items/1").length)));
    client.write(requests);
    const LIMIT = 4 * 2 ** 20;
    // Until the server has either read more than LIMIT (the bug) or stopped reading while the client
    // still has bytes to send (the fix), keep a second client busy: it must be answered every time.
    for (;;) {
      const r = await once(origin.port, get("/items/1"));
      expect(r.body.toString()).toBe(sampleItem(1));
      if (serverSocket.bytesRead > LIMIT) break;
      if (serverSocket.isPaused() && client.writableLength > 0) break;
    }
    expect(serverSocket.bytesRead).toBeLessThan(LIMIT);
    const closed = new Promise((resolve) => serverSocket.once("close", resolve));
    client.destroy();
    await closed;
  });
});

describe("fast path: after the last answer", () => {
  /** A socket whose writes never flush (a client that does not read), and that records how it ends. */
  class StuckSocket extends EventEmitter {
    ended = false;
    destroyed = false;
    write(): boolean {
      return true; // under node's high-water mark: accepted, never flushed
    }
    end(): this {
      this.ended = true; // the FIN waits behind what never flushes: no callback
      return this;
    }
    destroy(): this {
      if (!this.destroyed) {
        this.destroyed = true;
        this.emit("close");
      }
      return this;
    }
    pause(): this {
      return this;
    }
    resume(): this {
      return this;
    }
    setTimeout(): this {
      return this;
    }
  }

  function connection(keepAliveTimeoutMs: number) {
    const socket = new StuckSocket();
    const answered: string[] = [];
    const ctx: FastContext = {
      answer: (req) => {
        answered.push(req.close ? "close" : "keep-alive");
        return "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
      },
      failed: () => "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n",
      handOff: () => {
        throw new Error("nothing after the last answer may reach node:http");
      },
      release: () => {},
      keepAliveTimeoutMs,
      headersTimeoutMs: 60_000,
      requestTimeout: "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n",
    };
    return { socket, answered, fast: new FastConnection(socket as unknown as Socket, ctx) };
  }

  it("drops what a client sends after Connection: close, however much, and is destroyed at the linger bound", async () => {
    const { socket, answered, fast } = connection(50);
    socket.emit("data", Buffer.from(get("/items/1", { Connection: "close" }) + get("/items/2")));
    expect(answered).toEqual(["close"]); // the request after it is not a request (RFC 9112 §9.6)
    expect(socket.ended).toBe(true);
    const junk = Buffer.alloc(64 * 1024, "x");
    for (let i = 0; i < 1_000; i++) socket.emit("data", junk); // 64 MB from a client that never reads
    expect(fast.heldBytes).toBe(0);
    // The answer never flushes: the connection goes at the linger bound, not at the client's pleasure.
    await onceEvent(socket, "close");
    expect(socket.destroyed).toBe(true);
  });
});

describe("node:http: a client that stops reading", () => {
  it("is disconnected after KEEP_ALIVE_TIMEOUT_SECONDS with nothing written, not held for ever", async () => {
    const origin = await start({ ORIGIN_FAST_PATH: "false", KEEP_ALIVE_TIMEOUT_SECONDS: "1" });
    const writer = await RawConnection.open(origin.port);
    expect((await writer.send(withBody("PUT", "/items/big", JSON.stringify({ pad: "x".repeat(60_000) })))).status).toBe(204);
    const accepted = nextServerSocket(origin.server);
    const client = connect(origin.port, "127.0.0.1");
    client.on("error", () => {});
    client.pause(); // never reads: the answers stop mid-way, and node's keep-alive timer never starts
    const serverSocket = await accepted;
    client.write(get("/items/big").repeat(200));
    await onceEvent(serverSocket, "close");
    client.destroy();
  });
});

describe("a client that stops reading what it asked for but keeps sending", () => {
  const HUGE = 16 * 2 ** 20;
  async function bigItems(fastPath: string) {
    const origin = await start({ ORIGIN_FAST_PATH: fastPath, KEEP_ALIVE_TIMEOUT_SECONDS: "1", MAX_ITEM_BYTES: "32MiB" });
    const writer = await RawConnection.open(origin.port);
    for (const [id, size] of [["huge", HUGE], ["big", 4 * 2 ** 20]] as const) {
      expect((await writer.send(withBody("PUT", `/items/${id}`, JSON.stringify({ pad: "x".repeat(size) })))).status).toBe(204);
    }
    writer.socket.destroy();
    return origin;
  }

  it.each([
    ["false", "after Connection: close, a byte", { Connection: "close" }, "x"],
    ["false", "after Connection: close, a blank line", { Connection: "close" }, "\r\n"],
    ["false", "between keep-alive requests, a blank line", {}, "\r\n"],
    // Content-Length: 0 sends the request to node:http on the fast path's port too (a hand-off).
    ["true", "after Connection: close, a byte", { Connection: "close", "Content-Length": "0" }, "x"],
    ["true", "between keep-alive requests, a blank line", {}, "\r\n"],
  ] as const)("is disconnected after an idle timeout without reading (fast path %s; %s every 200 ms)", async (fastPath, _, headers, trickled) => {
    const origin = await bigItems(fastPath);
    const client = connect(origin.port, "127.0.0.1");
    client.on("error", () => {});
    client.pause(); // never reads: the 16 MiB answer stays in the server's buffers
    client.write(get("/items/huge", { ...headers }));
    // Each well inside the idle timeout, and each read restarts node's idle timer.
    const trickle = setInterval(() => client.write(trickled), 200);
    try {
      await new Promise((closed) => client.once("close", closed)); // reset, most likely: unread data was pending
    } finally {
      clearInterval(trickle);
    }
  });

  it.each([["false"], ["true"]])("keeps a client that reads slowly for as long as it reads (fast path %s)", async (fastPath) => {
    const origin = await bigItems(fastPath);
    const client = connect(origin.port, "127.0.0.1");
    let received = 0;
    const all = new Promise<void>((done) =>
      client.on("data", (chunk: Buffer) => {
        received += chunk.length;
        if (received > HUGE + 2 * 4 * 2 ** 20) done();
        client.pause(); // about 6 MB/s: the answers take about four idle timeouts
        setTimeout(() => client.resume(), 10);
      }),
    );
    client.write(get("/items/huge") + get("/items/big") + get("/items/big"));
    await all;
    client.destroy();
  });

  it("keeps a client that reads its last answer slowly, though it sent more after Connection: close", async () => {
    const origin = await bigItems("false");
    const client = connect(origin.port, "127.0.0.1");
    let received = 0;
    client.on("data", (chunk: Buffer) => {
      received += chunk.length;
      client.pause();
      setTimeout(() => client.resume(), 10);
    });
    const closed = new Promise((done) => client.once("close", done));
    client.write(get("/items/big") + get("/items/huge", { Connection: "close" }) + "x");
    await closed;
    expect(received).toBeGreaterThan(HUGE + 4 * 2 ** 20);
  });
});

describe("fast path: shutdown", () => {
  it("lets an answer that is still being written finish before closing the connection", async () => {
    const origin = await start({ MAX_ITEM_BYTES: "16MiB" });
    const body = `"${"x".repeat(16 * 2 ** 20 - 16)}"`;
    const put = await once(origin.port, withBody("PUT", "/items/big", body));
    expect(put.status).toBe(204);
    await once(origin.port, get("/items/big", {}, "HEAD"), true); // cached: the GET below is answered synchronously
    const accepted = nextServerSocket(origin.server);
    const client = connect(origin.port, "127.0.0.1");
    const chunks: Buffer[] = [];
    client.on("data", (d: Buffer) => chunks.push(d));
    client.on("error", () => {});
    const clientClosed = new Promise((resolve) => client.once("close", resolve));
    client.pause();
    const serverSocket = await accepted;
    await onceEvent(client, "connect");
    const served = onceEvent(serverSocket, "data"); // after the fast path's own 'data' listener has answered
    client.write(get("/items/big"));
    await served;
    expect(serverSocket.writableLength).toBeGreaterThan(0); // the kernel did not take 16 MiB at once
    const closing = origin.close();
    client.resume();
    await clientClosed;
    await closing;
    const received = Buffer.concat(chunks).toString("latin1");
    expect(received.startsWith("HTTP/1.1 200 OK\r\n")).toBe(true);
    expect(received.endsWith(body)).toBe(true);
  });
});

describe("fast path: malformed heads go to node:http at the first bad byte", () => {
  it("defers an incomplete head at a bare LF or a control character", () => {
    for (const text of [
      "GET /items/1 HTTP/1.1\nHost: o\n",
      "GET /items/1 HTTP/1.1\r\nHost: o\n",
      "GET /items/1 HTTP/1.1\r\nHost: o\r\n\n",
      "GET /items/1 HTTP/1.1\r\nX: a\u0001b",
      "GXT /items/1",
      "GET /itemz",
    ]) {
      expect(parseFastRequest(Buffer.from(text, "latin1"), 0, newFastRequest()), JSON.stringify(text)).toBe(DEFER);
    }
  });

  it("answers a head with bare LFs at once, as node:http does, while the connection stays open", async () => {
    // A headers timeout far beyond the test timeout: a 408 cannot stand in for the 400.
    const fast = await start({ SEED_SAMPLE_ITEMS: "1" }, { headersTimeoutMs: 600_000 });
    const slow = await start({ SEED_SAMPLE_ITEMS: "1", ORIGIN_FAST_PATH: "false" });
    expect(fast.fastPath).toBe(true);
    for (const head of ["GET /items/1 HTTP/1.1\nHost: o\n\n", "GET /items/1 HTTP/1.1\r\nHost: o\r\n\n"]) {
      const [a, b] = await Promise.all([firstResponse(fast.port, head), firstResponse(slow.port, head)]);
      expect(a).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(a).toBe(b);
    }
  });
});

describe("fast path: failures", () => {
  it("answers a synchronous failure with a 500, without a body for HEAD, and keeps the connection", async () => {
    const origin = await start({ SEED_SAMPLE_ITEMS: "1" });
    const c = await RawConnection.open(origin.port);
    const spy = vi.spyOn(origin.cache, "get").mockImplementation(() => {
      throw new Error("boom");
    });
    const head = await c.send(get("/items/1", {}, "HEAD"), true);
    expect(head.status).toBe(500);
    const full = await c.send(get("/items/1"));
    expect(full.status).toBe(500);
    expect(JSON.parse(full.body.toString())).toEqual({ error: "internal error (logged at the origin)" });
    // HEAD: the same head as the GET, no body bytes (RawConnection would have left them over).
    expect(head.text).toBe(full.text.slice(0, full.text.length - full.body.length));
    spy.mockRestore();
    const ok = await c.send(get("/items/1"));
    expect(ok.body.toString()).toBe(sampleItem(1));
    expect(c.leftover.length).toBe(0);
  });
});

describe("origin start-up", () => {
  /**
   * Runs `during` when the metrics server starts listening (the item port already accepts connections),
   * then lets that listen proceed.
   */
  function interceptMetricsListen(during: (itemServer: NetServer) => Promise<void>): void {
    const original = NetServer.prototype.listen;
    let first: NetServer | undefined;
    const patched = function (this: NetServer, ...args: unknown[]) {
      if (first === undefined) {
        first = this;
        return (original as (...a: unknown[]) => NetServer).apply(this, args);
      }
      NetServer.prototype.listen = original;
      void during(first).then(() => (original as (...a: unknown[]) => NetServer).apply(this, args));
      return this;
    };
    NetServer.prototype.listen = patched as typeof original;
    registerCleanup(() => {
      if (NetServer.prototype.listen === (patched as typeof original)) NetServer.prototype.listen = original;
    });
  }

  it("accepts item connections while the metrics port is still being set up", async () => {
    let client: Socket | undefined;
    interceptMetricsListen(async (itemServer) => {
      const accepted = new Promise<void>((resolve) => itemServer.once("connection", () => resolve()));
      client = connect((itemServer.address() as { port: number }).port, "127.0.0.1");
      await accepted;
    });
    const origin = await startOrigin({ config: testConfig({ SEED_SAMPLE_ITEMS: "1" }), log: () => {} });
    registerCleanup(() => origin.close());
    const c = client!;
    registerCleanup(() => void c.destroy());
    const reply = new Promise<string>((resolve) => c.once("data", (d: Buffer) => resolve(d.toString("latin1"))));
    c.write(get("/items/1"));
    expect(await reply).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  });

  it("closes connections accepted before the metrics port failed to listen", async () => {
    const blocker = new NetServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    registerCleanup(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
    const metricsPort = (blocker.address() as { port: number }).port;
    let clientClosed: Promise<unknown> | undefined;
    interceptMetricsListen(async (itemServer) => {
      const accepted = new Promise<void>((resolve) => itemServer.once("connection", () => resolve()));
      const client = connect((itemServer.address() as { port: number }).port, "127.0.0.1");
      client.on("error", () => {});
      clientClosed = new Promise((resolve) => client.once("close", resolve));
      registerCleanup(() => void client.destroy());
      await accepted;
    });
    const config = testConfig({ METRICS_PORT: String(metricsPort) });
    await expect(startOrigin({ config, log: () => {} })).rejects.toThrow(/EADDRINUSE/);
    await clientClosed; // before the fix: held open by the fast path until the test times out
  });
});
