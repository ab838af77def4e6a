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
//
// Staleness probes (`probe(id)`) are edge reads that are not traffic: they take their turn in the one-read-
// per-id rule like any read (so an origin exchange they cause is charged to them, not to a traffic read), run
// over connections of their own (their edge→client bytes are not counted with the traffic's), and are kept
// apart in `probeRecords`, so the report can leave them out of the traffic figures and show them on their own.

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
  /** A staleness probe, not traffic. */
  probe?: true;
}

/** What a staleness probe saw. */
export interface ProbeAnswer {
  status: number;
  etag: string | undefined;
  /** performance.now() when the answer was complete (0 when it failed). */
  at: number;
  error: string | undefined;
}

/**
 * Origin 200s and 404s for item paths, with the characters of their ids: what a `Cache-Tag: item:<id>,items`
 * line on each would cost (the Snippet path, where the zone cache takes its tags from the origin's header).
 * Traffic and edge background fetches only; probes are left out.
 */
export interface OriginItemAnswers {
  ok: { count: number; idChars: number };
  notFound: { count: number; idChars: number };
}

export function emptyItemAnswers(): OriginItemAnswers {
  return { ok: { count: 0, idChars: 0 }, notFound: { count: 0, idChars: 0 } };
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

/** Keep-alive connections to the edge, and the bytes the edge sent over them. */
class Pool {
  readonly idle: Conn[] = [];
  readonly all = new Set<Conn>();
  bytes = 0;
}

const ITEM_TARGET = /^\/items\/([A-Za-z0-9_-]{1,128})(?:\?|$)/;

/** State that spans the warm-up and the measured part of one system's replay. */
export class Replayer {
  readonly #opts: ReplayOptions;
  /** The simulated clients' HTTP caches: `client path` → last ETag received. */
  readonly #etags = new Map<string, string>();
  /** In-flight item reads by id, oldest first. */
  readonly #byId = new Map<string, RequestRecord[]>();
  readonly #byPort = new Map<number, RequestRecord>();
  readonly #traffic = new Pool();
  readonly #probes = new Pool();
  /** Ids with a read in flight (traffic or probe), when reads of one id may not overlap. */
  readonly #busy = new Set<string>();
  /** Probes waiting for an id to be free, per id, oldest first: the id is handed to them directly. */
  readonly #probeWaiters = new Map<string, Array<() => void>>();
  /** Wakes the traffic lanes of the current run() (a read finished, an id was freed). */
  #wakeLanes: () => void = () => {};
  unattributed: Unattributed = emptyUnattributed();
  /** Origin 200s/404s for items since the last reset (traffic and background fetches, not probes). */
  originItemAnswers: OriginItemAnswers = emptyItemAnswers();
  /** Probe reads since the last reset. */
  probeRecords: RequestRecord[] = [];
  done = 0;
  /** When the next request may start (pacing), in performance.now() ms. */
  #nextSlot = 0;

  /** Edge→client socket bytes of the traffic (all its connections, ever; probes apart). */
  get edgeSocketBytes(): number {
    return this.#traffic.bytes;
  }

  /** Edge→client socket bytes of the probes. */
  get probeEdgeSocketBytes(): number {
    return this.#probes.bytes;
  }

  constructor(options: ReplayOptions) {
    this.#opts = options;
  }

  /** For the relay: which record an origin request belongs to. */
  attribute = (request: MessageHead, connection: RelayConnection): RequestRecord | undefined => {
    if (this.#opts.mode === "connection") return this.#byPort.get(connection.downstreamPort);
    const id = ITEM_TARGET.exec(request.target ?? "")?.[1];
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

  /** For the relay: an origin response is complete (`request`: the head it answers, when known). */
  onOriginResponse = (record: RequestRecord | undefined, response: Message, request?: MessageHead): void => {
    const status = response.head.status;
    if (record?.probe !== true && (status === 200 || status === 404)) {
      const id = ITEM_TARGET.exec(request?.target ?? "")?.[1];
      if (id !== undefined) {
        const answers = status === 200 ? this.originItemAnswers.ok : this.originItemAnswers.notFound;
        answers.count++;
        answers.idChars += id.length;
      }
    }
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
    const busyIds = this.#busy;
    const serialKey = this.#opts.overlap === true ? () => undefined : serialKeyOf;
    this.#wakeLanes = () => {
      const w = wake;
      wake = undefined;
      w?.();
    };

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
        const record = await this.#send(event, this.#traffic);
        records.push(record);
        this.done++;
        this.#opts.onProgress?.(this.done);
        if (key !== undefined) this.#release(key);
        this.#wakeLanes();
      }
    };

    await Promise.all(Array.from({ length: this.#opts.concurrency }, lane));
    await Promise.all(writes);
    this.#wakeLanes = () => {};
    return records;
  }

  /**
   * One plain GET of an item at the edge (no Origin, no validator, no Cache-Control), for staleness: not
   * traffic. Waits for the id's turn unless reads may overlap; its origin exchange (if any) is charged to a
   * record in `probeRecords`.
   */
  async probe(id: string): Promise<ProbeAnswer> {
    const serial = this.#opts.overlap !== true;
    if (serial) await this.#acquire(id);
    const event: EdgeRequest = { kind: "request", method: "GET", path: `/items/${id}`, id, class: "read", client: "(probe)", ifNoneMatch: undefined, headers: [], warmup: false };
    try {
      const record = await this.#send(event, this.#probes, true);
      this.probeRecords.push(record);
      return { status: record.status, etag: record.answer?.etag, at: record.status === 0 ? 0 : performance.now(), error: record.error };
    } finally {
      if (serial) this.#release(id);
    }
  }

  /** Takes `id` for a probe: at once if free, else handed over by the read that holds it. */
  #acquire(id: string): Promise<void> {
    if (!this.#busy.has(id)) {
      this.#busy.add(id);
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const waiters = this.#probeWaiters.get(id);
      if (waiters === undefined) this.#probeWaiters.set(id, [resolve]);
      else waiters.push(resolve);
    });
  }

  /** Frees `id`: to the oldest probe waiting for it (the id stays busy), else to the lanes. */
  #release(id: string): void {
    const waiters = this.#probeWaiters.get(id);
    const next = waiters?.shift();
    if (waiters?.length === 0) this.#probeWaiters.delete(id);
    if (next !== undefined) {
      next();
      return;
    }
    this.#busy.delete(id);
    this.#wakeLanes();
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
    for (const pool of [this.#traffic, this.#probes]) {
      for (const conn of pool.all) conn.socket.destroy();
      pool.all.clear();
      pool.idle.length = 0;
    }
  }

  async #send(event: EdgeRequest, pool: Pool, probe = false): Promise<RequestRecord & { answer?: { etag: string | undefined } }> {
    const record: RequestRecord & { answer?: { etag: string | undefined } } = {
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
      ...(probe ? { probe: true as const } : {}),
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
          conn = pool.idle.pop() ?? (await this.#open(pool));
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
          if (probe) record.answer = { etag };
          else if (etag !== undefined && (record.status === 200 || record.status === 304)) this.#etags.set(cacheKey, etag);
          pool.idle.push(conn);
          return record;
        } catch (error) {
          record.error = (error as Error).message;
          conn.socket.destroy();
          pool.all.delete(conn);
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

  #open(pool: Pool): Promise<Conn> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port: this.#opts.port, host: "127.0.0.1", noDelay: true });
      socket.once("error", reject);
      socket.once("connect", () => {
        socket.off("error", reject);
        const conn = new Conn(socket, (n) => (pool.bytes += n), () => {
          pool.all.delete(conn);
          const i = pool.idle.indexOf(conn);
          if (i !== -1) pool.idle.splice(i, 1);
        });
        pool.all.add(conn);
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
