// The load generator of `npm run load`, run as its own process so it never shares an event loop with what it
// measures: `node bench/load/loadgen.ts '<LoadSpec JSON>'`. It replays the egress meter's traffic mix
// (bench/egress/mix.default.json through generateTraffic: preflights, Zipf-popular item reads, conditional
// revalidations with the ETag the simulated client got earlier, unknown ids, stray paths, and writes straight
// to the origin) over `concurrency` keep-alive HTTP/1.1 connections, one request outstanding per connection,
// cycling through a pattern of `patternSize` events until `warmup + requests` edge requests are answered or
// `maxSeconds` pass. Every response is read by its framing and checked against what its class may answer.
//
// stdout: JSON lines: {"type":"warm"} once the warm-up requests are answered, {"type":"progress",...} every
// 5 s, and {"type":"result",...} at the end.
import { connect, type Socket } from "node:net";
import { createHistogram } from "node:perf_hooks";
import { generateTraffic, loadMix } from "../egress/mix.ts";
import type { EdgeRequest, RequestClass, TrafficEvent, WriteEvent } from "../egress/traffic.ts";

export interface LoadSpec {
  workerPort: number;
  originPort: number;
  requests: number;
  warmup: number;
  maxSeconds: number;
  concurrency: number;
  mixPath: string;
  patternSize: number;
  /** A response slower than this is an error (the connection is dropped). */
  timeoutMs: number;
}

export interface ClassCounts {
  [status: string]: number;
}

export interface LoadResult {
  type: "result";
  /** Edge requests answered, warm-up included. */
  completed: number;
  /** Edge requests answered after the warm-up. */
  measured: number;
  measuredSeconds: number;
  rps: number;
  p50us: number;
  p90us: number;
  p99us: number;
  p999us: number;
  maxUs: number;
  /** Status counts per request class, measured phase and warm-up together. */
  statuses: Record<string, ClassCounts>;
  errors: { unexpectedStatus: number; socket: number; timeout: number; framing: number; examples: string[] };
  writes: { done: number; errors: number };
  connections: number;
  timeBounded: boolean;
}

/** What each class of request may be answered with; anything else is an error. */
const EXPECTED: Record<RequestClass, ReadonlySet<number>> = {
  preflight: new Set([204, 403]),
  read: new Set([200]),
  revalidate: new Set([200, 304]),
  missing: new Set([404]),
  other: new Set([400, 404, 405]),
};

interface Answer {
  status: number;
  etag: string | undefined;
}

class ResponseError extends Error {
  readonly kind: "socket" | "timeout" | "framing";
  constructor(kind: "socket" | "timeout" | "framing", message: string) {
    super(message);
    this.kind = kind;
  }
}

const CRLFCRLF = Buffer.from("\r\n\r\n");

/** One keep-alive connection with at most one request in flight; reconnects after any failure. */
class Connection {
  static opened = 0;
  readonly #port: number;
  readonly #timeoutMs: number;
  #socket: Socket | undefined;
  #buffer: Buffer = Buffer.alloc(0);
  #pending: { head: boolean; resolve(a: Answer): void; reject(e: ResponseError): void; timer: NodeJS.Timeout } | undefined;

  constructor(port: number, timeoutMs: number) {
    this.#port = port;
    this.#timeoutMs = timeoutMs;
  }

  #open(): Socket {
    Connection.opened++;
    const socket = connect(this.#port, "127.0.0.1");
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => {
      this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
      this.#parse();
    });
    const lost = (why: string) => {
      if (this.#socket === socket) this.#socket = undefined;
      this.#fail(new ResponseError("socket", why));
    };
    socket.on("error", (error) => lost(`socket error: ${error.message}`));
    socket.on("close", () => lost("connection closed by the server"));
    return socket;
  }

