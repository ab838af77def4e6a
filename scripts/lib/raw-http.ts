import { connect } from "node:net";

export interface RawResponse {
  statusLine: string;
  /** Header lines as received, in order, without CRLF. */
  headerLines: string[];
  headers: Array<[string, string]>;
  /** Bytes of the head, status line to the blank line inclusive. */
  headBytes: number;
}

/**
 * One HTTP/1.1 request over a fresh TCP connection, written byte for byte, and the response head exactly as
 * it came off the wire (what a byte budget is about). The body is not read: the connection is closed.
 */
export function rawRequest(port: number, method: string, path: string, headers: Record<string, string>): Promise<RawResponse> {
  const lines = [`${method} ${path} HTTP/1.1`, `Host: 127.0.0.1:${port}`, "Connection: close"];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let received = Buffer.alloc(0);
    socket.setTimeout(10_000, () => socket.destroy(new Error(`no response from 127.0.0.1:${port} within 10 s`)));
    socket.on("error", reject);
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf("\r\n\r\n");
      if (end === -1) return;
      const head = received.subarray(0, end).toString("latin1").split("\r\n");
      socket.destroy();
      const headerLines = head.slice(1);
      resolve({
        statusLine: head[0] ?? "",
        headerLines,
        headers: headerLines.map((line) => {
          const colon = line.indexOf(":");
          return [line.slice(0, colon), line.slice(colon + 1).trim()];
        }),
        headBytes: end + 4,
      });
    });
    socket.write(`${lines.join("\r\n")}\r\n\r\n`);
  });
}
