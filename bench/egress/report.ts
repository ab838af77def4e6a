// Turning two phase results into the report: per-request figures per class and overall, the socket vs
// message agreement, the before/after ratio and the $/month projection. Pure functions (tested in
// test/node/egress-report.test.ts); the terminal table and the JSON come from the same object.

import { totalOf, type ByteSplit } from "./http-stream.ts";
import type { PhaseResult, SystemName } from "./phase.ts";
import { CLASS_LABELS, REQUEST_CLASSES, type RequestClass } from "./traffic.ts";

export const REPORT_SCHEMA = "slim-edge/egress-report@1";
/** Socket and message counts must agree within this fraction. */
export const AGREEMENT_TOLERANCE = 0.01;
/** Requests that may fail before the run is refused. */
export const ERROR_TOLERANCE = 0.001;
export const DAYS_PER_MONTH = 30;
export const BYTES_PER_GB = 1e9;

export interface Pricing {
  requestsPerDay: number;
  usdPerGb: number;
}

export interface PerRequestSplit {
  statusLine: number;
  /** All header lines and the blank line, CORS included. */
  headers: number;
  /** Of `headers`: Access-Control-* lines. */
  corsHeaders: number;
  body: number;
  total: number;
}

export interface ClassFigures {
  label: string;
  requests: number;
  /** Of all measured requests. */
  share: number;
  /** Origin → edge bytes attributed to these requests, per request. */
  originBytesPerRequest: number;
  origin: PerRequestSplit;
  /** Requests answered without any origin exchange. */
  answeredAtEdgeShare: number;
  originExchangesPerRequest: number;
  edgeToClientBytesPerRequest: number;
  edgeStatuses: Record<string, number>;
  originStatuses: Record<string, number>;
}

export interface Agreement {
  socketBytes: number;
  messageBytes: number;
  /** |socket − messages| / socket. */
  difference: number;
  ok: boolean;
}

export interface SystemReport {
  system: SystemName;
  requests: number;
  warmupRequests: number;
  writes: number;
  seconds: number;
  requestsPerSecond: number;
  errors: number;
  errorSamples: string[];
  /** The headline: origin → edge socket bytes per edge request. */
  originBytesPerRequest: number;
  /** The same from parsed messages (status line + headers + body). */
  originBytesPerRequestFromMessages: number;
  origin: PerRequestSplit;
  originAgreement: Agreement;
  originExchanges: number;
  answeredAtEdgeShare: number;
  edgeToClientBytesPerRequest: number;
  edgeToClientAgreement: Agreement;
  usdPerMonth: number;
  revalidationsSent: number;
  revalidationsWithoutEtag: number;
  /** Origin exchanges no edge request in flight could claim (background work of the edge). */
  unattributed: { exchanges: number; bytes: number; statuses: Record<string, number> };
  framingErrors: string[];
  /** The relay's raw counters over the measured part. */
  socket: { originToEdgeBytes: number; edgeToOriginBytes: number; originConnections: number; originResponses: number };
  classes: Record<RequestClass, ClassFigures>;
}

export interface ClassComparison {
  class: RequestClass;
  label: string;
  share: number;
  before: number;
  after: number;
  ratio: number | null;
  afterAnsweredAtEdgeShare: number;
}

export interface EgressReport {
  schema: string;
  generatedAt: string;
  command: string;
  traffic: {
    source: string;
    description: string;
    requests: number;
    warmupRequests: number;
    writes: number;
    concurrency: number;
    /** Pace of the "after" replay (0 = unpaced). */
    ratePerSecond: number;
    seed: number | null;
    workerVars: Record<string, string>;
    /** Reads of one id were allowed to overlap (--overlap): the split by class is approximate. */
    overlappingReads: boolean;
  };
  pricing: Pricing & { daysPerMonth: number; bytesPerGb: number };
  before: SystemReport;
  after: SystemReport;
  /** after.originBytesPerRequest / before.originBytesPerRequest. */
  ratio: number;
  saving: { share: number; bytesPerRequest: number; usdPerMonth: number };
  target: { maxRatio: number; met: boolean };
  classes: ClassComparison[];
  /** Caveats that do not invalidate the bytes (e.g. the machine could not keep the pace). */
  notes: string[];
  problems: string[];
  ok: boolean;
}