  #fail(error: ResponseError) {
    const pending = this.#pending;
    if (!pending) return;
    this.#pending = undefined;
    clearTimeout(pending.timer);
    this.#socket?.destroy();
    this.#socket = undefined;
    this.#buffer = Buffer.alloc(0);
    pending.reject(error);
  }

  /** Parses one complete response off the buffer, if there is one. */
  #parse() {
    const pending = this.#pending;
    if (!pending) {
      if (this.#buffer.length > 0) this.#fail(new ResponseError("framing", `unsolicited bytes: ${JSON.stringify(this.#buffer.toString("latin1", 0, 80))}`));
      return;
    }
    for (;;) {
      const end = this.#buffer.indexOf(CRLFCRLF);
      if (end === -1) return;
      const head = this.#buffer.toString("latin1", 0, end);
      const status = Number(head.slice(9, 12));
      if (!head.startsWith("HTTP/1.1 ") || !Number.isInteger(status)) {
        return this.#fail(new ResponseError("framing", `bad status line: ${JSON.stringify(head.slice(0, 80))}`));
      }
      if (status >= 100 && status < 200) {
        this.#buffer = this.#buffer.subarray(end + 4);
        continue;
      }
      const lower = head.toLowerCase();
      let bodyEnd = end + 4;
      if (!pending.head && status !== 204 && status !== 304) {
        const length = /\r\ncontent-length:\s*(\d+)/.exec(lower);
        if (length) {
          bodyEnd += Number(length[1]);
          if (this.#buffer.length < bodyEnd) return;
        } else if (/\r\ntransfer-encoding:[^\r]*chunked/.test(lower)) {
          const chunkedEnd = chunkedBodyEnd(this.#buffer, bodyEnd);
          if (chunkedEnd === "bad") return this.#fail(new ResponseError("framing", "malformed chunked body"));
          if (chunkedEnd === undefined) return;
          bodyEnd = chunkedEnd;
        } else {
          return this.#fail(new ResponseError("framing", `no body framing on a kept-alive connection: ${JSON.stringify(head)}`));
        }
      }
      const etag = /\r\netag:[ \t]*([^\r]*)/i.exec(head)?.[1];
      this.#buffer = this.#buffer.subarray(bodyEnd);
      this.#pending = undefined;
      clearTimeout(pending.timer);
      if (/\r\nconnection:\s*close/.test(lower)) {
        this.#socket?.destroy();
        this.#socket = undefined;
      }
      pending.resolve({ status, etag });
      return;
    }
  }

  send(request: Buffer, head: boolean): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.#fail(new ResponseError("timeout", `no complete response within ${this.#timeoutMs} ms`)), this.#timeoutMs);
      this.#pending = { head, resolve, reject, timer };
      this.#socket ??= this.#open();
      this.#socket.write(request);
    });
  }

  close() {
    this.#socket?.destroy();
  }
}

/** Offset just past a complete chunked body starting at `from`, undefined if incomplete, "bad" if malformed. */
function chunkedBodyEnd(buffer: Buffer, from: number): number | undefined | "bad" {
  let at = from;
  for (;;) {
    const lineEnd = buffer.indexOf("\r\n", at);
    if (lineEnd === -1) return undefined;
    const size = Number.parseInt(buffer.toString("latin1", at, lineEnd), 16);
    if (!Number.isFinite(size) || size < 0) return "bad";
    at = lineEnd + 2;
    if (size === 0) {
      const trailerEnd = buffer.indexOf("\r\n", at);
      return trailerEnd === -1 ? undefined : trailerEnd + 2;
    }
    at += size + 2;
    if (at > buffer.length) return undefined;
  }
}

function edgeRequestBytes(event: EdgeRequest, ifNoneMatch: string | undefined): Buffer {
  let text = `${event.method} ${event.path} HTTP/1.1\r\nHost: edge.load.test\r\n`;
  for (const [name, value] of event.headers) text += `${name}: ${value}\r\n`;
  if (ifNoneMatch !== undefined) text += `If-None-Match: ${ifNoneMatch}\r\n`;
  return Buffer.from(`${text}\r\n`, "latin1");
}

