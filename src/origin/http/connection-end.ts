// How an HTTP/1.1 connection ends (RFC 9112 §9.6), where node:http's defaults lose answers. Every listener
// of the origin (item port, metrics port, the cluster primary's metrics) gets these rules; the fast path
// follows them itself (fast/fast-connection.ts).

import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from "node:http";
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
 *   A malformed request pipelined behind requests still being answered waits for their answers (RFC 9112
 *   §9.3.2: answers go in request order); node wrote its 400 at once, as the answer of the first of them,
 *   whose own answer was lost (a committed write read as refused).
 * - A client that stops reading a large answer it asked for is disconnected after an idle timeout even if
 *   it keeps sending (watchWrites).
 * - An `Expect` other than `100-continue` is ignored (RFC 9110 §10.1.1 lets a server answer 417 or not):
 *   node would answer 417 itself, before the token check and with its own headers (`Date`, `Keep-Alive`).
 * - `CONNECT` (a proxy's method; node hands it over as a tunnel, not a request) gets a 501 and the close;
 *   node closed the connection without a word.
 */
export function endConnectionsAsRfc9112(server: Server, handlesContinue: boolean): void {
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  server.on("clientError", onClientError);
  server.on("connection", watchWrites);
  server.prependListener("request", trackAnswer);
  if (handlesContinue) server.prependListener("checkContinue", trackAnswer);
  server.on("checkExpectation", (req: IncomingMessage, res: ServerResponse) => server.emit("request", req, res));
  server.on("connect", (_req: IncomingMessage, socket: Socket) => {
    socket.on("error", () => {}); // a client gone before the answer
    // Like a malformed request: after the answers to the requests before it. Then the connection is
    // closed outright: node's timeouts no longer watch a socket it handed over, and a client that keeps
    // its side open would hold it for ever.
    const answered = answerAfterPending(socket, () => {
      if (socket.writableEnded) socket.destroy();
      else socket.end(NOT_A_PROXY, () => socket.destroy());
    });
    if (!answered) socket.destroy();
  });
}

const NOT_A_PROXY = Buffer.from(`HTTP/1.1 501 ${STATUS_CODES[501]}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`, "ascii");

/** Per connection: answers node:http has begun and not finished, the last request, and what waits for them. */
interface Unanswered {
  open: number;
  last: IncomingMessage;
  then: (() => void) | undefined;
}
const unanswered = new WeakMap<Socket, Unanswered>();

function trackAnswer(req: IncomingMessage, res: ServerResponse): void {
  let entry = unanswered.get(req.socket);
  if (entry === undefined) unanswered.set(req.socket, (entry = { open: 0, last: req, then: undefined }));
  entry.last = req;
  if (res.writableFinished) return;
  const counted = entry;
  counted.open++;
  let done = false;
  const finished = () => {
    if (done) return;
    done = true;
    if (--counted.open === 0 && counted.then !== undefined) {
      const then = counted.then;
      counted.then = undefined;
      then();
    }
  };
  res.once("finish", finished);
  res.once("close", finished);
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
}

/**
 * Runs `answer` once node:http has finished every answer it began on `socket`, at once if none is pending:
 * a request after all those node handed over (their heads and bodies read whole) is answered after them.
 * Returns false, running nothing, when the last request handed over is still being read: a failure then is
 * that request's own.
 */
function answerAfterPending(socket: Socket, answer: () => void): boolean {
  const pending = unanswered.get(socket);
  if (pending !== undefined && pending.open > 0) {
    if (!pending.last.complete) return false;
    pending.then = answer;
    return true;
  }
  answer();
  return true;
}

function onClientError(error: Error & { code?: string }, socket: HttpServerSocket): void {
  if (error.code === "HPE_CLOSED_CONNECTION") return;
  const answer = NODE_ERROR_ANSWERS[error.code ?? ""] ?? BAD_REQUEST;
  const after = answerAfterPending(socket, () => {
    // Unless the answer before said close (node ends the connection after it), as for any request after it.
    if (socket.writable && !socket.writableEnded) socket.write(answer);
    socket.destroy(error);
  });
  if (after) return;
  // An answer whose head is already out cannot be followed by another: only then is nothing written.
  if (socket.writable && (!socket._httpMessage || !socket._httpMessage._headerSent)) socket.write(answer);
  socket.destroy(error);
}

/** The fields of a connection's libuv handle read here (what node's own idle check reads, lib/net.js). */
interface StreamHandle {
  /** Bytes handed to libuv for writing so far. */
  bytesWritten: number;
  /** Of those, bytes the kernel has not taken yet. */
  writeQueueSize: number;
}

/**
 * Every connection, read by the fast path or by node, on a server with an idle timeout (the item port;
 * the metrics ports keep node's defaults): one that leaves more unread than its kernel buffers hold (a few
 * MB on loopback) for one to two idle timeouts is disconnected, whatever it keeps sending. node's idle timer
 * restarts at every byte read, so a client that asks for a large answer and then never reads, only
 * trickles (a byte after its `Connection: close`, a blank line between requests), would hold the connection
 * and the unsent answer for ever. Progress is what the kernel takes from libuv's write queue (what node's
 * own idle check reads), so a client that reads, however slowly, keeps its connection. What the kernel
 * buffers costs no heap; node's idle timeout and the client's own give that up.
 */
function watchWrites(this: Server, socket: Socket): void {
  const idleMs = this.timeout;
  if (idleMs <= 0) return;
  const handle = () => (socket as Socket & { _handle?: StreamHandle | null })._handle;
  const taken = () => {
    const h = handle();
    return h ? h.bytesWritten - h.writeQueueSize : 0;
  };
  const waiting = () => (handle()?.writeQueueSize ?? 0) > 0;
  let takenBefore = taken();
  let waitingBefore = waiting();
  const watch = setInterval(() => {
    const now = taken();
    const waitingNow = waiting();
    if (waitingBefore && waitingNow && now === takenBefore) socket.destroy();
    takenBefore = now;
    waitingBefore = waitingNow;
  }, idleMs);
  watch.unref();
  socket.once("close", () => clearInterval(watch));
}
