// A byte-counting TCP relay on loopback: the measured hop. Whatever sits downstream (the worker under
// workerd, or the client itself in the "before" system) connects to the relay; the relay opens one upstream
// connection per downstream connection and copies bytes both ways untouched.
//
// Two counts come out of it, deliberately independent:
//   - the socket count: every byte the upstream (origin) wrote, added up as it is copied;
//   - the message count: the same stream split into HTTP messages by HttpStream, each message's size
//     recomputed from its parsed start line, headers and body framing.
// Requests on the downstream→upstream direction are parsed too, so each response is paired with the
// request it answers (HTTP/1.1 answers in order) and attributed by the caller's `attribute` hook.

import { createServer, connect, type Server, type Socket } from "node:net";
import { HttpStream, totalOf, type Message, type MessageHead } from "./http-stream.ts";

export interface RelayConnection {
  /** Sequence number of this downstream connection. */
  id: number;
  /** The downstream peer's port: in the "before" system it is the client's own socket. */
  downstreamPort: number;
}

export interface RelayOptions<T> {
  upstreamPort: number;
  /** A request head arrived from downstream: returns what its response will be attributed to. */
  attribute(request: MessageHead, connection: RelayConnection): T;
  /** The response to an attributed request is complete (1xx interim responses included, each on its own). */
  onResponse(token: T | undefined, response: Message, request: MessageHead | undefined): void;
}

export interface RelayCounters {
  /** Upstream → downstream bytes counted on the socket (origin egress). */
  upstreamBytes: number;
  /** Downstream → upstream bytes counted on the socket (requests to the origin). */
  downstreamBytes: number;
  /** Sum of the parsed responses' recomputed sizes. */
  responseMessageBytes: number;
  /** Sum of the parsed responses' raw sizes. */
  responseRawBytes: number;
  responses: number;
  requests: number;
  connections: number;
  /** Responses that arrived with no request waiting for them. */
  unpairedResponses: number;
  /** Bytes left in a half-parsed message when a connection closed. */
  unterminatedBytes: number;
  /** Messages the parser could not frame (the run is invalid if this is not 0). */
  framingErrors: string[];
}

export function zeroCounters(): RelayCounters {
  return {
    upstreamBytes: 0,
    downstreamBytes: 0,
    responseMessageBytes: 0,
    responseRawBytes: 0,
    responses: 0,
    requests: 0,
    connections: 0,
    unpairedResponses: 0,
    unterminatedBytes: 0,
    framingErrors: [],
  };
}

/** `b - a` for every counter (errors: the ones added since `a`). */
export function diffCounters(a: RelayCounters, b: RelayCounters): RelayCounters {
  return {
    upstreamBytes: b.upstreamBytes - a.upstreamBytes,
    downstreamBytes: b.downstreamBytes - a.downstreamBytes,
    responseMessageBytes: b.responseMessageBytes - a.responseMessageBytes,
    responseRawBytes: b.responseRawBytes - a.responseRawBytes,
    responses: b.responses - a.responses,
    requests: b.requests - a.requests,
    connections: b.connections - a.connections,
    unpairedResponses: b.unpairedResponses - a.unpairedResponses,
    unterminatedBytes: b.unterminatedBytes - a.unterminatedBytes,
    framingErrors: b.framingErrors.slice(a.framingErrors.length),
  };
}

interface Pending<T> {
  head: MessageHead;
  token: T;
}

export class ByteRelay<T> {
  readonly #opts: RelayOptions<T>;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #counters = zeroCounters();
  #open = 0;
  #idleWaiters: Array<() => void> = [];
  #nextId = 1;
  port = 0;

  constructor(options: RelayOptions<T>) {
    this.#opts = options;
    this.#server = createServer({ noDelay: true }, (downstream) => this.#accept(downstream));
  }

  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen(0, "127.0.0.1", () => {
        this.#server.off("error", reject);
        const address = this.#server.address();
        this.port = typeof address === "object" && address ? address.port : 0;
        resolve(this.port);
      });
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** A copy of the counters now. */
  snapshot(): RelayCounters {
    return { ...this.#counters, framingErrors: [...this.#counters.framingErrors] };
  }

  /** Requests seen whose response is not complete yet. */
  get openExchanges(): number {
    return this.#open;
  }

  /** Resolves once no exchange is open, or after `timeoutMs` (returns false then). */
  whenIdle(timeoutMs: number): Promise<boolean> {
    if (this.#open === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#idleWaiters = this.#idleWaiters.filter((w) => w !== done);
        resolve(false);
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.#idleWaiters.push(done);
    });
  }

  close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }

  #settle(): void {
    this.#open--;
    if (this.#open === 0) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  #accept(downstream: Socket): void {
    const c = this.#counters;
    c.connections++;
    const connection: RelayConnection = { id: this.#nextId++, downstreamPort: downstream.remotePort ?? 0 };
    const upstream = connect({ port: this.#opts.upstreamPort, host: "127.0.0.1", noDelay: true });
    this.#sockets.add(downstream);
    this.#sockets.add(upstream);
    const queue: Array<Pending<T>> = [];
    let requestsBroken = false;
    let responsesBroken = false;

    const requests = new HttpStream({
      kind: "request",
      onHead: (head) => {
        c.requests++;
        this.#open++;
        queue.push({ head, token: this.#opts.attribute(head, connection) });
      },
      onMessage: () => {},
    });
    const responses = new HttpStream({
      kind: "response",
      bodyless: (head) => head.status >= 200 && queue[0]?.head.method === "HEAD",
      onMessage: (message) => {
        c.responses++;
        c.responseMessageBytes += totalOf(message.message);
        c.responseRawBytes += totalOf(message.raw);
        const interim = message.head.status < 200;
        const pending = interim ? queue[0] : queue.shift();
        if (pending === undefined) c.unpairedResponses++;
        this.#opts.onResponse(pending?.token, message, pending?.head);
        if (pending !== undefined && !interim) this.#settle();
      },
    });

    downstream.on("data", (chunk: Buffer) => {
      c.downstreamBytes += chunk.length;
      if (!requestsBroken) {
        try {
          requests.push(chunk);
        } catch (error) {
          requestsBroken = true;
          c.framingErrors.push(`relay connection ${connection.id}, request stream: ${(error as Error).message}`);
        }
      }
      if (!upstream.write(chunk)) downstream.pause();
    });
    upstream.on("drain", () => downstream.resume());
    upstream.on("data", (chunk: Buffer) => {
      c.upstreamBytes += chunk.length;
      if (!responsesBroken) {
        try {
          responses.push(chunk);
        } catch (error) {
          responsesBroken = true;
          c.framingErrors.push(`relay connection ${connection.id}, response stream: ${(error as Error).message}`);
        }
      }
      if (!downstream.write(chunk)) upstream.pause();
    });
    downstream.on("drain", () => upstream.resume());

    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      if (!responsesBroken) c.unterminatedBytes += responses.end().unterminatedBytes;
      // Requests that never got an answer (connection dropped) no longer keep the relay busy.
      for (let i = 0; i < queue.length; i++) this.#settle();
      queue.length = 0;
      downstream.destroy();
      upstream.destroy();
      this.#sockets.delete(downstream);
      this.#sockets.delete(upstream);
    };
    downstream.on("end", () => upstream.end());
    upstream.on("end", () => downstream.end());
    downstream.on("close", close);
    upstream.on("close", close);
    downstream.on("error", close);
    upstream.on("error", close);
  }
}