function writeBytes(event: WriteEvent): Buffer {
  const body = Buffer.from(event.body ?? "", "utf8");
  const head = `${event.method} /items/${event.id} HTTP/1.1\r\nHost: origin.load.test\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, "latin1"), body]);
}

async function main(spec: LoadSpec): Promise<void> {
  const mix = loadMix(spec.mixPath);
  const traffic = generateTraffic(mix, `mix ${spec.mixPath}`, { requests: spec.patternSize, warmupRequests: 0 });
  const events: TrafficEvent[] = traffic.events;
  const total = spec.warmup + spec.requests;
  const emit = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);

  const histogram = createHistogram({ lowest: 1, highest: 60_000_000, figures: 3 });
  const statuses: Record<string, ClassCounts> = {};
  const errors = { unexpectedStatus: 0, socket: 0, timeout: 0, framing: 0, examples: [] as string[] };
  const writes = { done: 0, errors: 0 };
  const etags = new Map<string, string>();
  const note = (example: string) => {
    if (errors.examples.length < 10) errors.examples.push(example);
  };

  let cursor = 0;
  let issued = 0;
  let completed = 0;
  let stopping = false;
  const started = performance.now();
  let measuredFrom = spec.warmup === 0 ? started : Number.NaN;
  if (spec.warmup === 0) emit({ type: "warm", completed: 0 });

  const progress = setInterval(() => {
    emit({ type: "progress", completed, seconds: (performance.now() - started) / 1000 });
    if ((performance.now() - started) / 1000 > spec.maxSeconds) stopping = true;
  }, 5_000);

  const loop = async () => {
    const edge = new Connection(spec.workerPort, spec.timeoutMs);
    let origin: Connection | undefined;
    while (!stopping && issued < total) {
      const event = events[cursor++ % events.length]!;
      if (event.kind === "write") {
        origin ??= new Connection(spec.originPort, spec.timeoutMs);
        try {
          const answer = await origin.send(writeBytes(event), false);
          if (answer.status === 204) writes.done++;
          else {
            writes.errors++;
            note(`write ${event.method} /items/${event.id} → ${answer.status}`);
          }
        } catch (error) {
          writes.errors++;
          note(`write ${event.method} /items/${event.id}: ${(error as Error).message}`);
        }
        continue;
      }
      issued++;
      const key = `${event.client} ${event.path}`;
      const inm = event.ifNoneMatch === undefined ? undefined : "value" in event.ifNoneMatch ? event.ifNoneMatch.value : etags.get(key);
      const t0 = process.hrtime.bigint();
      try {
        const answer = await edge.send(edgeRequestBytes(event, inm), event.method === "HEAD");
        const micros = Number((process.hrtime.bigint() - t0) / 1000n);
        const byClass = (statuses[event.class] ??= {});
        byClass[answer.status] = (byClass[answer.status] ?? 0) + 1;
        if (!EXPECTED[event.class].has(answer.status)) {
          errors.unexpectedStatus++;
          note(`${event.method} ${event.path} (${event.class}) → ${answer.status}`);
        }
        if (answer.etag !== undefined && event.id !== undefined) etags.set(key, answer.etag);
        completed++;
        if (completed > spec.warmup) histogram.record(Math.max(1, micros));
        if (completed === spec.warmup) {
          measuredFrom = performance.now();
          emit({ type: "warm", completed });
        }
      } catch (error) {
        const e = error as ResponseError;
        errors[e.kind ?? "socket"]++;
        note(`${event.method} ${event.path} (${event.class}): ${e.message}`);
        completed++;
      }
    }
    edge.close();
    origin?.close();
  };
  await Promise.all(Array.from({ length: spec.concurrency }, loop));
  clearInterval(progress);

  const measuredSeconds = (performance.now() - (Number.isNaN(measuredFrom) ? started : measuredFrom)) / 1000;
  const measured = Math.max(0, completed - spec.warmup);
  const result: LoadResult = {
    type: "result",
    completed,
    measured,
    measuredSeconds,
    rps: measured / measuredSeconds,
    p50us: histogram.percentile(50),
    p90us: histogram.percentile(90),
    p99us: histogram.percentile(99),
    p999us: histogram.percentile(99.9),
    maxUs: histogram.max,
    statuses,
    errors,
    writes,
    connections: Connection.opened,
    timeBounded: completed < total,
  };
  emit(result);
}

await main(JSON.parse(process.argv[2] ?? "{}") as LoadSpec);
