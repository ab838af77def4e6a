// The stack the browser talks to, all on 127.0.0.1:
//
//   Chromium page (http://app.test:PAGES/ ...)  ──fetch──▶  worker under `wrangler dev` (http://api.test:W)
//                                                               │ ORIGIN_URL
//                                                               ▼
//                                                   recording relay (the origin's request log)
//                                                               │
//                                                               ▼
//                                                   origin cache service (src/origin/main.ts, SQLite, seeded)
//
// Two workers share the origin: "allow-list" (exact origin + `*.preview.test` pattern, credentials, PUT,
// two allowed request headers, ETag exposed) and "any-origin" (`*`, no credentials, any header, nothing
// exposed), so the browser can judge both kinds of policy.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startOrigin, startWranglerDev, type Running } from "../../../scripts/lib/local-stack.ts";
import { startPageServer, type PageServer } from "./pages.ts";
import { startRecordingRelay, type RecordingRelay } from "./recording-relay.ts";

export const SEED_ITEMS = 50;

export interface Stack {
  pages: PageServer;
  origin: Running;
  relay: RecordingRelay;
  /** Workers by name; `url` uses the host name api.test / open-api.test (mapped to 127.0.0.1 in Chromium). */
  workers: { allowList: Running & { apiUrl: string }; anyOrigin: Running & { apiUrl: string } };
  /** A page origin under this host name, e.g. http://app.test:PAGES */
  pageOrigin(host: string): string;
  stop(): Promise<void>;
}

export function allowListVars(pagesPort: number, originUrl: string): Record<string, string> {
  return {
    ORIGIN_URL: originUrl,
    CORS_ALLOW_ORIGINS: `http://app.test:${pagesPort},http://*.preview.test:${pagesPort}`,
    CORS_ALLOW_METHODS: "GET,HEAD,PUT",
    CORS_ALLOW_HEADERS: "x-request-id,content-type",
    CORS_EXPOSE_HEADERS: "etag",
    CORS_ALLOW_CREDENTIALS: "true",
    CORS_MAX_AGE: "",
    CORS_ALLOW_PRIVATE_NETWORK: "false",
  };
}

export function anyOriginVars(originUrl: string): Record<string, string> {
  return {
    ORIGIN_URL: originUrl,
    CORS_ALLOW_ORIGINS: "*",
    CORS_ALLOW_METHODS: "GET,HEAD",
    CORS_ALLOW_HEADERS: "*",
    CORS_EXPOSE_HEADERS: "",
    CORS_ALLOW_CREDENTIALS: "false",
    CORS_MAX_AGE: "",
    CORS_ALLOW_PRIVATE_NETWORK: "false",
  };
}

export async function startStack(): Promise<Stack> {
  const dataDir = mkdtempSync(join(tmpdir(), "slim-edge-browser-"));
  const started: Array<{ stop(): Promise<void> } | { close(): Promise<void> }> = [];
  const stopAll = async () => {
    for (const part of started.reverse()) await ("stop" in part ? part.stop() : part.close()).catch(() => {});
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const pages = await startPageServer();
    started.push(pages);
    const origin = await startOrigin({
      databasePath: join(dataDir, "items.sqlite"),
      seedItems: SEED_ITEMS,
    });
    started.push(origin);
    const relay = await startRecordingRelay(origin.port);
    started.push(relay);
    // Started together; whichever came up is stopped with the rest if the other did not.
    const workers = await Promise.allSettled([
      startWranglerDev({ vars: allowListVars(pages.port, relay.url) }),
      startWranglerDev({ vars: anyOriginVars(relay.url) }),
    ]);
    for (const worker of workers) if (worker.status === "fulfilled") started.push(worker.value);
    const [allowList, anyOrigin] = workers.map((worker) => {
      if (worker.status === "rejected") throw worker.reason;
      return worker.value;
    }) as [Running, Running];
    return {
      pages,
      origin,
      relay,
      workers: {
        allowList: Object.assign(allowList, { apiUrl: `http://api.test:${allowList.port}` }),
        anyOrigin: Object.assign(anyOrigin, { apiUrl: `http://open-api.test:${anyOrigin.port}` }),
      },
      pageOrigin: (host) => `http://${host}:${pages.port}`,
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
