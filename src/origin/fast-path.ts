import type { Socket } from "node:net";
import type { WireBytes } from "./wire.ts";

/**
 * The fast path for the one request the edge sends all day: `GET`/`HEAD /items/:id` with no body.
 *
 * Why: on node:http a cached 304 costs about 19 µs of CPU against about 15 µs for a bare node:http server
 * writing a constant 304 (0.8×); the difference is node's per-request objects (IncomingMessage,
 * ServerResponse, header objects, stream state). Writing a pre-encoded answer straight to the socket
 * costs about 11 µs, most of it the kernel's.
 *
 * Safety: this is a *recogniser*, not an HTTP implementation. It accepts only a strict subset of
 * HTTP/1.1 whose meaning is unambiguous (request line `GET|HEAD SP /items/<id>[?query] SP HTTP/1.1`,
 * header lines `token ":" OWS visible-text OWS CRLF`, exactly one Host, no body framing headers, no
 * Expect/Upgrade, Connection only `close`/`keep-alive`, head under 8 KiB). Anything else, including
 * every write and every malformed request, is handed to node:http (llhttp) together with the unread
 * bytes, and the connection stays there. So errors, bodies, timeouts of handed-off connections and
 * all the rest of HTTP/1.1 stay with node's well-tested parser. For requests it does accept, the fast
 * path must answer byte for byte as the node:http path would: test/origin/fast-path.test.ts checks that
 * differentially on generated requests.
 */

export const INCOMPLETE = 0;
export const DEFER = 1;
export const PARSED = 2;
export type ParseResult = typeof INCOMPLETE | typeof DEFER | typeof PARSED;

/** Heads longer than this go to node:http (well under its 16 KiB header limit). */
export const MAX_FAST_HEAD = 8192;
const MAX_FAST_HEADERS = 64;

export interface FastRequest {
  head: boolean;
  id: string;
  ifNoneMatch: string | undefined;
  /** undefined: absent; null: repeated (refused). */
  token: string | undefined | null;
  /** `Connection: close`: answer, then end the connection. */
  close: boolean;
  /** Offset just past this request. */
  end: number;
}

export function newFastRequest(): FastRequest {
  return { head: false, id: "", ifNoneMatch: undefined, token: undefined, close: false, end: 0 };
}

const SP = 0x20;
const HTAB = 0x09;
const CR = 0x0d;
const LF = 0x0a;
const COLON = 0x3a;
const QUESTION = 0x3f;

function table(test: (c: number) => boolean): Uint8Array {
  const t = new Uint8Array(256);
  for (let c = 0; c < 256; c++) t[c] = test(c) ? 1 : 0;
  return t;
}
const isAlnum = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
/** RFC 9110 tchar */
const TOKEN = table((c) => isAlnum(c) || "!#$%&'*+-.^_`|~".includes(String.fromCharCode(c)));
/** The item id alphabet. */
const ID = table((c) => isAlnum(c) || c === 0x2d || c === 0x5f);
/** Query bytes we let through: visible ASCII except `#` (anything else goes to llhttp). */
const QUERY = table((c) => c >= 0x21 && c <= 0x7e && c !== 0x23);
/** field-content bytes: HTAB, SP, VCHAR, obs-text. */
const VALUE = table((c) => c === HTAB || (c >= 0x20 && c <= 0x7e) || c >= 0x80);

const GET_SP = Buffer.from("GET ");
const HEAD_SP = Buffer.from("HEAD ");
const ITEMS = Buffer.from("/items/");
const VERSION = Buffer.from(" HTTP/1.1\r\n");

/** ASCII case-insensitive compare of `buf[at..]` with a lower-case name of letters and '-'. */
function nameIs(buf: Buffer, at: number, lower: string): boolean {
  for (let k = 0; k < lower.length; k++) {
    if ((buf[at + k]! | 0x20) !== lower.charCodeAt(k)) return false;
  }
  return true;
}

const MATCH = 0;
const MISMATCH = 1;
const SHORT = 2;
/** Compares `buf[at..end)` with `expected`: MATCH, MISMATCH at a byte that differs, SHORT if `end` comes first. */
function bytesAre(buf: Buffer, at: number, end: number, expected: Buffer): number {
  for (let k = 0; k < expected.length; k++) {
    if (at + k >= end) return SHORT;
    if (buf[at + k] !== expected[k]) return MISMATCH;
  }
  return MATCH;
}

