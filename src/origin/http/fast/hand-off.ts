// Gives a connection the fast path has been reading to node:http, so that node answers the bytes the fast
// path already read exactly as it answers bytes it reads from the kernel itself.
//
// Why this is more than `socket.emit("data", bytes)`: node's server consumes a socket natively (llhttp reads
// the kernel's bytes in C++), and where llhttp calls into JavaScript matters. After a request's body
// reaches JavaScript (on_body is a full MakeCallback in node_http_parser.cc) node drains the nextTick and
// microtask queues before it parses on; after a head or a message's end it does not. So with node alone, a
// request with a body is answered (if its answer needs only microtasks and ticks, as a SQLite read does)
// and finished before the next pipelined request is parsed, and a malformed request after it gets
// `400 Bad Request` after that answer; bodiless requests are parsed back to back. Bytes emitted from
// JavaScript are parsed in one `execute` with our code on the stack, so nothing drains anywhere: a parse
// error after a request with a body reaches node's socketOnError while that answer is still pending (the
// answer is lost) or written but unfinished (no 400 at all). Observed on Node 22.23 with a bare node:http
// server; test/origin/fast-path.test.ts compares both paths on such sequences.
//
// So the handed-over bytes are replayed in pieces that end where node would drain (after each request
// with a body), draining the tick and microtask queues in between without letting the event loop run I/O
// (nothing else does either while node parses one read), while native reading is held back so that later
// bytes cannot overtake them, and the client's FIN is delivered after them. Where a request ends is read
// with a minimal framing scan; a wrong estimate only moves a drain point, never what llhttp parses, since
// llhttp parses a stream cut anywhere the same way.
//
// This leans on node:http internals that node documents only in its source: `socket._paused` (its own flow
// control) and the 'pause'/'resume' listeners with which it starts and stops native reading of a consumed
// socket (lib/_http_server.js, onSocketPause/onSocketResume).

import type { Server } from "node:http";
import type { Socket } from "node:net";

export type ConnectionListener = (this: Server, socket: Socket) => void;

/** The fields of node's http server socket state read here (lib/_http_server.js). */
interface HttpServerSocket extends Socket {
  /** node:http paused this socket because too many answers are queued; it resumes it itself. */
  _paused?: boolean;
}

export function handOffToNode(
  server: Server,
  nodeListener: ConnectionListener,
  socket: Socket,
  pending: Buffer | undefined,
  sawEnd: boolean,
): void {
  // Bytes node must parse before anything the kernel still holds: ours, then whatever the socket has
  // buffered in JavaScript since the fast path paused it.
  const chunks = pending === undefined ? [] : [pending];
  for (let chunk: Buffer | null; (chunk = socket.read() as Buffer | null) !== null; ) chunks.push(chunk);
  const before = new Set(socket.listeners("end"));
  nodeListener.call(server, socket);
  const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
  if (bytes.length === 0 && !sawEnd) {
    socket.resume();
    return;
  }
  holdNativeReading(socket);
  // node's 'end' handler (parser.finish(), then close) must come after the replayed bytes, not before.
  const nodeOnEnd = socket.listeners("end").filter((fn) => !before.has(fn)) as ((this: Socket) => void)[];
  for (const fn of nodeOnEnd) socket.off("end", fn);
  let ended = sawEnd;
  const onEnd = () => {
    ended = true;
  };
  socket.on("end", onEnd);

  const pieces = splitAfterBodies(bytes);
  let next = 0;
  const finish = () => {
    socket.off("end", onEnd);
    for (const fn of nodeOnEnd) socket.on("end", fn);
    if (socket.destroyed) return;
    if (ended) for (const fn of nodeOnEnd) fn.call(socket);
    else socket.resume(); // node's onSocketResume restarts native reading unless node paused it itself
  };
  const replay = () => {
    if (socket.destroyed) return finish();
    if (next === pieces.length) return afterDrain(finish);
    const http = socket as HttpServerSocket;
    if (http._paused === true) {
      // node is holding the connection until the client reads its answers; it resumes it (and would start
      // native reading again: hold it back while replaying).
      socket.once("resume", () => {
        holdNativeReading(socket);
        replay();
      });
      return;
    }
    socket.emit("data", pieces[next++]!);
    if (next === pieces.length) replay();
    else afterDrain(replay);
  };
  replay();
}

/**
 * Rounds of nextTick → microtask after which the queues are as node leaves them after a callback: each
 * round lets every tick and microtask queued ahead of it run, so any chain of up to this many hops
 * (a cache miss on SQLite, a write and its 'finish': about ten) has completed. No I/O runs meanwhile.
 */
const DRAIN_ROUNDS = 64;

function afterDrain(then: () => void): void {
  let rounds = DRAIN_ROUNDS;
  const round = () => {
    if (--rounds === 0) then();
    else process.nextTick(() => queueMicrotask(round));
  };
  process.nextTick(() => queueMicrotask(round));
}

/** Stops native reading of a consumed socket the way node's own onSocketPause does ('pause' listener). */
function holdNativeReading(socket: Socket): void {
  if (socket.isPaused()) socket.emit("pause");
  else socket.pause();
}

/** `bytes` cut after each request that has a body (where node drains), as far as a framing scan can tell. */
export function splitAfterBodies(bytes: Buffer): Buffer[] {
  const pieces: Buffer[] = [];
  let start = 0;
  let at = 0;
  while (at < bytes.length) {
    const request = requestEnd(bytes, at);
    if (request === undefined || request.end >= bytes.length) break;
    at = request.end;
    if (request.hasBody) {
      pieces.push(bytes.subarray(start, at));
      start = at;
    }
  }
  if (start < bytes.length) pieces.push(bytes.subarray(start));
  return pieces;
}

const CRLF = Buffer.from("\r\n");
const HEAD_END = Buffer.from("\r\n\r\n");

/** Where the request starting at `at` ends (head, then a Content-Length or chunked body); undefined if unclear. */
function requestEnd(bytes: Buffer, at: number): { end: number; hasBody: boolean } | undefined {
  const headEnd = bytes.indexOf(HEAD_END, at);
  if (headEnd === -1) return undefined;
  const head = bytes.toString("latin1", at, headEnd);
  const bodyStart = headEnd + 4;
  if (/\r\ntransfer-encoding:[ \t]*chunked[ \t]*(\r\n|$)/i.test(head)) {
    const end = chunkedEnd(bytes, bodyStart);
    return end === -1 ? undefined : { end, hasBody: end > bodyStart + 5 };
  }
  const lengths = [...head.matchAll(/\r\ncontent-length:[ \t]*(\d{1,15})[ \t]*(?=\r\n|$)/gi)];
  const length = lengths.length === 1 ? Number(lengths[0]![1]) : 0;
  return { end: bodyStart + length, hasBody: length > 0 };
}

function chunkedEnd(bytes: Buffer, at: number): number {
  for (;;) {
    const lineEnd = bytes.indexOf(CRLF, at);
    if (lineEnd === -1) return -1;
    const size = /^([0-9a-f]{1,8})(;|$)/i.exec(bytes.toString("latin1", at, lineEnd));
    if (size === null) return -1;
    const length = parseInt(size[1]!, 16);
    if (length === 0) {
      // Trailers end with an empty line; usually there are none.
      if (bytes[lineEnd + 2] === 0x0d && bytes[lineEnd + 3] === 0x0a) return lineEnd + 4;
      const trailersEnd = bytes.indexOf(HEAD_END, lineEnd);
      return trailersEnd === -1 ? -1 : trailersEnd + 4;
    }
    at = lineEnd + 2 + length + 2;
  }
}
