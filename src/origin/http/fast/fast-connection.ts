// One keep-alive connection on the fast path: reads requests, asks the recogniser (recogniser.ts) what each
// one is, writes the answers in order, and gives the connection to node:http (hand-off.ts) at the first
// request the recogniser defers.

import type { Socket } from "node:net";
import type { WireBytes } from "../wire.ts";
import { DEFER, INCOMPLETE, newFastRequest, parseFastRequest, type FastRequest } from "./recogniser.ts";

export interface FastContext {
  /** The answer to one recognised request: bytes to write now, or later. May throw (see `failed`). */
  answer(req: FastRequest): WireBytes | Promise<WireBytes>;
  /** Bytes to write when an answer failed (thrown or rejected); `head`: the request was HEAD. */
  failed(error: unknown, head: boolean): WireBytes;
  /** Give the connection to node:http, with the bytes read but not yet consumed (see hand-off.ts). */
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
 * defers longer ones to node:http). After the last answer (`Connection: close`, a 408) nothing more is
 * read as a request (RFC 9112 §9.6): what still arrives is read and dropped, so that closing does not reset
 * the connection under the answer, and the connection is destroyed once the answer is flushed, or after
 * keepAliveTimeoutMs at most, however long the client keeps sending without reading.
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
    if (this.#done) return;
    this.#queue.push(chunk);
    this.#process();
  };

  /** Bytes received and not yet answered or handed off (what the class comment bounds). */
  get heldBytes(): number {
    let bytes = this.#pending?.length ?? 0;
    for (const chunk of this.#queue) bytes += chunk.length;
    return bytes;
  }

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

  /**
   * Like node's `destroySoon`: flush what is written (and `last`, if given), send FIN, and close without
   * waiting for the peer; destroyed once flushed, or at the linger bound.
   */
  #finish(last?: WireBytes): void {
    this.#done = true;
    this.#clearHeadersTimer();
    this.#pending = undefined;
    this.#queue = [];
    const socket = this.socket;
    // Incoming data would keep refreshing the idle timeout: the bound is absolute instead.
    socket.setTimeout(0);
    const linger = setTimeout(() => socket.destroy(), this.#ctx.keepAliveTimeoutMs);
    linger.unref();
    socket.once("close", () => clearTimeout(linger));
    // Read (and drop) what still arrives: a paused socket with unread data would be reset on close.
    socket.resume();
    if (last === undefined) socket.end(() => socket.destroy());
    else socket.end(last, "latin1", () => socket.destroy());
  }

  #armHeadersTimer(): void {
    if (this.#headersTimer !== undefined) return;
    this.#headersTimer = setTimeout(() => {
      this.#headersTimer = undefined;
      if (this.#done) return;
      this.#finish(this.#ctx.requestTimeout);
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
    this.#ctx.handOff(socket, pending, this.#ended);
  }
}