/**
 * Recognises one request at `buf[start..]`. PARSED fills `out`; DEFER means "not ours, let node:http
 * decide" (never an error by itself); INCOMPLETE means the head has not fully arrived.
 *
 * The head is checked byte by byte as far as it has arrived, so the first byte outside the accepted
 * subset (a bare LF, a wrong method, a control character…) hands the connection to node:http at once,
 * complete head or not: node answers malformed requests immediately, and so must we.
 */
export function parseFastRequest(buf: Buffer, start: number, out: FastRequest): ParseResult {
  const len = buf.length;
  // Only the first MAX_FAST_HEAD bytes may hold the head; running out of them means "too long: DEFER".
  const end = len - start > MAX_FAST_HEAD ? start + MAX_FAST_HEAD : len;
  const short: ParseResult = end < len ? DEFER : INCOMPLETE;
  let i = start;
  if (i >= end) return INCOMPLETE;
  let head: boolean;
  let m: number;
  // Method first, so a write or anything else is handed over without waiting for its whole head.
  if (buf[i] === 0x47 /* G */) {
    m = bytesAre(buf, i, end, GET_SP);
    head = false;
    i += 4;
  } else if (buf[i] === 0x48 /* H */) {
    m = bytesAre(buf, i, end, HEAD_SP);
    head = true;
    i += 5;
  } else {
    return DEFER;
  }
  if (m !== MATCH) return m === MISMATCH ? DEFER : short;

  // Request line: `/items/<id>[?query] HTTP/1.1\r\n`
  m = bytesAre(buf, i, end, ITEMS);
  if (m !== MATCH) return m === MISMATCH ? DEFER : short;
  i += ITEMS.length;
  const idStart = i;
  while (i < end && ID[buf[i]!] === 1) i++;
  const idLength = i - idStart;
  if (idLength > 128) return DEFER;
  if (i >= end) return short;
  if (idLength < 1) return DEFER;
  const idEnd = i;
  if (buf[i] === QUESTION) {
    i++;
    while (i < end && QUERY[buf[i]!] === 1) i++;
  }
  m = bytesAre(buf, i, end, VERSION);
  if (m !== MATCH) return m === MISMATCH ? DEFER : short;
  i += VERSION.length;

  // Header lines, up to the empty line.
  let hosts = 0;
  let count = 0;
  let token: string | undefined | null;
  let ifNoneMatch: string | undefined;
  let close = false;
  for (;;) {
    if (i >= end) return short;
    if (buf[i] === CR) {
      if (i + 1 >= end) return short;
      if (buf[i + 1] !== LF) return DEFER;
      i += 2;
      break;
    }
    if (++count > MAX_FAST_HEADERS) return DEFER;
    const nameStart = i;
    while (i < end && TOKEN[buf[i]!] === 1) i++;
    if (i >= end) return short;
    const nameLength = i - nameStart;
    if (nameLength === 0 || buf[i] !== COLON) return DEFER;
    i++;
    while (i < end && (buf[i] === SP || buf[i] === HTAB)) i++;
    const valueStart = i;
    while (i < end && VALUE[buf[i]!] === 1) i++;
    if (i >= end) return short;
    if (buf[i] !== CR) return DEFER; // a bare LF or a control character: node:http decides (400)
    if (i + 1 >= end) return short;
    if (buf[i + 1] !== LF) return DEFER;
    let valueEnd = i;
    while (valueEnd > valueStart && (buf[valueEnd - 1] === SP || buf[valueEnd - 1] === HTAB)) valueEnd--;
    i += 2;
    switch (nameLength) {
      case 4:
        if (nameIs(buf, nameStart, "host")) hosts++;
        break;
      case 6:
        if (nameIs(buf, nameStart, "expect")) return DEFER;
        break;
      case 7:
        if (nameIs(buf, nameStart, "upgrade")) return DEFER;
        break;
      case 10:
        if (nameIs(buf, nameStart, "connection")) {
          const value = buf.toString("latin1", valueStart, valueEnd).toLowerCase();
          if (value === "close") close = true;
          else if (value !== "keep-alive") return DEFER; // lists and other options: llhttp decides
        }
        break;
      case 13:
        if (nameIs(buf, nameStart, "if-none-match")) {
          const value = buf.toString("latin1", valueStart, valueEnd);
          ifNoneMatch = ifNoneMatch === undefined ? value : `${ifNoneMatch}, ${value}`;
        }
        break;
      case 14:
        if (nameIs(buf, nameStart, "content-length")) return DEFER;
        if (nameIs(buf, nameStart, "x-origin-token")) {
          token = token === undefined ? buf.toString("latin1", valueStart, valueEnd) : null;
        }
        break;
      case 17:
        if (nameIs(buf, nameStart, "transfer-encoding")) return DEFER;
        break;
    }
  }
  if (hosts !== 1) return DEFER;

  out.head = head;
  out.id = buf.toString("latin1", idStart, idEnd);
  out.ifNoneMatch = ifNoneMatch;
  out.token = token;
  out.close = close;
  out.end = i;
  return PARSED;
}