export function usdPerMonth(bytesPerRequest: number, pricing: Pricing): number {
  return ((bytesPerRequest * pricing.requestsPerDay * DAYS_PER_MONTH) / BYTES_PER_GB) * pricing.usdPerGb;
}

function agreement(socketBytes: number, messageBytes: number): Agreement {
  const difference = socketBytes === 0 ? (messageBytes === 0 ? 0 : 1) : Math.abs(socketBytes - messageBytes) / socketBytes;
  return { socketBytes, messageBytes, difference, ok: difference <= AGREEMENT_TOLERANCE };
}

function perRequest(split: ByteSplit, cors: number, n: number): PerRequestSplit {
  const d = n === 0 ? 1 : n;
  return { statusLine: split.startLine / d, headers: split.headers / d, corsHeaders: cors / d, body: split.body / d, total: totalOf(split) / d };
}

function countInto(map: Record<string, number>, key: number): void {
  const k = String(key);
  map[k] = (map[k] ?? 0) + 1;
}

export function summarizeSystem(phase: PhaseResult, pricing: Pricing): SystemReport {
  const n = phase.records.length;
  const byClass = new Map<RequestClass, { n: number; origin: ByteSplit; cors: number; atEdge: number; exchanges: number; edge: number; edgeStatuses: Record<string, number>; originStatuses: Record<string, number> }>();
  for (const c of REQUEST_CLASSES) {
    byClass.set(c, { n: 0, origin: { startLine: 0, headers: 0, body: 0 }, cors: 0, atEdge: 0, exchanges: 0, edge: 0, edgeStatuses: {}, originStatuses: {} });
  }
  const origin: ByteSplit = { startLine: 0, headers: 0, body: 0 };
  let originCors = 0;
  let edgeMessages = 0;
  let atEdge = 0;
  let exchanges = 0;
  let errors = 0;
  const errorSamples: string[] = [];
  let revalidationsSent = 0;
  let revalidationsWithoutEtag = 0;
  for (const r of phase.records) {
    const c = byClass.get(r.event.class)!;
    c.n++;
    c.origin.startLine += r.origin.startLine;
    c.origin.headers += r.origin.headers;
    c.origin.body += r.origin.body;
    c.cors += r.originCors;
    c.exchanges += r.originExchanges;
    c.edge += totalOf(r.edge);
    countInto(c.edgeStatuses, r.status);
    for (const s of r.originStatuses) countInto(c.originStatuses, s);
    if (r.originExchanges === 0) {
      c.atEdge++;
      atEdge++;
    }
    origin.startLine += r.origin.startLine;
    origin.headers += r.origin.headers;
    origin.body += r.origin.body;
    originCors += r.originCors;
    exchanges += r.originExchanges;
    edgeMessages += totalOf(r.edge);
    if (r.error !== undefined) {
      errors++;
      if (errorSamples.length < 5) errorSamples.push(`${r.event.method} ${r.event.path}: ${r.error}`);
    }
    if (r.event.class === "revalidate") {
      if (r.sentIfNoneMatch) revalidationsSent++;
      else revalidationsWithoutEtag++;
    }
  }
  // Unattributed exchanges are part of the origin's egress: in the totals, not in a class.
  const u = phase.unattributed;
  origin.startLine += u.bytes.startLine;
  origin.headers += u.bytes.headers;
  origin.body += u.bytes.body;
  originCors += u.cors;
  const messageBytes = totalOf(origin);
  const d = n === 0 ? 1 : n;
  const classes = {} as Record<RequestClass, ClassFigures>;
  for (const [name, c] of byClass) {
    const cd = c.n === 0 ? 1 : c.n;
    classes[name] = {
      label: CLASS_LABELS[name],
      requests: c.n,
      share: c.n / d,
      originBytesPerRequest: totalOf(c.origin) / cd,
      origin: perRequest(c.origin, c.cors, c.n),
      answeredAtEdgeShare: c.atEdge / cd,
      originExchangesPerRequest: c.exchanges / cd,
      edgeToClientBytesPerRequest: c.edge / cd,
      edgeStatuses: c.edgeStatuses,
      originStatuses: c.originStatuses,
    };
  }
  const statuses: Record<string, number> = {};
  for (const [s, k] of u.statuses) statuses[String(s)] = k;
  const socketPerRequest = phase.socket.upstreamBytes / d;
  return {
    system: phase.system,
    requests: n,
    warmupRequests: phase.warmupRequests,
    writes: phase.writes,
    seconds: phase.seconds,
    requestsPerSecond: n / (phase.seconds || 1),
    errors,
    errorSamples,
    originBytesPerRequest: socketPerRequest,
    originBytesPerRequestFromMessages: messageBytes / d,
    origin: perRequest(origin, originCors, n),
    originAgreement: agreement(phase.socket.upstreamBytes, messageBytes),
    originExchanges: exchanges + u.exchanges,
    answeredAtEdgeShare: atEdge / d,
    edgeToClientBytesPerRequest: phase.edgeSocketBytes / d,
    edgeToClientAgreement: agreement(phase.edgeSocketBytes, edgeMessages),
    usdPerMonth: usdPerMonth(socketPerRequest, pricing),
    revalidationsSent,
    revalidationsWithoutEtag,
    unattributed: { exchanges: u.exchanges, bytes: totalOf(u.bytes), statuses },
    framingErrors: phase.socket.framingErrors,
    socket: {
      originToEdgeBytes: phase.socket.upstreamBytes,
      edgeToOriginBytes: phase.socket.downstreamBytes,
      originConnections: phase.socket.connections,
      originResponses: phase.socket.responses,
    },
    classes,
  };
}

