// Launching the system's Chromium (Debian's `chromium` package; no browser download) with playwright-core,
// and watching the requests it sends, preflights included, through the DevTools protocol.
import { existsSync } from "node:fs";
import { chromium, type Browser, type CDPSession, type Page } from "playwright-core";

const CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/lib/chromium/chromium"];

export function chromiumPath(): string {
  const fromEnv = process.env.CHROMIUM_PATH;
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new Error(`CHROMIUM_PATH=${fromEnv} does not exist`);
    return fromEnv;
  }
  const found = CANDIDATES.find((path) => existsSync(path));
  if (!found) {
    throw new Error(
      `no Chromium found (looked at ${CANDIDATES.join(", ")}). Install Debian's: sudo apt-get install -y chromium ` +
        `(or run scripts/ci-install-chromium.sh), or set CHROMIUM_PATH.`,
    );
  }
  return found;
}

/**
 * A headless Chromium in which every `*.test` host name resolves to 127.0.0.1, so each page host below is
 * its own origin while everything runs on loopback. Playwright gives every launch a fresh temporary profile.
 */
export async function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-default-apps",
      "--host-resolver-rules=MAP *.test 127.0.0.1",
      ...extraArgs,
    ],
  });
}

/** One network request as Chromium reported it. */
export interface SeenRequest {
  requestId: string;
  /** CDP resource type: "Fetch" for fetch(), "Other" for a CORS preflight's request. */
  type: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  preflight: boolean;
  status?: number;
  failed?: string;
  corsError?: string;
}

export interface NetworkWatch {
  readonly seen: SeenRequest[];
  cdp: CDPSession;
  /**
   * The requests for `url` once each has an outcome (a status or a failure): Chromium reports a CORS failure
   * a moment after fetch() has already rejected in the page. Waits for the events, at most `timeoutMs`.
   */
  settled(url: string, timeoutMs?: number): Promise<SeenRequest[]>;
}

/** Records every request the page's renderer sends (CORS preflights included) with its outcome. */
export async function watchNetwork(page: Page): Promise<NetworkWatch> {
  const seen = new Map<string, SeenRequest>();
  const waiters = new Set<() => void>();
  const changed = () => {
    for (const waiter of waiters) waiter();
  };
  const cdp = await page.context().newCDPSession(page);
  const key = (requestId: string, preflight: boolean) => `${requestId}${preflight ? "#preflight" : ""}`;
  type WillBeSent = { requestId: string; type?: string; request: { method: string; url: string; headers: Record<string, string> } };
  cdp.on("Network.requestWillBeSent", (event: WillBeSent) => {
    const headers = Object.fromEntries(Object.entries(event.request.headers).map(([k, v]) => [k.toLowerCase(), v]));
    const preflight = event.request.method === "OPTIONS" && "access-control-request-method" in headers;
    seen.set(key(event.requestId, preflight), {
      requestId: event.requestId,
      type: event.type ?? "",
      method: event.request.method,
      url: event.request.url,
      headers,
      preflight,
    });
    changed();
  });
  cdp.on("Network.responseReceived", (event: { requestId: string; type: string; response: { status: number } }) => {
    const entry = seen.get(key(event.requestId, event.type === "Preflight"));
    if (entry) entry.status = event.response.status;
    changed();
  });
  cdp.on("Network.loadingFailed", (event: { requestId: string; type: string; errorText: string; corsErrorStatus?: { corsError: string } }) => {
    const entry = seen.get(key(event.requestId, event.type === "Preflight"));
    if (entry) {
      entry.failed = event.errorText;
      entry.corsError = event.corsErrorStatus?.corsError;
    }
    changed();
  });
  await cdp.send("Network.enable");
  const forUrl = (url: string) => [...seen.values()].filter((r) => r.url === url);
  const isSettled = (url: string) => {
    const requests = forUrl(url);
    return requests.length > 0 && requests.every((r) => r.status !== undefined || r.failed !== undefined);
  };
  return {
    get seen() {
      return [...seen.values()];
    },
    cdp,
    settled: (url, timeoutMs = 3_000) =>
      new Promise((resolve) => {
        if (isSettled(url)) return resolve(forUrl(url));
        const finish = () => {
          clearTimeout(timer);
          waiters.delete(check);
          resolve(forUrl(url));
        };
        const check = () => {
          if (isSettled(url)) finish();
        };
        const timer = setTimeout(finish, timeoutMs);
        waiters.add(check);
      }),
  };
}
