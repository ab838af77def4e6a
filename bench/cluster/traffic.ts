// The cluster benchmark's traffic, open loop, from this process over keep-alive connections:
//   reads   GET /items/:id at a fixed rate per instance, ids from trace.ts (Zipf);
//   writes  PUT /items/:id at a fixed total rate, through the instances in turn, ids from trace.ts;
//   probes  while `probing` is on, every write's id is probed on every instance until it serves the
//           new version (propagation.ts says what the probes measure).
// Every read's ETag and send time and every write's 204 time and ETag are kept for staleness.ts.
//
// Reads, writes and probes use separate connections: the origin hands a connection that carried a PUT to
// node:http for good, and reads must stay on its fast path as the edge's do. Two writes of one id are
// never in flight together (nor a write while its probes run), so commit order is 204 order. A read that
// would exceed `maxInFlight` on its instance is skipped and counted (the rate is a target, not a queue).

import { Agent, request } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import type { InstanceProbes, ProbedWrite } from "./propagation.ts";
import type { CommittedWrite, ObservedRead } from "./staleness.ts";
import { TraceSource, type TraceSpec } from "./trace.ts";

export interface TrafficOptions extends TraceSpec {
  ports: readonly number[];
  /** Reads per second sent to each instance. */
  readsPerSecond: number;
  /** Writes per second in all, through the instances in turn. */
  writesPerSecond: number;
  /** Reads in flight per instance, at most. */
  maxInFlight: number;
  /** Pause between a probe answered with the old version and the next probe of that instance, ms. */
  probeGapMs: number;
  /** Probing of one write stops this long after its 204, ms. */
  probeGiveUpMs: number;
}

export interface TrafficCounts {
  readsSent: number[];
  readErrors: number;
  /** Reads not sent because `maxInFlight` reads were already waiting on that instance. */
  readsSkipped: number;
  writesSent: number;
  writeErrors: number;
  /** Write slots passed over because every id drawn had a write or probes in flight. */
  writesSkipped: number;
  probeErrors: number;
}

interface Answer {
  status: number;
  etag: string | undefined;
  at: number;
}

const TICK_MS = 2;
const REQUEST_TIMEOUT_MS = 5000;

export class Traffic {
  /** Probe the writes sent from now on. */
  probing = false;
  readonly reads: ObservedRead[] = [];
  readonly writes: CommittedWrite[] = [];
  readonly probed: ProbedWrite[] = [];
  readonly counts: TrafficCounts;
  readonly #o: TrafficOptions;
  readonly #agents: { reads: Agent; writes: Agent; probes: Agent }[];
  readonly #trace: TraceSource;
  readonly #inFlight: number[];
  readonly #busy = new Set<string>();
  readonly #revisions = new Map<string, number>();
  readonly #pending = new Set<Promise<unknown>>();
  readonly #probes = new Set<Promise<unknown>>();
  #timer: NodeJS.Timeout | undefined;
  #startedAt = 0;
  #readsIssued = 0;
  #writesIssued = 0;

