// Closed-loop HTTP/1.1 load generator for bench/origin.ts, run as its own process (so it never shares
// the server's event loop) and pinned to its own core when `taskset` is available. Each connection is
// kept alive with one request outstanding (no pipelining): send, read the whole response by its framing,
// record the latency, send the next. Usage: node bench/origin/loadgen.ts '<LoadSpec JSON>'; prints one
// JSON line (LoadResult) on stdout.

import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { createHistogram } from "node:perf_hooks";
import { zipfSequence } from "./zipf.ts";

export interface LoadSpec {
  port: number;
  connections: number;
  /** "warm": every id once, in order; "200": plain GETs; "304": GETs with If-None-Match: `ifNoneMatch`. */
  mode: "warm" | "200" | "304";
  /** The seeded items' ETag (all version 1 of one store session: the same for every id). */
  ifNoneMatch?: string;
  items: number;
  zipfS: number;
  seed: number;
  warmupMs: number;
  durationMs: number;
  maxRequests: number;
  token?: string;
  /** Server process to sample CPU time from (/proc), for the utilisation column. */
  serverPid?: number;
  clkTck?: number;
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

const spec = JSON.parse(process.argv[2] ?? "{}") as LoadSpec;

function buildRequests(): Buffer[] {
  const token = spec.token ? `x-origin-token: ${spec.token}\r\n` : "";
  if (spec.mode === "304" && spec.ifNoneMatch === undefined) throw new Error("mode 304 needs ifNoneMatch");
  const inm = spec.mode === "304" ? `If-None-Match: ${spec.ifNoneMatch}\r\n` : "";
  const out: Buffer[] = [Buffer.alloc(0)];
  for (let id = 1; id <= spec.items; id++) {
    out.push(Buffer.from(`GET /items/${id} HTTP/1.1\r\nHost: origin\r\n${token}${inm}\r\n`, "latin1"));
  }
  return out;
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
  const requests = buildRequests();
  const sequence =
    spec.mode === "warm"
      ? Int32Array.from({ length: spec.items }, (_, i) => i + 1)
      : zipfSequence(spec.items, spec.zipfS, 1 << 20, spec.seed);
  const histogram = createHistogram();
  const statuses: Record<string, number> = {};
  let next = 0;
  let measuring = spec.mode === "warm";
  let stopping = false;
  let done = 0;
  let bytes = 0;
  let errors = 0;
  let sampleResponse = "";
  let measureStart = performance.now();
  let serverTicks0: number | null = cpuTicks(spec.serverPid);
  let cpu0 = process.cpuUsage();
  const limit = spec.mode === "warm" ? spec.items : spec.maxRequests;

  const begin = () => {
    measuring = true;
    measureStart = performance.now();
    serverTicks0 = cpuTicks(spec.serverPid);
    cpu0 = process.cpuUsage();
  };

  let finished!: () => void;
  const allDone = new Promise<void>((r) => (finished = r));
  let open = spec.connections;

  const run = (socket: Socket) => {
    let pending: Buffer | null = null;
    let sentAt = 0;
    const send = () => {
      if (stopping || (spec.mode === "warm" && next >= spec.items)) {
        socket.end();
        return;
      }
      const id = sequence[next++ % sequence.length]!;
      sentAt = performance.now();
      socket.write(requests[id]!);
    };
    socket.on("data", (chunk: Buffer) => {
      let buf = pending === null ? chunk : Buffer.concat([pending, chunk]);
      pending = null;
      for (;;) {
        const len = responseLength(buf);
        if (len === 0) {
          if (buf.length > 0) pending = buf;
          return;
        }
        const status = (buf[9]! - 48) * 100 + (buf[10]! - 48) * 10 + (buf[11]! - 48);
        if (measuring) {
          histogram.record(Math.max(1, Math.round((performance.now() - sentAt) * 1e6)));
          done++;
          bytes += len;
          statuses[status] = (statuses[status] ?? 0) + 1;
          if (sampleResponse === "") sampleResponse = buf.toString("latin1", 0, len);
          if (done >= limit) stopping = true;
        }
        buf = buf.subarray(len);
        if (buf.length > 0) errors++; // no pipelining: nothing may follow a response
        send();
        if (buf.length === 0) return;
      }
    });
    socket.on("error", () => {
      errors++;
    });
    socket.on("close", () => {
      if (--open === 0) finished();
    });
    send();
  };

  for (let i = 0; i < spec.connections; i++) {
    const socket = connect({ port: spec.port, host: "127.0.0.1", noDelay: true });
    socket.once("connect", () => run(socket));
    socket.on("error", () => {
      errors++;
    });
  }

  let timer: NodeJS.Timeout | undefined;
  if (spec.mode !== "warm") {
    setTimeout(begin, spec.warmupMs);
    timer = setTimeout(() => (stopping = true), spec.warmupMs + spec.durationMs);
  }
  await allDone;
  clearTimeout(timer);
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
