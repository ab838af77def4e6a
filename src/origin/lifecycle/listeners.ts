// Opening and closing the origin's listeners: listen (with the error the caller can explain), and close
// gracefully (stop accepting, let answers in flight finish within a grace period, then drop what is left).

import type { RequestListener, Server } from "node:http";
import { endConnectionsAsRfc9112 } from "../http/connection-end.ts";
import { acceptAbsoluteForm } from "../http/request-target.ts";

/**
 * Listens with the origin's rules for how a connection ends (http/connection-end.ts) and what a request
 * target may be (http/request-target.ts). `onContinue`: the server's own handling of requests that expect
 * a 100 (the item port's); without it node:http sends the 100 itself and hands the request on as any
 * other. Both rules must see those requests too, and only where they are handled: a `checkContinue`
 * listener makes node hand such requests to the listeners alone.
 */
export function listenOn(server: Server, port: number, host: string, onContinue?: RequestListener): Promise<void> {
  if (onContinue !== undefined) server.on("checkContinue", onContinue);
  endConnectionsAsRfc9112(server, onContinue !== undefined);
  acceptAbsoluteForm(server, onContinue !== undefined);
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once("error", onError);
    server.listen(port, host, () => {
      server.off("error", onError);
      resolve();
    });
  });
}

/** How often shutdown closes the keep-alive connections that went idle since it started. */
const IDLE_SWEEP_MS = 50;

/**
 * Stops accepting and closes keep-alive connections as soon as they are idle (node closes those idle at
 * close() only; one whose answer was still being written would otherwise stay open until the grace period
 * runs out); resolves when every connection is gone.
 */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
    server.close(() => {
      clearInterval(sweep);
      resolve();
    });
    server.closeIdleConnections();
  });
}

/** `http://host:port` with IPv6 literals bracketed. */
export function urlOf(host: string, port: number): string {
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/** Resolves after `ms` or when `done` settles, whichever comes first; the timer never holds the process. */
export async function withinGrace(done: Promise<unknown>, ms: number, onTimeout: () => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      onTimeout();
      resolve();
    }, ms);
    timer.unref();
  });
  await Promise.race([done, grace]);
  clearTimeout(timer);
}
