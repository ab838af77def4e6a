// What fetch() in a browser (or a Request inside workerd) cannot send, sent as raw HTTP/1.1 bytes to the
// worker under `wrangler dev`: lowercase and forbidden methods, duplicate Origin lines, absolute-form
// targets, huge headers. Each must end with a small, clear answer and nothing forwarded to the origin (the
// recording relay is the origin's request log).
import { connect } from "node:net";
import { expectEqual, expectTrue, type Runner } from "./support/runner.ts";
import type { Stack } from "./support/stack.ts";

interface WireResponse {
  status: number;
  headers: Array<[string, string]>;
  body: string;
  raw: string;
}

/** Writes `request` byte for byte on a fresh connection and reads until the server closes (or 10 s). */
export function exchange(port: number, request: string): Promise<WireResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.setTimeout(10_000, () => socket.destroy(new Error(`no complete answer within 10 s to ${JSON.stringify(request.slice(0, 80))}`)));
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const raw = Buffer.concat(chunks).toString("latin1");
      const end = raw.indexOf("\r\n\r\n");
      if (end === -1) return reject(new Error(`no response head: ${JSON.stringify(raw.slice(0, 200))}`));
      const [statusLine = "", ...lines] = raw.slice(0, end).split("\r\n");
      resolve({
        status: Number(statusLine.split(" ")[1]),
        headers: lines.map((line): [string, string] => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]),
        body: raw.slice(end + 4),
        raw,
      });
    });
    socket.write(request);
  });
}

const header = (res: WireResponse, name: string) => res.headers.filter(([n]) => n === name).map(([, v]) => v);
const corsNames = (res: WireResponse) => res.headers.map(([n]) => n).filter((n) => n.startsWith("access-control-"));

