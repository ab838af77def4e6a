// An incremental HTTP/1.1 message splitter for byte accounting. It is fed the raw bytes of one direction of
// one TCP connection and reports every complete message with two independent byte counts:
//
//   raw      bytes as they came off the socket (start line, header block, body including chunk framing)
//   message  bytes recomputed from the parsed fields, with the convention of the byte budgets in DESIGN.md:
//            `VERSION STATUS REASON\r\n`, `name: value\r\n` per header, `\r\n`, then the body as framed
//            (Content-Length bytes, or each chunk's size line, data and CRLF plus the last-chunk and trailers)
//
// The egress meter compares the sum of `message` figures with the socket counter of the relay (they must
// agree within 1%), so a message this parser loses or miscounts shows up as a failed run, not a wrong number.
// It is not a validating parser: it trusts the peers (our own origin, workerd, Node) and throws on input
// it cannot frame, which the relay reports as a failed measurement.

export interface MessageHead {
  /** `GET /items/1 HTTP/1.1` or `HTTP/1.1 200 OK`, without CRLF. */
  startLine: string;
  /** Header fields in order, names as sent, values trimmed of optional whitespace. */
  headers: Array<[string, string]>;
  /** Request: method; response: undefined. */
  method: string | undefined;
  /** Request: target; response: undefined. */
  target: string | undefined;
  /** Response: status code; request: 0. */
  status: number;
}

export interface ByteSplit {
  /** Start line including CRLF. */
  startLine: number;
  /** Header lines including their CRLF, plus the CRLF that ends the head. */
  headers: number;
  /** Body bytes as framed on the wire (chunk framing included). */
  body: number;
}

export interface Message {
  head: MessageHead;
  raw: ByteSplit;
  message: ByteSplit;
  /** Of `message.headers`: the `Access-Control-*` lines (what CORS costs on this message). */
  corsHeaderBytes: number;
}

export function totalOf(split: ByteSplit): number {
  return split.startLine + split.headers + split.body;
}

export function zeroSplit(): ByteSplit {
  return { startLine: 0, headers: 0, body: 0 };
}

export function addSplit(into: ByteSplit, from: ByteSplit): void {
  into.startLine += from.startLine;
  into.headers += from.headers;
  into.body += from.body;
}

export type Framing = { kind: "none" } | { kind: "length"; length: number } | { kind: "chunked" } | { kind: "until-close" };

/**
 * How the body of a message is delimited (RFC 9112 §6.3). `bodyless` is true for responses that never have
 * a body whatever their headers say: answers to HEAD, 1xx, 204 and 304.
 */
export function framingOf(kind: "request" | "response", head: MessageHead, bodyless: boolean): Framing {
  if (bodyless) return { kind: "none" };
  if (kind === "response" && (head.status < 200 || head.status === 204 || head.status === 304)) return { kind: "none" };
  let length: number | undefined;
  for (const [name, value] of head.headers) {
    const lower = name.toLowerCase();
    if (lower === "transfer-encoding") {
      if (/(^|,)\s*chunked\s*$/i.test(value)) return { kind: "chunked" };
      if (kind === "response") return { kind: "until-close" };
      throw new HttpFramingError(`request with Transfer-Encoding "${value}" that does not end in chunked`);
    }
    if (lower === "content-length") {
      if (!/^\d{1,15}$/.test(value)) throw new HttpFramingError(`bad Content-Length "${value}"`);
      const n = Number(value);
      if (length !== undefined && length !== n) throw new HttpFramingError("conflicting Content-Length headers");
      length = n;
    }
  }
  if (length !== undefined) return length === 0 ? { kind: "none" } : { kind: "length", length };
  return kind === "response" ? { kind: "until-close" } : { kind: "none" };
}

export class HttpFramingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HttpFramingError";
  }
}

const CRLF = Buffer.from("\r\n");
const HEAD_END = Buffer.from("\r\n\r\n");
const MAX_HEAD = 64 * 1024;

type State =
  | { s: "head" }
  | { s: "length"; remaining: number }
  | { s: "chunk-size" }
  | { s: "chunk-data"; remaining: number }
  | { s: "chunk-trailer" }
  | { s: "until-close" };

export interface HttpStreamOptions {
  kind: "request" | "response";
  /** Called when a head is complete; returns true if this message has no body regardless of its headers. */
  bodyless?: (head: MessageHead) => boolean;
  /** Called once the head is parsed (before the body): the relay attributes an exchange here. */
  onHead?: (head: MessageHead) => void;
  onMessage: (message: Message) => void;
}

/** Splits one direction of one connection into messages. Feed with `push`, then `end` when the socket ends. */
export class HttpStream {
  readonly #opts: HttpStreamOptions;
  #state: State = { s: "head" };
  /** Bytes of an incomplete head or chunk-size/trailer line carried over from the previous chunk. */
  #carry: Buffer = Buffer.alloc(0);
  #current: Message | undefined;
  constructor(options: HttpStreamOptions) {
    this.#opts = options;
  }

  /** True between messages (nothing buffered, no message open). */
  get idle(): boolean {
    return this.#current === undefined && this.#carry.length === 0;
  }

