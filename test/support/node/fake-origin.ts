import { STATUS_CODES } from "node:http";
import { createServer, type AddressInfo, type Socket } from "node:net";
import type { RecordedRequest, Scenario, ScenarioAnswer } from "../fake-origin-protocol.ts";

/**
 * A real HTTP/1.1 origin on loopback for the edge tests. Each test registers a scenario under a unique name
 * and points the worker's ORIGIN_URL at `http://127.0.0.1:PORT/t/NAME`; the server then answers as the
 * scenario says and records every request that reached it, so a test can assert what was (not) forwarded.
 *
 *   POST /__control/scenario/NAME   body: Scenario (JSON)          → 204
 *   GET  /__control/log/NAME        → RecordedRequest[] (JSON)
 *   GET  /__control/closed-port     → { "port": N }: a loopback port that was just bound and released, so
 *                                     nothing listens on it (for "origin refuses connections")
 *
 * It speaks HTTP/1.1 over plain sockets (its own small parser and writer, not node:http) so that a scenario
 * can misbehave on the wire exactly as scripted: malformed or huge heads, a wrong Content-Length, extra
 * bytes after a response on a kept-alive connection, a reset mid-body, a trickle. Requests on one
 * connection are answered strictly in order; a request is read only after the previous answer finished.
 */
const DEFAULT_ANSWER: ScenarioAnswer = {
  status: 200,
  headers: [["ETag", '"v1"']],
  body: '{"id":"1"}',
};

/** Bigger request heads than this are refused (431) and the connection closed. */
const MAX_HEAD_BYTES = 1 << 20;
const MAX_BODY_BYTES = 1 << 20;

interface ParsedRequest {
  method: string;
  target: string;
  headers: [string, string][];
  body: Buffer;
  close: boolean;
}

export interface FakeOriginServer {
  port: number;
  close(): Promise<void>;
}

export async function startFakeOrigin(): Promise<FakeOriginServer> {
  const scenarios = new Map<string, Scenario>();
  const logs = new Map<string, RecordedRequest[]>();
  const sockets = new Set<Socket>();
  let connections = 0;

  const server = createServer((socket) => {
    const connection = ++connections;
    sockets.add(socket);
    const timers = new Set<NodeJS.Timeout>();
    let buffer: Buffer = Buffer.alloc(0);
    let busy = false;
    let gone = false;

    socket.on("error", () => {});
    socket.on("close", () => {
      gone = true;
      sockets.delete(socket);
      for (const timer of timers) clearTimeout(timer);
    });
    socket.on("data", (chunk: Buffer) => {
      buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
      pump();
    });

    const later = (ms: number, run: () => void) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        if (!gone) run();
      }, ms);
      timers.add(timer);
    };

    /** Called when an answer is complete: read the next request, or close. */
    const finished = (keepAlive: boolean) => {
      if (gone) return;
      if (!keepAlive) {
        socket.end();
        return;
      }
      busy = false;
      pump();
    };

    function pump(): void {
      while (!busy && !gone) {
        const parsed = parseRequest(buffer);
        if (parsed === "incomplete") return;
        if (parsed === "too-large" || parsed === "malformed") {
          const status = parsed === "too-large" ? 431 : 400;
          socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
          busy = true;
          return;
        }
        buffer = buffer.subarray(parsed.consumed);
        busy = true;
        handle(parsed.request);
      }
    }

    function handle(req: ParsedRequest): void {
      const path = req.target.split("?")[0] ?? req.target;
      if (path === "/__control/closed-port") {
        void closedPort().then((port) => {
          const json = JSON.stringify({ port });
          socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${json.length}\r\n\r\n${json}`);
          finished(!req.close);
        });
        return;
      }
      const control = /^\/__control\/(scenario|log)\/([\w-]+)$/.exec(path);
      if (control) {
        const [, kind, name = ""] = control;
        if (kind === "log") {
          const json = Buffer.from(JSON.stringify(logs.get(name) ?? []));
          socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${json.length}\r\n\r\n`);
          socket.write(json);
        } else {
          try {
            scenarios.set(name, JSON.parse(req.body.toString("utf8")) as Scenario);
            socket.write("HTTP/1.1 204 No Content\r\n\r\n");
          } catch {
            socket.write("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
          }
        }
        finished(!req.close);
        return;
      }

      const routed = /^\/t\/([\w-]+)(\/.*)$/.exec(req.target);
      const name = routed?.[1] ?? "";
      const routedPath = routed?.[2] ?? req.target;
      const log = logs.get(name) ?? [];
      log.push({ method: req.method, path: routedPath, headers: req.headers, connection });
      logs.set(name, log);

      const { paths, ...top } = scenarios.get(name) ?? {};
      const answer: ScenarioAnswer = { ...DEFAULT_ANSWER, ...top, ...paths?.[routedPath.split("?")[0] ?? ""] };
      if (answer.delayMs !== undefined && answer.delayMs > 0) later(answer.delayMs, () => respond(req, answer));
      else respond(req, answer);
    }

    function respond(req: ParsedRequest, answer: ScenarioAnswer): void {
      const status = answer.status ?? 200;
      const headers = answer.headers ?? [];
      const body = Buffer.from(answer.body ?? "", "utf8");
      const head = (extra: [string, string][]) => {
        let text = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Unknown"}\r\n`;
        for (const [k, v] of [...headers, ...extra]) text += `${k}: ${v}\r\n`;
        return Buffer.from(`${text}\r\n`, "latin1");
      };
      const withLength = (length: number): [string, string][] =>
        headers.some(([k]) => k.toLowerCase() === "content-length") ? [] : [["Content-Length", String(length)]];

      switch (answer.behaviour ?? "respond") {
        case "hang":
          return;
        case "reset":
          socket.write(head([["Content-Length", "100000"]]));
          socket.write(body.subarray(0, 1));
          setImmediate(() => (answer.rst ? socket.resetAndDestroy() : socket.destroy()));
          return;
        case "short-body":
          socket.write(head([["Content-Length", String(body.length + 50)]]));
          socket.end(body);
          return;
        case "hang-body":
          socket.write(head([["Content-Length", String(body.length + 50)]]));
          socket.write(body);
          return;
        case "trickle": {
          socket.write(head(withLength(body.length)));
          if (req.method === "HEAD") return finished(!req.close);
          const { chunkBytes, intervalMs } = answer.trickle ?? { chunkBytes: 1, intervalMs: 10 };
          let sent = 0;
          const next = () => {
            socket.write(body.subarray(sent, sent + chunkBytes));
            sent += chunkBytes;
            if (sent >= body.length) finished(!req.close);
            else later(intervalMs, next);
          };
          later(intervalMs, next);
          return;
        }
        case "raw":
          socket.write(Buffer.from(answer.raw ?? "", "latin1"));
          switch (answer.rawThen ?? "keep-alive") {
            case "keep-alive":
              return finished(!req.close);
            case "close":
              socket.end();
              return;
            case "rst":
              setImmediate(() => socket.resetAndDestroy());
              return;
            case "hang":
              return;
          }
          return;
        case "respond":
          socket.write(head(withLength(body.length)));
          if (req.method !== "HEAD" && body.length > 0) socket.write(body);
          return finished(!req.close);
      }
    }
  });

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A port on 127.0.0.1 that nothing listens on (bound, then released). */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * One request from the front of `buffer`: the head (request line and header lines exactly as sent) and a
 * Content-Length or chunked body.
 */
