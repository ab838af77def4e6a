// Replays traffic against one system over HTTP/1.1 keep-alive connections and records, per edge request,
// what the client received (edge→client bytes) and what the origin sent for it (origin→edge bytes, via the
// relay's attribution).
//
// Attribution needs to know which edge request caused an origin exchange. In the "before" system the client
// talks through the relay itself, so the relay connection is the client connection (matched by port). In
// the "after" system the worker opens its own connections to the origin; the replay therefore keeps at
// most one item read per id in flight (reads of other ids proceed concurrently, in order otherwise; the same
// rule applies to the "before" replay so both see the same traffic), and an origin request for /items/ID
// belongs to the one edge request for ID in flight. Origin requests with no
// such request (e.g. a revalidation the worker makes after answering) are counted as "unattributed": they
// still count in the totals, just not in a class.

import { connect, type Socket } from "node:net";
import { HttpStream, headerValue, totalOf, zeroSplit, type ByteSplit, type Message, type MessageHead } from "./http-stream.ts";
import type { RelayConnection } from "./relay.ts";
import type { EdgeRequest, TrafficEvent, WriteEvent } from "./traffic.ts";

export interface RequestRecord {
  event: EdgeRequest;
  /** Status the client got from the edge (0 = failed). */
  status: number;
  /** Whether If-None-Match was actually sent. */
  sentIfNoneMatch: boolean;
  /** Edge → client bytes, recomputed from the parsed message. */
  edge: ByteSplit;
  /** Of `edge.headers`: Access-Control-* lines. */
  edgeCors: number;
  /** Origin → edge bytes of every origin exchange attributed to this request. */
  origin: ByteSplit;
  /** Of `origin.headers`: Access-Control-* lines. */
  originCors: number;
  originExchanges: number;
  /** Statuses of those origin exchanges. */
  originStatuses: number[];
  error: string | undefined;
}

export interface Unattributed {
  bytes: ByteSplit;
  cors: number;
  exchanges: number;
  statuses: Map<number, number>;
}

export type AttributionMode = "connection" | "item-id";

export interface ReplayOptions {
  /** Port the client connects to (the relay for "before", the worker for "after"). */
  port: number;
  concurrency: number;
  mode: AttributionMode;
  /** Sends one write straight to the origin; resolves when it is answered. */
  write: (event: WriteEvent) => Promise<void>;
  requestTimeoutMs?: number;
  /** Start at most this many requests per second (0 or undefined: as fast as the system answers). */
  ratePerSecond?: number;
  /**
   * Let reads of the same id overlap (as real clients do). Totals stay exact; in "item-id" attribution an
   * origin exchange then goes to the oldest in-flight read of that id not yet charged, so the split by
   * class becomes approximate.
   */
  overlap?: boolean;
  onProgress?: (done: number) => void;
}

/** State that spans the warm-up and the measured part of one system's replay. */
export class Replayer {
  readonly #opts: ReplayOptions;
  /** The simulated clients' HTTP caches: `client path` → last ETag received. */
  readonly #etags = new Map<string, string>();
  /** In-flight item reads by id, oldest first. */
  readonly #byId = new Map<string, RequestRecord[]>();
  readonly #byPort = new Map<number, RequestRecord>();
  readonly #idle: Conn[] = [];
  readonly #all = new Set<Conn>();
  /** Edge→client socket bytes (all connections, ever). */
  edgeSocketBytes = 0;
  unattributed: Unattributed = emptyUnattributed();
  done = 0;
  /** When the next request may start (pacing), in performance.now() ms. */
  #nextSlot = 0;

  constructor(options: ReplayOptions) {
    this.#opts = options;
  }

