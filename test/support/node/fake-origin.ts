import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { RecordedRequest, Scenario } from "../fake-origin-protocol.ts";

/**
 * A real HTTP origin on loopback for the edge tests. Each test registers a scenario under a unique name and
 * points the worker's ORIGIN_URL at `http://127.0.0.1:PORT/t/NAME`; the server then answers as the
 * scenario says and records every request that reached it, so a test can assert what was (not) forwarded.
 *
 *   POST /__control/scenario/NAME   body: Scenario (JSON)
 *   GET  /__control/log/NAME        → RecordedRequest[]
 */
const DEFAULT_SCENARIO: Scenario = {
  status: 200,
  headers: [["ETag", '"v1"']],
  body: '{"id":"1"}',
};

export async function startFakeOrigin() {
  const scenarios = new Map<string, Scenario>();
  const logs = new Map<string, RecordedRequest[]>();
  const sockets = new Set<Socket>();

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? "/";
    const control = /^\/__control\/(scenario|log)\/([\w-]+)$/.exec(url);
    if (control) {
      const [, kind, name = ""] = control;
      if (kind === "log") {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(logs.get(name) ?? []));
        return;
      }
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (chunk: string) => (body += chunk));
      req.on("end", () => {
        scenarios.set(name, JSON.parse(body) as Scenario);
        res.writeHead(204).end();
      });
      return;
    }

    const routed = /^\/t\/([\w-]+)(\/.*)$/.exec(url);
    const name = routed?.[1] ?? "";
    const pairs: [string, string][] = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) pairs.push([req.rawHeaders[i]!, req.rawHeaders[i + 1]!]);
    const log = logs.get(name) ?? [];
    log.push({ method: req.method ?? "", path: routed?.[2] ?? url, headers: pairs });
    logs.set(name, log);

    const scenario = { ...DEFAULT_SCENARIO, ...scenarios.get(name) };
    if (scenario.behaviour === "hang") return;
    const headers = scenario.headers ?? [];
    const body = scenario.body ?? "";
    res.sendDate = false;
    if (scenario.behaviour === "reset") {
      res.writeHead(scenario.status ?? 200, [...headers.flat(), "Content-Length", "100000"]);
      res.write(body.slice(0, 1));
      setImmediate(() => res.socket?.destroy());
      return;
    }
    if (scenario.behaviour === "short-body") {
      res.writeHead(scenario.status ?? 200, [...headers.flat(), "Content-Length", String(body.length + 50)]);
      res.write(body);
      res.socket?.end();
      return;
    }
    const hasLength = headers.some(([k]) => k.toLowerCase() === "content-length");
    res.writeHead(scenario.status ?? 200, hasLength ? headers.flat() : [...headers.flat(), "Content-Length", String(Buffer.byteLength(body))]);
    res.end(req.method === "HEAD" ? undefined : body);
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
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
