// The pages the browser loads: one tiny static server on loopback that answers any Host name (the test maps
// app.test, evil.test, x.preview.test ... to 127.0.0.1 in Chromium), so each host name is its own origin
// while every page is the same probe. The page calls the worker with fetch() and reports what it could read.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** What a page asks fetch() to do. */
export interface ProbeSpec {
  url: string;
  init?: { method?: string; headers?: Record<string, string>; credentials?: "omit" | "same-origin" | "include"; body?: string };
  /** Response headers the page tries to read through `response.headers.get()`. */
  read?: string[];
}

/** What the page could read. `ok: false` means fetch() rejected: the browser refused the response. */
export type ProbeResult =
  | { ok: true; status: number; headers: Record<string, string | null>; body: string }
  | { ok: false; error: string };

const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>slim-edge CORS probe</title>
<script>
  // Called by the test through page.evaluate(); reports only what this page was allowed to read.
  window.probe = async (spec) => {
    try {
      const response = await fetch(spec.url, spec.init ?? {});
      const headers = {};
      for (const name of spec.read ?? []) headers[name] = response.headers.get(name);
      return { ok: true, status: response.status, headers, body: await response.text() };
    } catch (error) {
      return { ok: false, error: String(error) };
    }
  };
</script>
<p>probe page</p>
`;

export interface PageServer {
  port: number;
  /** The page URL under a host name (which Chromium resolves to 127.0.0.1). */
  urlFor(host: string): string;
  close(): Promise<void>;
}

export async function startPageServer(): Promise<PageServer> {
  const server: Server = createServer((req, res) => {
    if (req.url === "/" || req.url?.startsWith("/?")) {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(PAGE);
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    urlFor: (host) => `http://${host}:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
