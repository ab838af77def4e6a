// The node:http side of the item port: every request the fast path does not serve (writes, errors, odd
// requests, /healthz and /metrics when METRICS_PORT=off), and every request when the fast path is off.
// It routes and carries bytes; the answers are decided by item-reads.ts, item-writes.ts and operational.ts.

import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { isItemId, ITEM_ID_RULE, ITEMS_PREFIX } from "../../shared/item-id.ts";
import { ROUTE_HEALTHZ, ROUTE_ITEM, ROUTE_METRICS, ROUTE_OTHER, type OriginMetrics, type RouteIndex } from "../metrics.ts";
import type { ItemReads, ReadReplies } from "./item-reads.ts";
import { bodyUnread, type ItemWrites } from "./item-writes.ts";
import type { Operational } from "./operational.ts";
import { newHeaderPick, pickHeaders, type RequestHeaderPick } from "./request-headers.ts";
import { INTERNAL_ERROR, item200Head, item304Head, itemBody, STORE_UNAVAILABLE, TOKEN_ERROR, type Wire } from "./wire.ts";

/**
 * No Host in HTTP/1.1, more than one, or an invalid one: 400 (RFC 9112 §3.2 MUST), and the connection is
 * closed, since a proxy in front may have read such a request differently.
 */
const HOST_ERROR = "send exactly one Host header, with a valid value";

/**
 * llhttp parses `HTTP/0.9` and `HTTP/2.0` in an HTTP/1 request line; answering either as HTTP/1.1 would
 * be a guess at what the client meant, so it gets a 505 (RFC 9110 §15.6.6) and the connection is closed.
 */
const VERSION_ERROR = "send HTTP/1.1 (or HTTP/1.0)";

export interface NodeTransportParts {
  reads: ItemReads;
  writes: ItemWrites;
  operational: Operational;
  wire: Wire;
  metrics: OriginMetrics;
}

/** The item port's request listener. */
export function itemPortListener(parts: NodeTransportParts): RequestListener {
  const { reads, writes, operational, wire, metrics } = parts;
  const replies = nodeReplies(wire);
  const pick: RequestHeaderPick = newHeaderPick();
  // node:http hands us pipelined requests without waiting for earlier answers, so a read queued behind a
  // write on the same connection waits for that write (read-your-writes holds there too).
  const writesInFlight = new WeakMap<Socket, Promise<void>>();

  return (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? "";
    const method = req.method ?? "";
    const route = routeOf(url);
    if (refusedVersion(req, res, wire)) {
      metrics.countRequest(route, method, 505);
      return;
    }
    pickHeaders(req.rawHeaders, pick, isHttp11(req));
    if (pick.badHost) {
      wire.error(res, 400, HOST_ERROR, true);
      metrics.countRequest(route, method, 400);
      return;
    }
    if (!reads.admits(pick.token)) {
      wire.error(res, 401, TOKEN_ERROR, bodyUnread(req));
      metrics.countRequest(route, method, 401);
      return;
    }
    if (route === ROUTE_HEALTHZ) return operational.healthz(res, method, route);
    if (route === ROUTE_METRICS) return operational.metricsPage(res, method, route);
    if (route === ROUTE_OTHER) {
      wire.empty(res, 404);
      metrics.countRequest(route, method, 404);
      return;
    }
    const q = url.indexOf("?", ITEMS_PREFIX.length);
    const id = q === -1 ? url.slice(ITEMS_PREFIX.length) : url.slice(ITEMS_PREFIX.length, q);
    if (!isItemId(id)) {
      wire.error(res, 400, `bad id: use ${ITEM_ID_RULE}`, bodyUnread(req));
      metrics.countRequest(route, method, 400);
      return;
    }
    const socket = req.socket;
    const earlier = writesInFlight.get(socket);
    switch (method) {
      case "GET":
      case "HEAD": {
        const read = { id, head: method === "HEAD", ifNoneMatch: pick.ifNoneMatch, ifMatch: pick.ifMatch, token: pick.token };
        if (earlier === undefined) void reads.answer(read, replies, res);
        else void earlier.then(() => reads.answer(read, replies, res));
        return;
      }
      case "PUT":
      case "DELETE": {
        const contentType = pick.contentType;
        const conditions = { ifMatch: pick.ifMatch, ifNoneMatch: pick.ifNoneMatch };
        const run = () => writes.write(req, res, id, method, contentType, conditions);
        const mine = earlier === undefined ? run() : earlier.then(run);
        writesInFlight.set(socket, mine);
        void mine.then(() => {
          if (writesInFlight.get(socket) === mine) writesInFlight.delete(socket);
        });
        return;
      }
      default:
        wire.empty(res, 405, writes.allow);
        metrics.countRequest(route, method, 405);
    }
  };
}

/** The metrics port's request listener: /healthz and /metrics only, no token. */
export function metricsPortListener(operational: Operational, wire: Wire): RequestListener {
  const pick = newHeaderPick();
  return (req, res) => {
    if (refusedHead(req, res, pick, wire)) return;
    if (req.url === "/healthz") return operational.healthz(res, req.method, ROUTE_HEALTHZ);
    if (req.url === "/metrics") return operational.metricsPage(res, req.method, ROUTE_METRICS);
    wire.empty(res, 404);
  };
}

/**
 * A metrics listener's version and Host checks (the item port reads the other fields in the same pass):
 * answers 505 for a version other than HTTP/1.x, 400 when the Host is missing (HTTP/1.1), repeated or
 * invalid, and closes; true if it did.
 */
export function refusedHead(req: IncomingMessage, res: ServerResponse, pick: RequestHeaderPick, wire: Wire): boolean {
  if (refusedVersion(req, res, wire)) return true;
  if (!pickHeaders(req.rawHeaders, pick, isHttp11(req)).badHost) return false;
  wire.error(res, 400, HOST_ERROR, true);
  return true;
}

function refusedVersion(req: IncomingMessage, res: ServerResponse, wire: Wire): boolean {
  if (req.httpVersionMajor === 1) return false;
  wire.error(res, 505, VERSION_ERROR, true);
  return true;
}

/** HTTP/1.1, which must carry a Host (HTTP/1.0 need not). */
function isHttp11(req: IncomingMessage): boolean {
  return req.httpVersionMajor === 1 && req.httpVersionMinor === 1;
}

function routeOf(url: string): RouteIndex {
  if (url.startsWith(ITEMS_PREFIX)) return ROUTE_ITEM;
  if (url === "/healthz") return ROUTE_HEALTHZ;
  if (url === "/metrics") return ROUTE_METRICS;
  return ROUTE_OTHER;
}

/** Item read answers written through node:http's ServerResponse (the same bytes the fast path writes). */
function nodeReplies(wire: Wire): ReadReplies<void, ServerResponse> {
  return {
    ok(res, entry, head) {
      if (head) wire.head(res, 200, item200Head(entry));
      else wire.full(res, 200, item200Head(entry), itemBody(entry));
    },
    notModified(res, entry) {
      wire.head(res, 304, item304Head(entry));
    },
    notFound(res) {
      wire.empty(res, 404);
    },
    preconditionFailed(res) {
      wire.empty(res, 412);
    },
    unauthorized(res) {
      wire.error(res, 401, TOKEN_ERROR, bodyUnread(res.req));
    },
    failed(res) {
      if (res.headersSent) res.destroy();
      else wire.error(res, 500, INTERNAL_ERROR);
    },
    unavailable(res) {
      wire.error(res, 503, STORE_UNAVAILABLE);
    },
  };
}
