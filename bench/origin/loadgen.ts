// Closed-loop HTTP/1.1 load generator for bench/origin.ts, run as its own process (so it never shares
// the server's event loop) and pinned to its own core when `taskset` is available. Each keep-alive
// connection keeps `pipeline` requests outstanding (1 by default: send, read the whole response by its
// framing, record the latency, send the next). Usage: node bench/origin/loadgen.ts '<LoadSpec JSON>';
// prints one JSON line (LoadResult) on stdout, after a line `measuring` when `announce` is set.

import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { createHistogram } from "node:perf_hooks";
import { prng } from "../lib/random.ts";
import { hotSet } from "./hot-set.ts";
import { zipfSequence } from "./zipf.ts";

/** Which ids the requests name: `first` … `first + count - 1`. */
export type IdDraw =
  /** Zipf(s) over the ids, hot ids scattered over the range by a seeded permutation. */
  | { kind: "zipf"; first: number; count: number; s: number }
  /** Uniformly at random. */
  | { kind: "uniform"; first: number; count: number }
  /**
   * Uniformly at random among `size` ids picked at random (by `seed`) from the range: a small working
   * set scattered over a large id space. The whole range when `size` ≥ `count`.
   */
  | { kind: "sample"; first: number; count: number; size: number; seed: number }
  /** Each id once, in order; the run ends when every one is answered (warm-ups, scans). */
  | { kind: "each"; first: number; count: number };

export interface LoadSpec {
  port: number;
  connections: number;
  /** "warm": every id once, in order; "200": plain GETs; "304": GETs with If-None-Match: `ifNoneMatch`. */
  mode: "warm" | "200" | "304";
  /** The seeded items' ETag (all version 1 of one store session: the same for every id). */
  ifNoneMatch?: string;
  /** Without `ids`: ids 1…items, Zipf(zipfS) (or each once for "warm"). */
  items?: number;
  zipfS?: number;
  ids?: IdDraw;
  /** Requests outstanding per connection (pipelining); 1 = none. */
  pipeline?: number;
  seed: number;
  warmupMs: number;
  durationMs: number;
  maxRequests: number;
  token?: string;
  /** Server process to sample CPU time from (/proc), for the utilisation column. */
  serverPid?: number;
  clkTck?: number;
  /** Print `measuring` on stdout when the measured period starts. */
  announce?: boolean;
}

export interface LoadResult {
  requests: number;
  seconds: number;
  rps: number;
  bytes: number;
  bytesPerResponse: number;
  p50us: number;
  p99us: number;
  statuses: Record<string, number>;
  errors: number;
  serverCpu: number | null;
  loadgenCpu: number;
  sampleResponse: string;
}

/** Draws precomputed per run (the per-request cost is one array read whatever the distribution). */
const SEQUENCE_LENGTH = 1 << 20;

const spec = JSON.parse(process.argv[2] ?? "{}") as LoadSpec;
function drawOf(spec: LoadSpec): IdDraw {
  if (spec.ids !== undefined) return spec.ids;
  if (spec.items === undefined) throw new Error("a LoadSpec needs `ids` or `items`");
  return spec.mode === "warm" ? { kind: "each", first: 1, count: spec.items } : { kind: "zipf", first: 1, count: spec.items, s: spec.zipfS ?? 0.93 };
}
const draw = drawOf(spec);
const pipeline = Math.max(1, Math.floor(spec.pipeline ?? 1));
/** A run over a fixed list of ids is measured from its first request to its last answer. */
const finite = draw.kind === "each";

function requestEncoder(): (id: number) => Buffer | string {
  const token = spec.token ? `x-origin-token: ${spec.token}\r\n` : "";
  if (spec.mode === "304" && spec.ifNoneMatch === undefined) throw new Error("mode 304 needs ifNoneMatch");
  const inm = spec.mode === "304" ? `If-None-Match: ${spec.ifNoneMatch}\r\n` : "";
  const tail = ` HTTP/1.1\r\nHost: origin\r\n${token}${inm}\r\n`;
  // With `ids` (bench:origin --scale, up to tens of millions of ids) every request is encoded as it is
  // sent, the same way for every id space, so the generator's cost per request does not depend on it.
  // Without (the comparison bench, 100k items), every request is pre-encoded as before.
  if (spec.ids !== undefined) return (id) => `GET /items/${id}${tail}`;
  const table: Buffer[] = [];
  for (let i = 0; i < draw.count; i++) table.push(Buffer.from(`GET /items/${draw.first + i}${tail}`, "latin1"));
  return (id) => table[id - draw.first]!;
}

/** The ids to request, in order (cycled when the run outlasts them). */
function idSequence(): Float64Array | Int32Array {
  switch (draw.kind) {
    case "each":
      return Float64Array.from({ length: draw.count }, (_, i) => draw.first + i);
    case "zipf": {
      const ids = zipfSequence(draw.count, draw.s, SEQUENCE_LENGTH, spec.seed);
      if (draw.first !== 1) for (let i = 0; i < ids.length; i++) ids[i] = ids[i]! - 1 + draw.first;
      return ids;
    }
    case "uniform": {
      const random = prng(spec.seed);
      return Float64Array.from({ length: SEQUENCE_LENGTH }, () => draw.first + Math.floor(random() * draw.count));
    }
    case "sample": {
      const set = hotSet(draw.first, draw.count, draw.size, draw.seed);
      const random = prng(spec.seed);
      return Float64Array.from({ length: SEQUENCE_LENGTH }, () => set[Math.floor(random() * set.length)]!);
    }
  }
}

