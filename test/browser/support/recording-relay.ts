// A TCP relay on loopback that copies bytes both ways untouched and records the head of every request that
// passes through it (method, target, header lines). Put between the worker and the origin, it is the
// origin's request log: what reached the origin, and that no preflight ever did.
import { connect, createServer, type AddressInfo, type Socket } from "node:net";

export interface RelayedRequest {
  method: string;
  target: string;
  headers: Array<[string, string]>;
}

export interface RecordingRelay {
  url: string;
  port: number;
  /** Every request head seen so far, in arrival order. */
  readonly requests: readonly RelayedRequest[];
  close(): Promise<void>;
}

export async function startRecordingRelay(upstreamPort: number): Promise<RecordingRelay> {
  const requests: RelayedRequest[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((downstream) => {
    const upstream = connect(upstreamPort, "127.0.0.1");
    for (const socket of [downstream, upstream]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => {
        downstream.destroy();
        upstream.destroy();
      });
    }
    let pending = Buffer.alloc(0);
    let bodyLeft = 0;
    downstream.on("data", (chunk: Buffer) => {
      upstream.write(chunk);
      pending = Buffer.concat([pending, chunk]);
      // Split the request stream into heads; skip Content-Length bodies (the worker sends none, but be exact).
      for (;;) {
        if (bodyLeft > 0) {
          const skip = Math.min(bodyLeft, pending.length);
          pending = pending.subarray(skip);
          bodyLeft -= skip;
          if (bodyLeft > 0) return;
        }
        const end = pending.indexOf("\r\n\r\n");
        if (end === -1) return;
        const [line = "", ...headerLines] = pending.subarray(0, end).toString("latin1").split("\r\n");
        const [method = "", target = ""] = line.split(" ");
        const headers = headerLines.map((h): [string, string] => [h.slice(0, h.indexOf(":")), h.slice(h.indexOf(":") + 1).trim()]);
        requests.push({ method, target, headers });
        const length = headers.find(([name]) => name.toLowerCase() === "content-length");
        bodyLeft = length ? Number(length[1]) : 0;
        pending = pending.subarray(end + 4);
      }
    });
    upstream.on("data", (chunk: Buffer) => downstream.write(chunk));
    downstream.on("end", () => upstream.end());
    upstream.on("end", () => downstream.end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