export interface ReportInput {
  before: PhaseResult;
  after: PhaseResult;
  pricing: Pricing;
  maxRatio: number;
  command: string;
  traffic: EgressReport["traffic"];
  now?: Date;
}

export function buildReport(input: ReportInput): EgressReport {
  const before = summarizeSystem(input.before, input.pricing);
  const after = summarizeSystem(input.after, input.pricing);
  const ratio = before.originBytesPerRequest === 0 ? 0 : after.originBytesPerRequest / before.originBytesPerRequest;
  const classes: ClassComparison[] = REQUEST_CLASSES.filter((c) => before.classes[c].requests + after.classes[c].requests > 0).map((c) => {
    const b = before.classes[c];
    const a = after.classes[c];
    return {
      class: c,
      label: b.label,
      share: b.share,
      before: b.originBytesPerRequest,
      after: a.originBytesPerRequest,
      ratio: b.originBytesPerRequest === 0 ? null : a.originBytesPerRequest / b.originBytesPerRequest,
      afterAnsweredAtEdgeShare: a.answeredAtEdgeShare,
    };
  });
  const problems = problemsOf(before, input.before).concat(problemsOf(after, input.after));
  if (before.requests !== after.requests) problems.push(`before replayed ${before.requests} requests, after ${after.requests}: not the same traffic`);
  problems.push(...sameAnswers(before, after));
  const notes: string[] = [];
  const rate = input.traffic.ratePerSecond;
  if (rate > 0 && after.seconds > 5 && after.requestsPerSecond < 0.9 * rate) {
    notes.push(
      `the "after" replay ran at ${Math.round(after.requestsPerSecond)} req/s, below the ${rate} req/s pace: fewer requests ` +
        "per EDGE_CACHE_TTL window than intended, so the edge cache looks worse than it would at the set pace (lower --rate for a run that keeps up)",
    );
  }
  for (const s of [before, after]) {
    if (s.errors > 0 && s.errors / s.requests <= ERROR_TOLERANCE) notes.push(`${s.system}: ${s.errors} requests failed (within tolerance): ${s.errorSamples.join("; ")}`);
    if (s.revalidationsWithoutEtag > 0) notes.push(`${s.system}: ${s.revalidationsWithoutEtag} revalidating requests had no ETag yet and went without If-None-Match`);
  }
  return {
    schema: REPORT_SCHEMA,
    generatedAt: (input.now ?? new Date()).toISOString(),
    command: input.command,
    traffic: input.traffic,
    pricing: { ...input.pricing, daysPerMonth: DAYS_PER_MONTH, bytesPerGb: BYTES_PER_GB },
    before,
    after,
    ratio,
    saving: {
      share: 1 - ratio,
      bytesPerRequest: before.originBytesPerRequest - after.originBytesPerRequest,
      usdPerMonth: before.usdPerMonth - after.usdPerMonth,
    },
    target: { maxRatio: input.maxRatio, met: ratio <= input.maxRatio },
    classes,
    notes,
    problems,
    ok: problems.length === 0,
  };
}