  push(chunk: Buffer): void {
    const data = this.#carry.length > 0 ? Buffer.concat([this.#carry, chunk]) : chunk;
    this.#carry = Buffer.alloc(0);
    let at = 0;
    while (at < data.length) {
      const state = this.#state;
      switch (state.s) {
        case "head": {
          const end = data.indexOf(HEAD_END, at);
          if (end === -1) {
            if (data.length - at > MAX_HEAD) throw new HttpFramingError(`message head larger than ${MAX_HEAD} bytes`);
            this.#carry = data.subarray(at);
            return;
          }
          this.#beginMessage(data.subarray(at, end + 4));
          at = end + 4;
          break;
        }
        case "length": {
          const take = Math.min(state.remaining, data.length - at);
          this.#current!.raw.body += take;
          state.remaining -= take;
          at += take;
          if (state.remaining === 0) this.#finish();
          break;
        }
        case "chunk-size": {
          const eol = data.indexOf(CRLF, at);
          if (eol === -1) {
            this.#carry = data.subarray(at);
            return;
          }
          const line = data.toString("latin1", at, eol);
          const size = parseInt(line.split(";")[0]!.trim(), 16);
          if (!Number.isFinite(size) || size < 0) throw new HttpFramingError(`bad chunk size line "${line}"`);
          const lineBytes = eol + 2 - at;
          this.#current!.raw.body += lineBytes;
          this.#current!.message.body += lineBytes;
          at = eol + 2;
          this.#state = size === 0 ? { s: "chunk-trailer" } : { s: "chunk-data", remaining: size + 2 };
          break;
        }
        case "chunk-data": {
          const take = Math.min(state.remaining, data.length - at);
          this.#current!.raw.body += take;
          this.#current!.message.body += take;
          state.remaining -= take;
          at += take;
          if (state.remaining === 0) this.#state = { s: "chunk-size" };
          break;
        }
        case "chunk-trailer": {
          const eol = data.indexOf(CRLF, at);
          if (eol === -1) {
            this.#carry = data.subarray(at);
            return;
          }
          const lineBytes = eol + 2 - at;
          this.#current!.raw.body += lineBytes;
          this.#current!.message.body += lineBytes;
          at = eol + 2;
          if (lineBytes === 2) this.#finish();
          break;
        }
        case "until-close": {
          const take = data.length - at;
          this.#current!.raw.body += take;
          this.#current!.message.body += take;
          at += take;
          break;
        }
      }
    }
  }

  /** The connection ended: a body delimited by close is complete; anything else open is reported and lost. */
  end(): { unterminatedBytes: number } {
    if (this.#current !== undefined && this.#state.s === "until-close") {
      this.#finish();
      return { unterminatedBytes: 0 };
    }
    const open = this.#current === undefined ? 0 : totalOf(this.#current.raw);
    return { unterminatedBytes: open + this.#carry.length };
  }

  #beginMessage(headBytes: Buffer): void {
    const text = headBytes.toString("latin1");
    const lines = text.slice(0, -4).split("\r\n");
    const startLine = lines[0] ?? "";
    const headers: Array<[string, string]> = [];
    let headerMessageBytes = 2;
    let corsHeaderBytes = 0;
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(":");
      if (colon <= 0) throw new HttpFramingError(`header line without a name: "${line}"`);
      const name = line.slice(0, colon);
      const value = line.slice(colon + 1).trim();
      headers.push([name, value]);
      const lineBytes = name.length + 2 + value.length + 2;
      headerMessageBytes += lineBytes;
      if (name.length > 15 && name.slice(0, 15).toLowerCase() === "access-control-") corsHeaderBytes += lineBytes;
    }
    let method: string | undefined;
    let target: string | undefined;
    let status = 0;
    let startMessageBytes: number;
    if (this.#opts.kind === "request") {
      const m = /^([A-Z!#$%&'*+.^_`|~0-9-]+) (\S+) (HTTP\/\d\.\d)$/.exec(startLine);
      if (!m) throw new HttpFramingError(`bad request line "${startLine}"`);
      method = m[1]!;
      target = m[2]!;
      startMessageBytes = method.length + 1 + target.length + 1 + m[3]!.length + 2;
    } else {
      const m = /^(HTTP\/\d\.\d) (\d{3})(?: (.*))?$/.exec(startLine);
      if (!m) throw new HttpFramingError(`bad status line "${startLine}"`);
      status = Number(m[2]);
      // `HTTP/1.1 304 \r\n` (empty reason) keeps its space: the grammar requires it.
      startMessageBytes = m[1]!.length + 1 + 3 + 1 + (m[3] ?? "").length + 2;
    }
    const head: MessageHead = { startLine, headers, method, target, status };
    const rawStart = Buffer.byteLength(startLine, "latin1") + 2;
    this.#current = {
      head,
      raw: { startLine: rawStart, headers: headBytes.length - rawStart, body: 0 },
      message: { startLine: startMessageBytes, headers: headerMessageBytes, body: 0 },
      corsHeaderBytes,
    };
    this.#opts.onHead?.(head);
    const framing = framingOf(this.#opts.kind, head, this.#opts.bodyless?.(head) ?? false);
    switch (framing.kind) {
      case "none":
        this.#finish();
        return;
      case "length":
        this.#current.message.body = framing.length;
        this.#state = { s: "length", remaining: framing.length };
        return;
      case "chunked":
        this.#state = { s: "chunk-size" };
        return;
      case "until-close":
        this.#state = { s: "until-close" };
        return;
    }
  }

  #finish(): void {
    const done = this.#current!;
    this.#current = undefined;
    this.#state = { s: "head" };
    this.#opts.onMessage(done);
  }
}

/** The first value of a header (case-insensitive), or undefined. */
export function headerValue(head: MessageHead, name: string): string | undefined {
  const lower = name.toLowerCase();
  for (const [n, v] of head.headers) if (n.toLowerCase() === lower) return v;
  return undefined;
}
