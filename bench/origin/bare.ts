// The baseline for bench/origin.ts: a bare node:http server with every default left on, answering each
// request with the same minimal 304 (status line + ETag; node adds Date, Connection and Keep-Alive).
// Prints "listening PORT" on stdout.

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

const headers = { ETag: '"1"' };
const server = createServer((_req, res) => {
  res.writeHead(304, headers);
  res.end();
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