function parseRequest(
  buffer: Buffer,
): { request: ParsedRequest; consumed: number } | "incomplete" | "too-large" | "malformed" {
  const headEnd = buffer.indexOf("\r\n\r\n");
  if (headEnd === -1) return buffer.length > MAX_HEAD_BYTES ? "too-large" : "incomplete";
  if (headEnd > MAX_HEAD_BYTES) return "too-large";
  const lines = buffer.subarray(0, headEnd).toString("latin1").split("\r\n");
  const requestLine = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\S+) HTTP\/1\.[01]$/.exec(lines[0] ?? "");
  if (!requestLine) return "malformed";
  const headers: [string, string][] = [];
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon <= 0) return "malformed";
    headers.push([line.slice(0, colon), line.slice(colon + 1).trim()]);
  }
  const get = (name: string) => headers.find(([k]) => k.toLowerCase() === name)?.[1];
  const close = get("connection")?.toLowerCase() === "close";
  let offset = headEnd + 4;
  let body: Buffer = Buffer.alloc(0);
  if (get("transfer-encoding")?.toLowerCase().includes("chunked")) {
    const parts: Buffer[] = [];
    for (;;) {
      const lineEnd = buffer.indexOf("\r\n", offset);
      if (lineEnd === -1) return "incomplete";
      const size = Number.parseInt(buffer.subarray(offset, lineEnd).toString("latin1"), 16);
      if (!Number.isFinite(size) || size < 0 || size > MAX_BODY_BYTES) return "malformed";
      offset = lineEnd + 2;
      if (size === 0) {
        const trailerEnd = buffer.indexOf("\r\n", offset);
        if (trailerEnd === -1) return "incomplete";
        offset = trailerEnd + 2; // no trailers expected
        break;
      }
      if (buffer.length < offset + size + 2) return "incomplete";
      parts.push(buffer.subarray(offset, offset + size));
      offset += size + 2;
    }
    body = Buffer.concat(parts);
  } else {
    const length = Number(get("content-length") ?? "0");
    if (!Number.isSafeInteger(length) || length < 0 || length > MAX_BODY_BYTES) return "malformed";
    if (buffer.length < offset + length) return "incomplete";
    body = buffer.subarray(offset, offset + length);
    offset += length;
  }
  const [, method = "", target = ""] = requestLine;
  return { request: { method, target, headers, body, close }, consumed: offset };
}
