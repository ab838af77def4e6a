// Request targets in absolute-form (`GET http://origin.example/items/1 HTTP/1.1`), which a server MUST accept
// (RFC 9112 §3.2.2) though clients send them only to proxies: node:http hands the target over as it came, and
// every route of the origin reads the origin-form (`/items/1`). The authority is dropped; the Host header is
// still checked as for any request (node-transport.ts).

import type { IncomingMessage, Server } from "node:http";

/** Every request `server` hands over reads its target in origin-form (item port, metrics ports). */
export function acceptAbsoluteForm(server: Server, handlesContinue: boolean): void {
  server.prependListener("request", toOriginForm);
  if (handlesContinue) server.prependListener("checkContinue", toOriginForm);
}

function toOriginForm(req: IncomingMessage): void {
  if (req.url !== undefined && !req.url.startsWith("/")) req.url = originForm(req.url);
}

/** `target` in origin-form: an absolute-form `http(s)://authority/path?query` loses its scheme and authority. */
function originForm(target: string): string {
  const authority = /^https?:\/\/[^/?]*/i.exec(target);
  if (authority === null) return target;
  const rest = target.slice(authority[0].length);
  return rest.startsWith("/") ? rest : `/${rest}`;
}