/**
 * A system that answers wrongly can look cheap (a misconfigured worker answering 500 sends no origin
 * bytes at all): both systems must answer the same traffic the same way.
 */
function sameAnswers(before: SystemReport, after: SystemReport): string[] {
  const problems: string[] = [];
  for (const s of [before, after]) {
    let errors = 0;
    for (const c of Object.values(s.classes)) for (const [status, n] of Object.entries(c.edgeStatuses)) if (Number(status) >= 500) errors += n;
    if (s.requests > 0 && errors / s.requests > 0.01) {
      problems.push(`${s.system}: ${errors} of ${s.requests} edge answers were 5xx (a misconfigured or failing system is not a saving)`);
    }
  }
  const share = (s: SystemReport, cls: RequestClass, statuses: string[]) => {
    const c = s.classes[cls];
    if (c.requests === 0) return 0;
    return statuses.reduce((n, st) => n + (c.edgeStatuses[st] ?? 0), 0) / c.requests;
  };
  for (const [cls, statuses] of [
    ["read", ["200"]],
    ["revalidate", ["200", "304"]],
    ["missing", ["404"]],
  ] as const) {
    const b = share(before, cls, [...statuses]);
    const a = share(after, cls, [...statuses]);
    if (before.classes[cls].requests > 0 && Math.abs(a - b) > 0.05) {
      problems.push(
        `${cls}: ${(b * 100).toFixed(1)}% of answers were ${statuses.join("/")} before and ${(a * 100).toFixed(1)}% after: ` +
          "the two systems did not answer the same traffic the same way",
      );
    }
  }
  return problems;
}

/** What makes a run's figures untrustworthy: each is a reason to fail loudly. */
function problemsOf(s: SystemReport, phase: PhaseResult): string[] {
  const problems: string[] = [];
  const pct = (x: number) => `${(x * 100).toFixed(2)}%`;
  if (!s.originAgreement.ok) {
    problems.push(
      `${s.system}: origin bytes from parsed messages (${s.originAgreement.messageBytes}) and on the socket ` +
        `(${s.originAgreement.socketBytes}) differ by ${pct(s.originAgreement.difference)}, more than ${pct(AGREEMENT_TOLERANCE)}`,
    );
  }
  if (!s.edgeToClientAgreement.ok) {
    problems.push(
      `${s.system}: edge→client bytes from parsed messages (${s.edgeToClientAgreement.messageBytes}) and on the ` +
        `client sockets (${s.edgeToClientAgreement.socketBytes}) differ by ${pct(s.edgeToClientAgreement.difference)}`,
    );
  }
  for (const e of s.framingErrors) problems.push(`${s.system}: ${e}`);
  if (s.requests > 0 && s.errors / s.requests > ERROR_TOLERANCE) {
    problems.push(`${s.system}: ${s.errors} of ${s.requests} requests failed (e.g. ${s.errorSamples.join("; ")})`);
  }
  if (phase.openAtEnd > 0) problems.push(`${s.system}: ${phase.openAtEnd} origin exchanges were still open when the run ended`);
  if (phase.socket.unpairedResponses > 0) problems.push(`${s.system}: ${phase.socket.unpairedResponses} origin responses arrived with no request`);
  return problems;
}