  /** For the relay: which record an origin request belongs to. */
  attribute = (request: MessageHead, connection: RelayConnection): RequestRecord | undefined => {
    if (this.#opts.mode === "connection") return this.#byPort.get(connection.downstreamPort);
    const id = /^\/items\/([A-Za-z0-9_-]{1,128})(?:\?|$)/.exec(request.target ?? "")?.[1];
    if (id === undefined) return undefined;
    const inFlight = this.#byId.get(id);
    if (inFlight === undefined) return undefined;
    const claimed = this.#claimed;
    const record = inFlight.find((r) => !claimed.has(r)) ?? inFlight[0];
    if (record !== undefined) claimed.add(record);
    return record;
  };

  /** Records already charged with an origin exchange (overlap mode picks an unclaimed one first). */
  readonly #claimed = new WeakSet<RequestRecord>();

  /** For the relay: an origin response is complete. */
  onOriginResponse = (record: RequestRecord | undefined, response: Message): void => {
    if (record === undefined) {
      const u = this.unattributed;
      u.exchanges++;
      u.bytes.startLine += response.message.startLine;
      u.bytes.headers += response.message.headers;
      u.bytes.body += response.message.body;
      u.cors += response.corsHeaderBytes;
      u.statuses.set(response.head.status, (u.statuses.get(response.head.status) ?? 0) + 1);
      return;
    }
    record.originExchanges++;
    record.origin.startLine += response.message.startLine;
    record.origin.headers += response.message.headers;
    record.origin.body += response.message.body;
    record.originCors += response.corsHeaderBytes;
    record.originStatuses.push(response.head.status);
  };

  /** Replays `events` in order (item reads of one id never overlap) and resolves with one record per request. */
  async run(events: readonly TrafficEvent[]): Promise<RequestRecord[]> {
    const records: RequestRecord[] = [];
    const blocked: EdgeRequest[] = [];
    let next = 0;
    const writes: Promise<void>[] = [];
    let writeChain = Promise.resolve();
    let wake: (() => void) | undefined;
    const busyIds = new Set<string>();
    const serialKey = this.#opts.overlap === true ? () => undefined : serialKeyOf;

    const take = (): EdgeRequest | undefined => {
      for (let i = 0; i < blocked.length; i++) {
        const e = blocked[i]!;
        const key = serialKey(e);
        if (key === undefined || !busyIds.has(key)) {
          blocked.splice(i, 1);
          return e;
        }
      }
      while (next < events.length && blocked.length < 1024) {
        const e = events[next++]!;
        if (e.kind === "write") {
          // Writers are independent of readers: one connection, in order, not waited for by reads.
          writeChain = writeChain.then(() => this.#opts.write(e));
          writes.push(writeChain);
          continue;
        }
        const key = serialKey(e);
        if (key !== undefined && busyIds.has(key)) {
          blocked.push(e);
          continue;
        }
        return e;
      }
      return undefined;
    };

    const lane = async () => {
      for (;;) {
        const event = take();
        if (event === undefined) {
          if (next >= events.length && blocked.length === 0) return;
          await new Promise<void>((resolve) => {
            const previous = wake;
            wake = () => {
              previous?.();
              resolve();
            };
          });
          continue;
        }
        const key = serialKey(event);
        if (key !== undefined) busyIds.add(key);
        await this.#pace();
        const record = await this.#send(event);
        if (key !== undefined) busyIds.delete(key);
        records.push(record);
        this.done++;
        this.#opts.onProgress?.(this.done);
        const w = wake;
        wake = undefined;
        w?.();
      }
    };

    await Promise.all(Array.from({ length: this.#opts.concurrency }, lane));
    await Promise.all(writes);
    return records;
  }

  /** Waits for this request's start slot when a rate is set (slots are never saved up while behind). */
  async #pace(): Promise<void> {
    const rate = this.#opts.ratePerSecond ?? 0;
    if (rate <= 0) return;
    const now = performance.now();
    const slot = Math.max(now, this.#nextSlot);
    this.#nextSlot = slot + 1000 / rate;
    if (slot - now >= 1) await new Promise((resolve) => setTimeout(resolve, slot - now));
  }

  close(): void {
    for (const conn of this.#all) conn.socket.destroy();
    this.#all.clear();
    this.#idle.length = 0;
  }

  async #send(event: EdgeRequest): Promise<RequestRecord> {
    const record: RequestRecord = {
      event,
      status: 0,
      sentIfNoneMatch: false,
      edge: zeroSplit(),
      edgeCors: 0,
      origin: zeroSplit(),
      originCors: 0,
      originExchanges: 0,
      originStatuses: [],
      error: undefined,
    };
    const cacheKey = `${event.client} ${event.path}`;
    let ifNoneMatch: string | undefined;
    if (event.ifNoneMatch !== undefined) {
      ifNoneMatch = "value" in event.ifNoneMatch ? event.ifNoneMatch.value : this.#etags.get(cacheKey);
    }
    record.sentIfNoneMatch = ifNoneMatch !== undefined;
    const lines = [`${event.method} ${event.path} HTTP/1.1`, `Host: 127.0.0.1:${this.#opts.port}`];
    for (const [name, value] of event.headers) lines.push(`${name}: ${value}`);
    if (ifNoneMatch !== undefined) lines.push(`If-None-Match: ${ifNoneMatch}`);
    const wire = `${lines.join("\r\n")}\r\n\r\n`;

    const key = serialKeyOf(event);
    if (key !== undefined && this.#opts.mode === "item-id") {
      const inFlight = this.#byId.get(key);
      if (inFlight === undefined) this.#byId.set(key, [record]);
      else inFlight.push(record);
    }
    try {
      // A keep-alive connection the server closed while idle fails before any answer: like any HTTP
      // client, try once more on a fresh connection.
      for (let attempt = 0; attempt < 2; attempt++) {
        let conn: Conn;
        try {
          conn = this.#idle.pop() ?? (await this.#open());
        } catch (error) {
          record.error = `cannot connect: ${(error as Error).message}`;
          return record;
        }
        const reused = conn.exchanges > 0;
        if (this.#opts.mode === "connection") this.#byPort.set(conn.localPort, record);
        try {
          const response = await conn.exchange(wire, event.method === "HEAD", this.#opts.requestTimeoutMs ?? 15_000);
          record.status = response.head.status;
          record.edge = response.message;
          record.edgeCors = response.corsHeaderBytes;
          record.error = undefined;
          const etag = headerValue(response.head, "etag");
          if (etag !== undefined && (record.status === 200 || record.status === 304)) this.#etags.set(cacheKey, etag);
          this.#idle.push(conn);
          return record;
        } catch (error) {
          record.error = (error as Error).message;
          conn.socket.destroy();
          this.#all.delete(conn);
          if (!(reused && conn.receivedNothing)) return record;
        } finally {
          if (this.#opts.mode === "connection") this.#byPort.delete(conn.localPort);
        }
      }
    } finally {
      if (key !== undefined && this.#opts.mode === "item-id") {
        const inFlight = this.#byId.get(key);
        const i = inFlight?.indexOf(record) ?? -1;
        if (i !== -1) inFlight!.splice(i, 1);
        if (inFlight?.length === 0) this.#byId.delete(key);
      }
    }
    return record;
  }

  #open(): Promise<Conn> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port: this.#opts.port, host: "127.0.0.1", noDelay: true });
      socket.once("error", reject);
      socket.once("connect", () => {
        socket.off("error", reject);
        const conn = new Conn(socket, (n) => (this.edgeSocketBytes += n), () => {
          this.#all.delete(conn);
          const i = this.#idle.indexOf(conn);
          if (i !== -1) this.#idle.splice(i, 1);
        });
        this.#all.add(conn);
        resolve(conn);
      });
    });
  }
}

/**
 * Item reads of one id never overlap, in both systems: it keeps attribution by id exact in the "after"
 * system, and a client that revalidates always has the answer to its earlier read (so both systems see the
 * same If-None-Match decisions).
 */
function serialKeyOf(e: EdgeRequest): string | undefined {
  return e.id !== undefined && (e.method === "GET" || e.method === "HEAD") ? e.id : undefined;
}

/** One keep-alive client connection: one request at a time. */
class Conn {
  readonly socket: Socket;
  readonly localPort: number;
  /** Exchanges completed on this connection. */
  exchanges = 0;
  /** No byte of an answer to the current request has arrived. */
  receivedNothing = true;
  readonly #stream: HttpStream;
  #pending: { resolve: (m: Message) => void; reject: (e: Error) => void; head: boolean } | undefined;

  constructor(socket: Socket, countBytes: (n: number) => void, onGone: () => void) {
    this.socket = socket;
    this.localPort = socket.localPort ?? 0;
    this.#stream = new HttpStream({
      kind: "response",
      bodyless: (head) => head.status >= 200 && this.#pending?.head === true,
      onMessage: (message) => {
        if (message.head.status < 200) return; // 100 Continue and friends: wait for the real answer
        const p = this.#pending;
        this.#pending = undefined;
        this.exchanges++;
        p?.resolve(message);
      },
    });
    socket.on("data", (chunk: Buffer) => {
      countBytes(chunk.length);
      this.receivedNothing = false;
      try {
        this.#stream.push(chunk);
      } catch (error) {
        this.#fail(new Error(`unparseable response from the edge: ${(error as Error).message}`));
        socket.destroy();
      }
    });
    const gone = () => {
      onGone();
      this.#stream.end();
      this.#fail(new Error("the edge closed the connection before answering"));
    };
    socket.on("close", gone);
    socket.on("error", () => {});
  }

  exchange(wire: string, head: boolean, timeoutMs: number): Promise<Message> {
    this.receivedNothing = true;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#fail(new Error(`no answer within ${timeoutMs} ms`));
        this.socket.destroy();
      }, timeoutMs);
      this.#pending = {
        head,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      this.socket.write(wire, "latin1");
    });
  }

  #fail(error: Error): void {
    const p = this.#pending;
    this.#pending = undefined;
    p?.reject(error);
  }
}

export function emptyUnattributed(): Unattributed {
  return { bytes: zeroSplit(), cors: 0, exchanges: 0, statuses: new Map() };
}

/** Total origin bytes of a record. */
export function originTotal(r: RequestRecord): number {
  return totalOf(r.origin);
}