export async function runWireChecks(runner: Runner, stack: Stack): Promise<void> {
  const worker = stack.workers.allowList;
  const app = stack.pageOrigin("app.test");
  const request = (line: string, headers: string[] = []) =>
    `${line}\r\nHost: api.test:${worker.port}\r\n${headers.map((h) => `${h}\r\n`).join("")}Connection: close\r\n\r\n`;

  /** Runs `body`; the origin must not see any request while it runs. */
  const nothingForwarded = async (body: () => Promise<void>) => {
    const before = stack.relay.requests.length;
    await body();
    expectEqual(stack.relay.requests.slice(before), [], "requests that reached the origin");
  };
  const small = (res: WireResponse) => expectTrue(res.body.length < 100, `small body: ${JSON.stringify(res.body.slice(0, 120))}`);

  await runner.check("PATCH and TRACE on an item path: 405 with Allow from the worker, nothing forwarded", () =>
    nothingForwarded(async () => {
      for (const method of ["PATCH", "TRACE"]) {
        const res = await exchange(worker.port, request(`${method} /items/1 HTTP/1.1`, [`Origin: ${app}`]));
        expectEqual(res.status, 405, `${method} status`);
        expectEqual(header(res, "allow"), ["GET, HEAD"], `${method} Allow`);
        expectEqual(header(res, "access-control-allow-origin"), [app], `${method} keeps CORS for the allowed page origin`);
        small(res);
      }
    }),
  );

  // workerd's HTTP server refuses these before the worker runs (it knows methods by their exact uppercase
  // spelling and cannot represent CONNECT/TRACK as a Request): a small runtime answer, never forwarded.
  await runner.check("lowercase `patch`/`trace`, TRACK and an unknown method: refused by the runtime (501), nothing forwarded", () =>
    nothingForwarded(async () => {
      for (const method of ["patch", "trace", "TRACK", "BREW"]) {
        const res = await exchange(worker.port, request(`${method} /items/1 HTTP/1.1`));
        expectEqual(res.status, 501, `${method} status`);
        small(res);
      }
    }),
  );

  await runner.check("CONNECT (origin-form and authority-form): refused by the runtime, nothing forwarded", () =>
    nothingForwarded(async () => {
      for (const line of ["CONNECT /items/1 HTTP/1.1", `CONNECT 127.0.0.1:${stack.origin.port} HTTP/1.1`]) {
        const res = await exchange(worker.port, request(line));
        expectTrue(res.status >= 400 && res.status < 600, `${line}: an error status, got ${res.status}`);
        expectEqual(corsNames(res), [], `${line}: no CORS headers`);
        small(res);
      }
    }),
  );

  await runner.check("duplicate Origin lines: the preflight is refused (403, no CORS headers), the GET gets only Vary", async () => {
    await nothingForwarded(async () => {
      for (const second of [app, stack.pageOrigin("evil.test")]) {
        const res = await exchange(
          worker.port,
          request("OPTIONS /items/1 HTTP/1.1", [`Origin: ${app}`, `Origin: ${second}`, "Access-Control-Request-Method: GET"]),
        );
        expectEqual(res.status, 403, "preflight status");
        expectEqual(corsNames(res), [], "preflight CORS headers");
        expectEqual(res.body, "", "preflight body");
      }
    });
    const get = await exchange(worker.port, request("GET /items/22 HTTP/1.1", [`Origin: ${app}`, `Origin: ${stack.pageOrigin("evil.test")}`]));
    expectEqual(get.status, 200, "GET status");
    expectEqual(corsNames(get), [], "GET Access-Control-* headers");
    expectEqual(header(get, "vary"), ["origin"], "GET Vary");
  });

  await runner.check("the worker sees the page's Origin unchanged (wrangler dev rewrites only an Origin equal to the Host)", async () => {
    const res = await exchange(worker.port, request("OPTIONS /items/1 HTTP/1.1", [`Origin: ${app}`, "Access-Control-Request-Method: PUT"]));
    expectEqual(res.status, 204, "preflight status");
    expectEqual(header(res, "access-control-allow-origin"), [app], "Allow-Origin echoes the page origin exactly");
    expectEqual(header(res, "access-control-allow-methods"), ["PUT"], "Allow-Methods");
  });

  await runner.check("an absolute-form target cannot point the worker at another host: only ORIGIN_URL + /items/:id is fetched", async () => {
    const before = stack.relay.requests.length;
    const res = await exchange(worker.port, request("GET http://evil.example.net/items/23?x=1 HTTP/1.1"));
    expectEqual(res.status, 200, "status");
    expectEqual(
      stack.relay.requests.slice(before).map((r) => `${r.method} ${r.target}`),
      ["GET /items/23"],
      "what reached the origin",
    );
  });

  await runner.check("a 64 KB Access-Control-Request-Headers and a 10 KB id over the wire: small answers, nothing forwarded", () =>
    nothingForwarded(async () => {
      const big = await exchange(
        worker.port,
        request("OPTIONS /items/1 HTTP/1.1", [`Origin: ${app}`, "Access-Control-Request-Method: GET", `Access-Control-Request-Headers: ${"x-a,".repeat(16 * 1024)}x-b`]),
      );
      expectTrue(big.status === 403 || big.status === 431, `64 KB list: 403 from the worker or 431 from the runtime, got ${big.status}`);
      expectEqual(corsNames(big), [], "no CORS headers");
      small(big);
      const longId = await exchange(worker.port, request(`GET /items/${"x".repeat(10 * 1024)} HTTP/1.1`));
      expectTrue(longId.status === 400 || longId.status === 414, `10 KB id: 400 from the worker or 414 from the runtime, got ${longId.status}`);
      small(longId);
    }),
  );

  await runner.check("encoded traversal over the wire (%2F, %2e%2e, %00, \\): 400/404, nothing forwarded", () =>
    nothingForwarded(async () => {
      for (const path of ["/items/a%2Fb", "/items/%2e%2e%2fadmin", "/items/a%00", "/items/..\\admin", "/items/../admin", "/items/%C3%A9"]) {
        const res = await exchange(worker.port, request(`GET ${path} HTTP/1.1`));
        expectTrue(res.status === 400 || res.status === 404, `${path}: 400 or 404, got ${res.status}`);
        small(res);
      }
    }),
  );
}
