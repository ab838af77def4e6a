import type { Socket } from "node:net";

/**
 * The fast path for the one request the edge sends all day: `GET`/`HEAD /items/:id` with no body.
 *
 * Why: on node:http a cached 304 costs about 19 µs of CPU against about 15 µs for a bare node:http server
 * writing a constant 304 (0.8×); the difference is node's per-request objects (IncomingMessage,
 * ServerResponse, header objects, stream state). Writing a pre-encoded buffer straight to the socket
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

const CRLFCRLF = Buffer.from("\r\n\r\n");
const ITEMS = Buffer.from("/items/");
const VERSION = Buffer.from(" HTTP/1.1\r\n");

/** ASCII case-insensitive compare of `buf[at..]` with a lower-case name of letters and '-'. */
function nameIs(buf: Buffer, at: number, lower: string): boolean {
  for (let k = 0; k < lower.length; k++) {
    if ((buf[at + k]! | 0x20) !== lower.charCodeAt(k)) return false;
  }
  return true;
}

function bytesAre(buf: Buffer, at: number, expected: Buffer): boolean {
  if (at + expected.length > buf.length) return false;
  for (let k = 0; k < expected.length; k++) if (buf[at + k] !== expected[k]) return false;
  return true;
}

/**
 * Recognises one request at `buf[start..]`. PARSED fills `out`; DEFER means "not ours, let node:http
 * decide" (never an error by itself); INCOMPLETE means the head has not fully arrived.
 */
export function parseFastRequest(buf: Buffer, start: number, out: FastRequest): ParseResult {
  const len = buf.length;
  let i = start;
  let head: boolean;
  // Method first, so a write or anything else is handed over without waiting for its whole head.
  if (buf[i] === 0x47 /* G */) {
    if (len - i >= 4 && !(buf[i + 1] === 0x45 && buf[i + 2] === 0x54 && buf[i + 3] === SP)) return DEFER;
    head = false;
    i += 4;
  } else if (buf[i] === 0x48 /* H */) {
    if (len - i >= 5 && !(buf[i + 1] === 0x45 && buf[i + 2] === 0x41 && buf[i + 3] === 0x44 && buf[i + 4] === SP)) {
      return DEFER;
    }
    head = true;
    i += 5;
  } else {
    return len > start ? DEFER : INCOMPLETE;
  }

  const crlfcrlf = buf.indexOf(CRLFCRLF, start);
  if (crlfcrlf === -1) return len - start > MAX_FAST_HEAD ? DEFER : INCOMPLETE;
  if (crlfcrlf + 4 - start > MAX_FAST_HEAD) return DEFER;
  const headersEnd = crlfcrlf + 2; // the final empty line starts here

  // Request line: `/items/<id>[?query] HTTP/1.1\r\n`
  if (!bytesAre(buf, i, ITEMS)) return DEFER;
  i += ITEMS.length;
  const idStart = i;
  while (i < headersEnd && ID[buf[i]!] === 1) i++;
  const idLength = i - idStart;
  if (idLength < 1 || idLength > 128) return DEFER;
  const idEnd = i;
  if (buf[i] === QUESTION) {
    i++;
    while (i < headersEnd && QUERY[buf[i]!] === 1) i++;
  }
  if (!bytesAre(buf, i, VERSION)) return DEFER;
  i += VERSION.length;

  // Header lines.
  let hosts = 0;
  let count = 0;
  let token: string | undefined | null;
  let ifNoneMatch: string | undefined;
  let close = false;
  while (i < headersEnd) {
    if (++count > MAX_FAST_HEADERS) return DEFER;
    const nameStart = i;
    while (TOKEN[buf[i]!] === 1) i++;
    const nameLength = i - nameStart;
    if (nameLength === 0 || buf[i] !== COLON) return DEFER;
    i++;
    while (buf[i] === SP || buf[i] === HTAB) i++;
    const valueStart = i;
    while (VALUE[buf[i]!] === 1) i++;
    if (buf[i] !== CR || buf[i + 1] !== LF) return DEFER;
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
  out.end = crlfcrlf + 4;
  return PARSED;
}

// ---------------------------------------------------------------------------------------------------

export interface FastContext {
  /** The answer to one recognised request: bytes to write now, or later. */
  answer(req: FastRequest): Buffer | Promise<Buffer>;
  /** Bytes to write when an asynchronous answer failed (already logged by the caller). */
  failed(error: unknown): Buffer;
  /** Give the connection to node:http, with the bytes not yet consumed. */
  handOff(socket: Socket, pending: Buffer | undefined, ended: boolean): void;
  /** The connection is closed or handed off: stop tracking it. */
  release(connection: FastConnection): void;
  keepAliveTimeoutMs: number;
  headersTimeoutMs: number;
  /** `HTTP/1.1 408 …` for a head that never completes. */
  requestTimeout: Buffer;
}

/**
 * One keep-alive connection on the fast path. Requests are answered strictly in order: a miss that
 * waits on the store holds back the requests behind it (pipelining stays correct), and a full socket
 * buffer (`write` returns false) stops reading requests until `drain`.
 */
export class FastConnection {
  readonly socket: Socket;
  readonly #ctx: FastContext;
  readonly #req = newFastRequest();
  #pending: Buffer | undefined;
  #busy = false;
  #blocked = false;
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

  /** Server shutdown: close now if idle, else right after the answer in progress. */
  shutdown(): void {
    this.#closing = true;
    if (!this.#busy && this.#pending === undefined) this.socket.destroy();
  }

  readonly #onData = (chunk: Buffer) => {
    this.#pending = this.#pending === undefined ? chunk : Buffer.concat([this.#pending, chunk]);
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
    this.#clearHeadersTimer();
    this.#ctx.release(this);
  };

  #process(): void {
    while (!this.#busy && !this.#blocked && !this.#done) {
      const buf = this.#pending;
      if (buf === undefined) {
        if (this.#ended || this.#closing) this.#finish();
        return;
      }
      const result = parseFastRequest(buf, 0, this.#req);
      if (result === INCOMPLETE) {
        // A head cut short by the client's FIN: node:http answers that (400) as it would have anyway.
        if (this.#ended) this.#handOff();
        else this.#armHeadersTimer();
        return;
      }
      this.#clearHeadersTimer();
      if (result === DEFER) {
        this.#handOff();
        return;
      }
      const req = this.#req;
      this.#pending = req.end === buf.length ? undefined : buf.subarray(req.end);
      const close = req.close;
      const answer = this.#ctx.answer(req);
      if (Buffer.isBuffer(answer)) {
        this.#write(answer, close);
      } else {
        this.#busy = true;
        answer.then(
          (bytes) => this.#afterAsync(bytes, close),
          (error: unknown) => this.#afterAsync(this.#ctx.failed(error), close),
        );
      }
    }
  }

  #afterAsync(bytes: Buffer, close: boolean): void {
    this.#busy = false;
    if (this.#done) return;
    this.#write(bytes, close);
    this.#process();
  }

  #write(bytes: Buffer, close: boolean): void {
    const ok = this.socket.write(bytes);
    if (close) {
      this.#pending = undefined;
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
      socket.end(this.#ctx.requestTimeout, () => socket.destroy());
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
    const pending = this.#pending;
    this.#pending = undefined;
    this.#ctx.handOff(socket, pending, this.#ended);
  }
}