// ---------------------------------------------------------------------------------------------------

export interface FastContext {
  /** The answer to one recognised request: bytes to write now, or later. May throw (see `failed`). */
  answer(req: FastRequest): WireBytes | Promise<WireBytes>;
  /** Bytes to write when an answer failed (thrown or rejected); `head`: the request was HEAD. */
  failed(error: unknown, head: boolean): WireBytes;
  /** Give the connection to node:http, with the bytes not yet consumed. */
  handOff(socket: Socket, pending: Buffer | undefined, ended: boolean): void;
  /** The connection is closed or handed off: stop tracking it. */
  release(connection: FastConnection): void;
  keepAliveTimeoutMs: number;
  headersTimeoutMs: number;
  /** `HTTP/1.1 408 …` for a head that never completes. */
  requestTimeout: WireBytes;
}

/**
 * One keep-alive connection on the fast path. Requests are answered strictly in order: a miss that
 * waits on the store holds back the requests behind it (pipelining stays correct), and a full socket
 * buffer (`write` returns false) stops answering until `drain`.
 *
 * Memory stays bounded whatever the client does: while an answer is pending (busy) or the socket buffer
 * is full (blocked) the socket is paused, so the kernel's receive window, not our heap, holds what the
 * client keeps sending; chunks that arrive are kept as they are in a list and joined only when one
 * request head spans two of them, and an incomplete head never grows past MAX_FAST_HEAD (the parser
 * defers longer ones to node:http).
 */
export class FastConnection {
  readonly socket: Socket;
  readonly #ctx: FastContext;
  readonly #req = newFastRequest();
  /** Unconsumed bytes being parsed (the start of the next request). */
  #pending: Buffer | undefined;
  /** Chunks received after `#pending`, not looked at yet (at most a chunk or two: we pause). */
  #queue: Buffer[] = [];
  #busy = false;
  #blocked = false;
  #paused = false;
  #ended = false;
  #closing = false;
  #done = false;
  #headersTimer: NodeJS.Timeout | undefined;

