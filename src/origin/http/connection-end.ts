// How an HTTP/1.1 connection ends (RFC 9112 §9.6), where node:http's defaults lose answers. Every listener
// of the origin (item port, metrics port, the cluster primary's metrics) gets these rules; the fast path
// follows them itself (fast/fast-connection.ts).

import { STATUS_CODES, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";

/**
 * - A client that sends its request and then half-closes (FIN: it will send nothing more, as `nc -N`
 *   does) still gets every answer it asked for, then the close. node by default ends the socket at the
 *   FIN, dropping the answers not yet written: a PUT's 204 after its commit, a miss after its store read.
 *   node reads `httpAllowHalfOpen` in socketOnEnd (lib/_http_server.js) but does not document it.
 * - Bytes after a request that carried `Connection: close` (or an HTTP/1.0 request without keep-alive) are
 *   not processed, and that request is still answered. node's parser reports such bytes as an error
 *   (HPE_CLOSED_CONNECTION), and node answers every parse error with a 400 (unless an answer's head is out)
 *   and a destroyed socket: the request's own answer was lost, and a PUT that committed read as refused.
 *   Its answer closes the connection (it said close). A 'clientError' listener replaces node's handling of
 *   every other parse error too, so that is reproduced as node has it (socketOnError).
 */
export function endConnectionsAsRfc9112(server: Server): void {
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  server.on("clientError", onClientError);
}

/** node's answers to a parse error, byte for byte (lib/_http_server.js). */
const NODE_ERROR_ANSWERS: Readonly<Record<string, Buffer>> = {
  HPE_HEADER_OVERFLOW: closingAnswer(431),
  HPE_CHUNK_EXTENSIONS_OVERFLOW: closingAnswer(413),
  ERR_HTTP_REQUEST_TIMEOUT: closingAnswer(408),
};
const BAD_REQUEST = closingAnswer(400);

function closingAnswer(status: number): Buffer {
  return Buffer.from(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\n\r\n`, "ascii");
}

/** The fields of node's server socket read here (lib/_http_server.js). */
interface HttpServerSocket extends Socket {
  /** The answer in flight on this connection, if any. */
  _httpMessage?: { _headerSent: boolean } | null;
  /** The server that accepted it (set by node's connection listener). */
  server?: Server;
}

function onClientError(error: Error & { code?: string }, socket: HttpServerSocket): void {
  if (error.code === "HPE_CLOSED_CONNECTION") return;
  // An answer whose head is already out cannot be followed by another: only then is nothing written.
  if (socket.writable && (!socket._httpMessage || !socket._httpMessage._headerSent)) {
    socket.write(NODE_ERROR_ANSWERS[error.code ?? ""] ?? BAD_REQUEST);
  }
  socket.destroy(error);
}

/** Sockets whose last answer is watched (watchLastAnswer). */
const watched = new WeakSet<Socket>();

/**
 * `res` is the last answer on its connection (it said close, or came over HTTP/1.0, or the client has
 * half-closed): from now on a client that takes none of what is written for one idle timeout is
 * disconnected, whatever it sends. node's idle timer restarts at every byte read, so a client that sent
 * on after its last request (a byte, a blank line, however slowly) without reading would otherwise hold
 * the connection and its unsent answers for ever. Progress is the bytes the kernel has taken, so a client
 * that reads slowly keeps its connection while it reads. The fast path gives such a connection the same
 * bound (FastConnection's linger).
 */
export function watchLastAnswer(res: ServerResponse): void {
  const socket = res.req.socket as HttpServerSocket;
  const idleMs = socket.server?.timeout || socket.server?.keepAliveTimeout || 0;
  if (idleMs <= 0 || watched.has(socket) || socket.destroyed) return;
  watched.add(socket);
  const taken = () => (socket.bytesWritten ?? 0) - socket.writableLength;
  let before = taken();
  const watch = setInterval(() => {
    const now = taken();
    if (now === before && socket.writableLength > 0) socket.destroy();
    before = now;
  }, idleMs);
  watch.unref();
  socket.once("close", () => clearInterval(watch));
}
