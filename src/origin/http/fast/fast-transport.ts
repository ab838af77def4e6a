// Puts the fast path in front of node:http on one server: every new connection is read by a FastConnection
// first, answered from item-reads.ts in pre-encoded bytes, and handed to node:http's own connection
// listener (hand-off.ts) at the first request the recogniser defers.

import type { Server } from "node:http";
import type { Socket } from "node:net";
import type { ItemReads, ReadReplies } from "../item-reads.ts";
import { itemHead, type Wire, type WireBytes } from "../wire.ts";
import { FastConnection, type FastContext } from "./fast-connection.ts";
import { handOffToNode, type ConnectionListener } from "./hand-off.ts";

export interface FastPath {
  /** Connections the fast path gave to node:http (a request it does not serve). */
  readonly handOffs: number;
  /** Stop taking connections; let each one finish what it is answering (see FastConnection.shutdown). */
  shutdown(): void;
  /** Drop every connection still open (the shutdown grace period ran out, or startup failed). */
  destroyAll(): void;
}

export interface FastPathOptions {
  reads: ItemReads;
  wire: Wire;
  keepAliveTimeoutMs: number;
  /** How long a connection may sit on a partial request head (default: node's headersTimeout). */
  headersTimeoutMs?: number;
}

/**
 * Takes over `server`'s connections, or returns undefined when node's connection listener cannot be found
 * (a node:http change: everything then stays on node:http, which answers the same bytes, only slower).
 */
export function attachFastPath(server: Server, options: FastPathOptions): FastPath | undefined {
  const nodeListener = server.listeners("connection").find((fn) => fn.name === "connectionListener") as ConnectionListener | undefined;
  if (nodeListener === undefined) return undefined;
  const { reads, wire } = options;
  const connections = new Set<FastConnection>();
  let handOffs = 0;
  let closing = false;
  const replies: ReadReplies<WireBytes, undefined> = {
    ok: (_, entry, head) => (head ? itemHead(entry) : entry.r200),
    notModified: (_, entry) => entry.r304,
    notFound: () => wire.fixed.notFound,
    preconditionFailed: () => wire.fixed.preconditionFailed,
    unauthorized: (_, head) => (head ? wire.fixed.unauthorizedHead : wire.fixed.unauthorized),
    failed: (_, head) => (head ? wire.fixed.internalErrorHead : wire.fixed.internalError),
    unavailable: (_, head) => (head ? wire.fixed.unavailableHead : wire.fixed.unavailable),
  };
  const context: FastContext = {
    answer: (request) => reads.answer(request, replies, undefined),
    failed: (error, head) => reads.failed(error, "fast path", head, replies, undefined),
    handOff(socket, pending, ended) {
      handOffs++;
      handOffToNode(server, nodeListener, socket, pending, ended);
    },
    release(connection) {
      connections.delete(connection);
    },
    keepAliveTimeoutMs: options.keepAliveTimeoutMs,
    headersTimeoutMs: options.headersTimeoutMs ?? server.headersTimeout,
    requestTimeout: wire.fixed.requestTimeout,
  };
  server.off("connection", nodeListener);
  server.on("connection", (socket: Socket) => {
    if (closing) {
      socket.destroy();
      return;
    }
    connections.add(new FastConnection(socket, context));
  });
  return {
    get handOffs() {
      return handOffs;
    },
    shutdown() {
      closing = true;
      for (const connection of connections) connection.shutdown();
    },
    destroyAll() {
      closing = true;
      for (const connection of connections) connection.socket.destroy();
    },
  };
}