  constructor(socket: Socket, ctx: FastContext) {
    this.socket = socket;
    this.#ctx = ctx;
    socket.setTimeout(ctx.keepAliveTimeoutMs);
    socket.on("data", this.#onData);
    socket.on("end", this.#onEnd);
    socket.on("drain", this.#onDrain);
    socket.on("timeout", this.#onTimeout);
    socket.on("error", this.#onError);
    socket.on("close", this.#onClose);
  }

  /**
   * Server shutdown: close once nothing is left to answer or to flush. An idle connection is ended
   * (FIN after whatever is still in the socket's write buffer), not destroyed, so an answer that is
   * still being written arrives whole; the server's grace timer destroys what never drains.
   */
  shutdown(): void {
    this.#closing = true;
    if (this.#done) return;
    if (!this.#busy && !this.#blocked && this.#pending === undefined && this.#queue.length === 0) this.#finish();
  }

  readonly #onData = (chunk: Buffer) => {
    this.#queue.push(chunk);
    this.#process();
  };

  readonly #onEnd = () => {
    this.#ended = true;
    this.#process();
  };

  readonly #onDrain = () => {
    this.#blocked = false;
    this.#process();
  };

  readonly #onTimeout = () => {
    this.socket.destroy();
  };

  readonly #onError = () => {
    // ECONNRESET and the like: 'close' follows and cleans up.
  };

  readonly #onClose = () => {
    this.#done = true;
    this.#pending = undefined;
    this.#queue = [];
    this.#clearHeadersTimer();
    this.#ctx.release(this);
  };

  #process(): void {
    while (!this.#busy && !this.#blocked && !this.#done) {
      let buf = this.#pending;
      if (buf === undefined) {
        buf = this.#queue.shift();
        if (buf === undefined) {
          if (this.#ended || this.#closing) this.#finish();
          break;
        }
        this.#pending = buf;
      }
      const result = parseFastRequest(buf, 0, this.#req);
      if (result === INCOMPLETE) {
        const next = this.#queue.shift();
        if (next !== undefined) {
          // The head spans chunks: join just these two (the head part is under MAX_FAST_HEAD).
          this.#pending = Buffer.concat([buf, next]);
          continue;
        }
        // A head cut short by the client's FIN: node:http answers that (400) as it would have anyway.
        if (this.#ended) this.#handOff();
        else this.#armHeadersTimer();
        break;
      }
      this.#clearHeadersTimer();
      if (result === DEFER) {
        this.#handOff();
        return;
      }
      const req = this.#req;
      this.#pending = req.end === buf.length ? undefined : buf.subarray(req.end);
      const close = req.close;
      const head = req.head;
      let answer: WireBytes | Promise<WireBytes>;
      try {
        answer = this.#ctx.answer(req);
      } catch (error) {
        answer = this.#ctx.failed(error, head);
      }
      if (typeof answer === "string") {
        this.#write(answer, close);
      } else {
        this.#busy = true;
        answer.then(
          (bytes) => this.#afterAsync(bytes, close),
          (error: unknown) => this.#afterAsync(this.#ctx.failed(error, head), close),
        );
      }
    }
    this.#flow();
  }

  /** Reads from the socket only while we can answer what arrives. */
  #flow(): void {
    if (this.#done) return;
    const stop = this.#busy || this.#blocked;
    if (stop !== this.#paused) {
      this.#paused = stop;
      if (stop) this.socket.pause();
      else this.socket.resume();
    }
  }

  #afterAsync(bytes: WireBytes, close: boolean): void {
    this.#busy = false;
    if (this.#done) return;
    this.#write(bytes, close);
    this.#process();
  }

  #write(bytes: WireBytes, close: boolean): void {
    const ok = this.socket.write(bytes, "latin1");
    if (close) {
      this.#pending = undefined;
      this.#queue = [];
      this.#finish();
    } else if (!ok) {
      this.#blocked = true;
    }
  }

  /** Like node's `destroySoon`: flush what is written, send FIN, and close without waiting for the peer. */
  #finish(): void {
    this.#done = true;
    this.#clearHeadersTimer();
    const socket = this.socket;
    socket.end(() => socket.destroy());
  }

  #armHeadersTimer(): void {
    if (this.#headersTimer !== undefined) return;
    this.#headersTimer = setTimeout(() => {
      this.#headersTimer = undefined;
      if (this.#done) return;
      this.#done = true;
      const socket = this.socket;
      socket.end(this.#ctx.requestTimeout, "latin1", () => socket.destroy());
    }, this.#ctx.headersTimeoutMs);
    this.#headersTimer.unref();
  }

  #clearHeadersTimer(): void {
    if (this.#headersTimer !== undefined) {
      clearTimeout(this.#headersTimer);
      this.#headersTimer = undefined;
    }
  }

  #handOff(): void {
    this.#done = true;
    const socket = this.socket;
    socket.setTimeout(0);
    socket.off("data", this.#onData);
    socket.off("end", this.#onEnd);
    socket.off("drain", this.#onDrain);
    socket.off("timeout", this.#onTimeout);
    socket.off("error", this.#onError);
    socket.off("close", this.#onClose);
    this.#ctx.release(this);
    let pending = this.#pending;
    if (this.#queue.length > 0) pending = Buffer.concat(pending === undefined ? this.#queue : [pending, ...this.#queue]);
    this.#pending = undefined;
    this.#queue = [];
    // resume() takes effect on the next tick, after handOff re-emits the bytes read so far; node:http may
    // pause the socket again for its own flow control.
    if (this.#paused) {
      this.#paused = false;
      socket.resume();
    }
    this.#ctx.handOff(socket, pending, this.#ended);
  }
}