function cpuTicks(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]); // utime + stime
  } catch {
    return null;
  }
}

const CRLFCRLF = Buffer.from("\r\n\r\n");
const CONTENT_LENGTH = "content-length:";

/** Length of the first complete response in `buf`, 0 if incomplete. */
function responseLength(buf: Buffer): number {
  const end = buf.indexOf(CRLFCRLF);
  if (end === -1) return 0;
  const status = (buf[9]! - 48) * 100 + (buf[10]! - 48) * 10 + (buf[11]! - 48);
  let body = 0;
  if (status !== 304 && status !== 204) {
    const head = buf.toString("latin1", 0, end).toLowerCase();
    const at = head.indexOf(CONTENT_LENGTH);
    if (at === -1) throw new Error(`response without Content-Length: ${JSON.stringify(head)}`);
    body = parseInt(head.slice(at + CONTENT_LENGTH.length), 10);
  }
  const total = end + 4 + body;
  return buf.length >= total ? total : 0;
}

async function main(): Promise<void> {
  const encode = requestEncoder();
  const sequence = idSequence();
  const histogram = createHistogram();
  const statuses: Record<string, number> = {};
  let next = 0;
  let measuring = false;
  let stopping = false;
  let done = 0;
  let bytes = 0;
  let errors = 0;
  let sampleResponse = "";
  let measureStart = performance.now();
  let serverTicks0: number | null = null;
  let cpu0 = process.cpuUsage();
  const limit = finite ? draw.count : spec.maxRequests;

  const begin = () => {
    measuring = true;
    measureStart = performance.now();
    serverTicks0 = cpuTicks(spec.serverPid);
    cpu0 = process.cpuUsage();
    if (spec.announce) process.stdout.write("measuring\n");
  };
  if (finite) begin();

  let finished!: () => void;
  const allDone = new Promise<void>((r) => (finished = r));
  let open = spec.connections;

  const run = (socket: Socket) => {
    let pending: Buffer | null = null;
    /** Send times of the requests outstanding on this connection, oldest first. */
    const sentAt: number[] = [];
    const exhausted = () => stopping || (finite && next >= draw.count);
    const send = () => {
      const id = sequence[next++ % sequence.length]!;
      sentAt.push(performance.now());
      socket.write(encode(id), "latin1");
    };
    const fill = () => {
      while (sentAt.length < pipeline && !exhausted()) send();
      if (sentAt.length === 0) socket.end();
    };
    socket.on("data", (chunk: Buffer) => {
      let buf = pending === null ? chunk : Buffer.concat([pending, chunk]);
      pending = null;
      for (;;) {
        const len = responseLength(buf);
        if (len === 0) {
          if (buf.length > 0) pending = buf;
          break;
        }
        const status = (buf[9]! - 48) * 100 + (buf[10]! - 48) * 10 + (buf[11]! - 48);
        const sent = sentAt.shift();
        if (sent === undefined) errors++; // an answer nobody asked for
        if (measuring && sent !== undefined) {
          histogram.record(Math.max(1, Math.round((performance.now() - sent) * 1e6)));
          done++;
          bytes += len;
          statuses[status] = (statuses[status] ?? 0) + 1;
          if (sampleResponse === "") sampleResponse = buf.toString("latin1", 0, len);
          if (done >= limit) stopping = true;
        }
        buf = buf.subarray(len);
        if (pipeline === 1 && buf.length > 0) errors++; // no pipelining: nothing may follow a response
        if (buf.length === 0) break;
      }
      fill();
    });
    socket.on("error", () => {
      errors++;
    });
    socket.on("close", () => {
      if (sentAt.length > 0) errors++; // closed with requests unanswered
      if (--open === 0) finished();
    });
    fill();
  };

  for (let i = 0; i < spec.connections; i++) {
    const socket = connect({ port: spec.port, host: "127.0.0.1", noDelay: true });
    socket.once("connect", () => run(socket));
    socket.on("error", () => {
      errors++;
    });
  }

  let timer: NodeJS.Timeout | undefined;
  let warmup: NodeJS.Timeout | undefined;
  if (!finite) {
    warmup = setTimeout(begin, spec.warmupMs);
    timer = setTimeout(() => (stopping = true), spec.warmupMs + spec.durationMs);
  }
  await allDone;
  clearTimeout(timer);
  clearTimeout(warmup);
  const seconds = (performance.now() - measureStart) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const serverTicks1 = cpuTicks(spec.serverPid);
  const result: LoadResult = {
    requests: done,
    seconds,
    rps: done / seconds,
    bytes,
    bytesPerResponse: done > 0 ? bytes / done : 0,
    p50us: histogram.count > 0 ? histogram.percentile(50) / 1000 : 0,
    p99us: histogram.count > 0 ? histogram.percentile(99) / 1000 : 0,
    statuses,
    errors,
    serverCpu:
      serverTicks0 !== null && serverTicks1 !== null ? (serverTicks1 - serverTicks0) / (spec.clkTck ?? 100) / seconds : null,
    loadgenCpu: (cpu.user + cpu.system) / 1e6 / seconds,
    sampleResponse,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

await main();