  constructor(options: TrafficOptions) {
    this.#o = options;
    const n = options.ports.length;
    this.counts = { readsSent: new Array<number>(n).fill(0), readErrors: 0, readsSkipped: 0, writesSent: 0, writeErrors: 0, writesSkipped: 0, probeErrors: 0 };
    this.#agents = options.ports.map(() => ({
      reads: new Agent({ keepAlive: true, maxSockets: options.maxInFlight }),
      writes: new Agent({ keepAlive: true, maxSockets: 8 }),
      probes: new Agent({ keepAlive: true, maxSockets: 16 }),
    }));
    this.#trace = new TraceSource(options);
    this.#inFlight = new Array<number>(n).fill(0);
  }

  start(): void {
    this.#startedAt = performance.now();
    this.#timer = setInterval(() => this.#tick(), TICK_MS);
  }

  /** Stops sending and waits for every request and probe in flight. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
    for (const agents of this.#agents) for (const agent of Object.values(agents)) agent.destroy();
  }

  /** Resolves once the writes sent while `probing` was on, and their probes, have finished. */
  async probesSettled(): Promise<void> {
    while (this.#probes.size > 0) await Promise.allSettled([...this.#probes]);
  }

  #track<T>(promise: Promise<T>, set = this.#pending): Promise<T> {
    set.add(promise);
    void promise.finally(() => set.delete(promise)).catch(() => {});
    return promise;
  }

  #tick(): void {
    const elapsed = performance.now() - this.#startedAt;
    const { ports, readsPerSecond, writesPerSecond } = this.#o;
    // Reads: every instance gets its share of each due slot.
    const readsDue = Math.floor((elapsed * readsPerSecond) / 1000);
    for (; this.#readsIssued < readsDue; this.#readsIssued++) {
      for (let i = 0; i < ports.length; i++) {
        if (this.#inFlight[i]! >= this.#o.maxInFlight) this.counts.readsSkipped++;
        else this.#track(this.#read(i, String(this.#trace.readId())));
      }
    }
    const writesDue = Math.floor((elapsed * writesPerSecond) / 1000);
    for (; this.#writesIssued < writesDue; this.#writesIssued++) {
      const writer = this.#writesIssued % ports.length;
      const id = this.#trace.writeId((drawn) => this.#busy.has(String(drawn)));
      if (id === undefined) this.counts.writesSkipped++;
      else {
        const write = this.#track(this.#write(writer, String(id), this.probing));
        if (this.probing) this.#track(write, this.#probes);
      }
    }
  }

  async #read(instance: number, id: string): Promise<void> {
    this.#inFlight[instance]!++;
    this.counts.readsSent[instance]!++;
    const sentAt = performance.now();
    try {
      const answer = await this.#send(instance, "reads", "GET", id);
      if (answer.status === 200 && answer.etag !== undefined) this.reads.push({ id, instance, sentAt, etag: answer.etag });
      else this.counts.readErrors++;
    } catch {
      this.counts.readErrors++;
    } finally {
      this.#inFlight[instance]!--;
    }
  }

  async #write(writer: number, id: string, probe: boolean): Promise<void> {
    this.#busy.add(id);
    this.counts.writesSent++;
    const revision = (this.#revisions.get(id) ?? 0) + 1;
    this.#revisions.set(id, revision);
    const body = JSON.stringify({ id, name: `item ${id}`, revision, writer: writer + 1 });
    try {
      const answer = await this.#send(writer, "writes", "PUT", id, { "content-type": "application/json" }, body);
      if (answer.status !== 204 || answer.etag === undefined) {
        this.counts.writeErrors++;
        return;
      }
      this.writes.push({ id, etag: answer.etag, committedAt: answer.at });
      if (probe) {
        const probed: ProbedWrite = { id, writer, committedAt: answer.at, instances: [] };
        this.probed.push(probed);
        await Promise.all(this.#o.ports.map((_, i) => this.#probeUntilServed(probed, i, answer.etag!)));
      }
    } catch {
      this.counts.writeErrors++;
    } finally {
      this.#busy.delete(id);
    }
  }

  async #probeUntilServed(write: ProbedWrite, instance: number, etag: string): Promise<void> {
    const p: InstanceProbes = { instance, servedAt: undefined, lastStaleSentAt: undefined, probes: 0, staleAnswers: 0 };
    write.instances.push(p);
    const deadline = write.committedAt + this.#o.probeGiveUpMs;
    for (;;) {
      const sentAt = performance.now();
      p.probes++;
      try {
        const answer = await this.#send(instance, "probes", "GET", write.id, { "if-none-match": etag });
        if (answer.status === 304) {
          p.servedAt = answer.at;
          return;
        }
        if (answer.status === 200) {
          p.staleAnswers++;
          p.lastStaleSentAt = sentAt;
        } else {
          this.counts.probeErrors++;
        }
      } catch {
        this.counts.probeErrors++;
      }
      if (performance.now() >= deadline) return;
      await sleep(this.#o.probeGapMs);
    }
  }

  #send(instance: number, kind: "reads" | "writes" | "probes", method: string, id: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = request(
        { host: "127.0.0.1", port: this.#o.ports[instance], method, path: `/items/${id}`, headers, agent: this.#agents[instance]![kind] },
        (res) => {
          res.resume();
          res.once("end", () => {
            const etag = res.headers.etag;
            resolve({ status: res.statusCode ?? 0, etag, at: performance.now() });
          });
          res.once("error", reject);
        },
      );
      req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`${method} /items/${id}: no answer within ${REQUEST_TIMEOUT_MS} ms`)));
      req.once("error", reject);
      req.end(body);
    });
  }
}
