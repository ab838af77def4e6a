// Turning the phase results into the report: per-request figures per class and overall, the socket vs
// message agreement, the before/after ratio and the $/month projection, and, for slim-edge's two ways of keeping
// the edge fresh (TTL mode = `after`, purge mode = `purge`), staleness after writes and the purge API's figures.
// Pure functions (tested in test/node/egress-report.test.ts); the terminal table and the JSON come from the same
// object. Reports written before the modes existed have no `ttl`/`purge`: every reader checks for them.

import type { AppliedPurge } from "../../scripts/lib/local-edge.ts";
import type { RecordedCall } from "../../scripts/lib/cloudflare-api-stand-in.ts";
import type { PurgePlanName } from "../../src/origin/purge/token-bucket.ts";
import { totalOf, type ByteSplit } from "./http-stream.ts";
import { probeOriginBytes, type PhaseResult, type PrefillFigures, type SystemName } from "./phase.ts";
import type { EdgeStart } from "./prefill.ts";
import { cacheTagCost, PRODUCTION_WRITE_SHARE, purgeApiFigures, rateLimitProjection, type CacheTagCost, type PurgeApiFigures, type RateLimitProjection } from "./purge-figures.ts";
import { summarizeStaleness, type StalenessSummary } from "./staleness.ts";
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
  /**
   * The measured requests that were the first read of their id in the run (a cold edge pays them whatever its
   * TTL), the origin bytes charged to them, and the origin bytes per edge request of everything else.
   * Absent in older reports.
   */
  firstReads?: { requests: number; originBytes: number; otherOriginBytesPerRequest: number };
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

/** One way of keeping the edge fresh, measured with the same traffic (with writes) as the others. */
export interface ModeReport {
  mode: "ttl" | "purge";
  /** The SystemReport with this mode's full figures: `after` (TTL mode) or `purge.system` (or, cold, its own `system`). */
  figures: "after" | "purge.system" | "coldEdge.ttl.system" | "coldEdge.purge.system";
  /**
   * The edge cache this mode's system started with: "warm" = prefilled (every id the traffic reads, read once
   * before the warm-up; `prefill` says what that cost), "cold" = empty. Absent in older reports (cold).
   */
  edgeStart?: "warm" | "cold";
  prefill?: PrefillFigures;
  /** The worker's EDGE_CACHE_TTL and EDGE_CACHE_NOT_FOUND_TTL in this mode (seconds, as configured; "" unset). */
  edgeCacheTtl: string;
  edgeCacheNotFoundTtl: string;
  /** Origin → edge socket bytes per edge request (traffic only: the probes' are in `probes`). */
  originBytesPerRequest: number;
  /** originBytesPerRequest / before.originBytesPerRequest. */
  ratio: number;
  /**
   * The same without the origin bytes of first reads (each id's first read in the run: a cold edge cache),
   * what a warm edge would cost; with a day's TTL an edge pays a first read once a day per id.
   */
  warm: { originBytesPerRequest: number; ratio: number };
  usdPerMonth: number;
  /** For each measured write, 204 → the edge serves the new version, in ms (nearest-rank percentiles). */
  stalenessMs: { p50: number; p99: number; max: number };
  staleness: StalenessSummary & { pollMs: string };
  /** The staleness probes: edge reads left out of the traffic's figures, and what they cost the origin. */
  probes: { requests: number; failed: number; originExchanges: number; originBytes: number; originBytesPerRequest: number };
}

export interface PurgeTarget {
  /** purge.originBytesPerRequest ≤ maxRatio × before. */
  maxRatio: number;
  /** staleness p99 ≤ maxP99Ms. */
  maxP99Ms: number;
  ratioMet: boolean;
  stalenessMet: boolean;
  met: boolean;
}

export interface PurgeModeReport extends ModeReport {
  mode: "purge";
  system: SystemReport;
  plan: PurgePlanName;
  api: PurgeApiFigures;
  rateLimit: RateLimitProjection;
  target: PurgeTarget;
}

/** A mode measured again from a cold edge (`--edge-start both`): its headline and full figures. */
export interface ColdModeReport extends ModeReport {
  system: SystemReport;
}

export interface ColdPurgeModeReport extends ColdModeReport {
  api: PurgeApiFigures;
  /** The Snippet path's Cache-Tag header cost from a cold edge (the headline one is `snippetCacheTag`). */
  snippetCacheTag: CacheTagCost;
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
    /** `--edge-start` (absent in older reports: cold), and the reads one prefill sends (ids the traffic reads). */
    edgeStart?: EdgeStart;
    prefillReads?: number;
  };
  pricing: Pricing & { daysPerMonth: number; bytesPerGb: number };
  before: SystemReport;
  /** slim-edge as configured by default: TTL mode. */
  after: SystemReport;
  /** after.originBytesPerRequest / before.originBytesPerRequest. */
  ratio: number;
  /** TTL mode's staleness and headline (its full figures are `after`); absent in older reports. */
  ttl?: ModeReport;
  /** Purge mode; absent in older reports. */
  purge?: PurgeModeReport;
  /**
   * `--edge-start both`: TTL mode and purge mode again, the same events from an empty edge cache, for
   * comparison with the warm headline (`ttl`/`after`, `purge`). Absent otherwise.
   */
  coldEdge?: { ttl: ColdModeReport; purge: ColdPurgeModeReport };
  /** The Snippet path: what tagging zone-cache entries by the origin's Cache-Tag header would cost (purge mode). */
  snippetCacheTag?: CacheTagCost;
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
  let firstReads = 0;
  let firstReadBytes = 0;
  for (const r of phase.records) {
    if (r.event.firstRead === true) {
      firstReads++;
      firstReadBytes += totalOf(r.origin);
    }
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
  // The probes' origin exchanges crossed the relay too: the traffic's socket count is the rest.
  const socketBytes = phase.socket.upstreamBytes - probeOriginBytes(phase);
  const socketPerRequest = socketBytes / d;
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
    originAgreement: agreement(socketBytes, messageBytes),
    originExchanges: exchanges + u.exchanges,
    answeredAtEdgeShare: atEdge / d,
    edgeToClientBytesPerRequest: phase.edgeSocketBytes / d,
    edgeToClientAgreement: agreement(phase.edgeSocketBytes, edgeMessages),
    usdPerMonth: usdPerMonth(socketPerRequest, pricing),
    revalidationsSent,
    revalidationsWithoutEtag,
    unattributed: { exchanges: u.exchanges, bytes: totalOf(u.bytes), statuses },
    firstReads: { requests: firstReads, originBytes: firstReadBytes, otherOriginBytesPerRequest: (socketBytes - firstReadBytes) / d },
    framingErrors: phase.socket.framingErrors,
    socket: {
      originToEdgeBytes: socketBytes,
      edgeToOriginBytes: phase.socket.downstreamBytes,
      originConnections: phase.socket.connections,
      originResponses: phase.socket.responses,
    },
    classes,
  };
}

/** What purge mode needs besides its phase: the stand-in's call log and what reached the worker's cache. */
export interface PurgeInput {
  phase: PhaseResult;
  plan: PurgePlanName;
  calls: readonly RecordedCall[];
  applied: readonly AppliedPurge[];
  workerVars: Record<string, string>;
  /** Defaults: ≤ 1% of before's bytes, p99 ≤ 1 s. */
  maxRatio?: number;
  maxP99Ms?: number;
}

/** How staleness was probed, for the report. */
export const POLL_DESCRIPTION = "every 10-100 ms (5% of the time since the write)";

export interface ReportInput {
  before: PhaseResult;
  after: PhaseResult;
  /** Purge mode, same traffic, same run. */
  purge?: PurgeInput;
  /** Both modes again from a cold edge, when the headline pair was prefilled (`--edge-start both`). */
  cold?: { after: PhaseResult; purge: PurgeInput };
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
  const ttl = input.after.staleness === undefined ? undefined : modeReport("ttl", input.after, after, before, input.traffic.workerVars, input.pricing);
  let purge: PurgeModeReport | undefined;
  let snippetCacheTag: CacheTagCost | undefined;
  if (input.purge !== undefined) {
    const p = input.purge;
    const system = summarizeSystem(p.phase, input.pricing);
    problems.push(...problemsOf(system, p.phase));
    if (system.requests !== before.requests) problems.push(`before replayed ${before.requests} requests, purge ${system.requests}: not the same traffic`);
    problems.push(...sameAnswers(before, system));
    const mode = modeReport("purge", p.phase, system, before, p.workerVars, input.pricing);
    const api = purgeApiFigures(p.calls, p.applied, p.phase.window ?? { from: -Infinity, to: Infinity }, p.phase.writes);
    const maxRatio = p.maxRatio ?? 0.01;
    const maxP99Ms = p.maxP99Ms ?? 1000;
    const ratioMet = mode.ratio <= maxRatio;
    const stalenessMet = mode.staleness.probed > 0 && !mode.staleness.p99AtLeast && mode.stalenessMs.p99 <= maxP99Ms;
    purge = {
      ...mode,
      mode: "purge",
      system,
      plan: p.plan,
      api,
      rateLimit: rateLimitProjection(p.plan, input.pricing.requestsPerDay, PRODUCTION_WRITE_SHARE, api.tagsPerCall),
      target: { maxRatio, maxP99Ms, ratioMet, stalenessMet, met: ratioMet && stalenessMet },
    };
    snippetCacheTag = snippetCost(p, system);
    if (api.writes > 0 && api.calls === 0) {
      notes.push("purge: the origin sent no purge call during the measured part: it does not purge on change yet (CLOUDFLARE_* ignored?), so purge mode is a one-day TTL here");
    }
    if (api.entriesUntagged > 0) notes.push(`purge: ${api.entriesUntagged} purged keys held entries without the purged tag (kept, as Cloudflare would): is the worker tagging what it stores?`);
    if (mode.staleness.gaveUp > 0) notes.push(`purge: ${mode.staleness.gaveUp} of ${mode.staleness.probed} writes were still stale at the probe's bound (${mode.staleness.limitMs} ms)`);
  }
  let coldEdge: EgressReport["coldEdge"];
  if (input.cold !== undefined) {
    const c = input.cold;
    const ttlSystem = summarizeSystem(c.after, input.pricing);
    const purgeSystem = summarizeSystem(c.purge.phase, input.pricing);
    for (const [s, ph] of [[ttlSystem, c.after], [purgeSystem, c.purge.phase]] as const) {
      problems.push(...problemsOf(s, ph).map((p) => `cold edge: ${p}`));
      if (s.requests !== before.requests) problems.push(`cold edge: before replayed ${before.requests} requests, ${s.system} ${s.requests}: not the same traffic`);
      problems.push(...sameAnswers(before, s).map((p) => `cold edge: ${p}`));
    }
    const coldTtl = modeReport("ttl", c.after, ttlSystem, before, input.traffic.workerVars, input.pricing);
    const coldPurge = modeReport("purge", c.purge.phase, purgeSystem, before, c.purge.workerVars, input.pricing);
    coldEdge = {
      ttl: { ...coldTtl, figures: "coldEdge.ttl.system", system: ttlSystem },
      purge: {
        ...coldPurge,
        figures: "coldEdge.purge.system",
        system: purgeSystem,
        api: purgeApiFigures(c.purge.calls, c.purge.applied, c.purge.phase.window ?? { from: -Infinity, to: Infinity }, c.purge.phase.writes),
        snippetCacheTag: snippetCost(c.purge, purgeSystem),
      },
    };
  }
  for (const [name, ph] of [["after", input.after], ["purge", input.purge?.phase]] as const) {
    const pf = ph?.prefill;
    if (pf === undefined || pf.failed === 0) continue;
    const text = `${name}: ${pf.failed} of ${pf.requests} prefill reads failed (those ids start cold)`;
    if (pf.failed / Math.max(1, pf.requests) > ERROR_TOLERANCE) problems.push(text);
    else notes.push(text);
  }
  const rate = input.traffic.ratePerSecond;
  // Labelled systems: the cold pair's names say so.
  const named = (s: SystemReport, prefix = "") => ({ s, name: `${prefix}${s.system}` });
  const cold = coldEdge === undefined ? [] : [named(coldEdge.ttl.system, "cold edge "), named(coldEdge.purge.system, "cold edge ")];
  for (const { s, name } of [...(purge === undefined ? [after] : [after, purge.system]).map((x) => named(x)), ...cold]) {
    if (rate > 0 && s.seconds > 5 && s.requestsPerSecond < 0.9 * rate) {
      notes.push(
        `the "${name}" replay ran at ${Math.round(s.requestsPerSecond)} req/s, below the ${rate} req/s pace: fewer requests ` +
          "per EDGE_CACHE_TTL window than intended, so the edge cache looks worse than it would at the set pace (lower --rate for a run that keeps up)",
      );
    }
  }
  for (const { s, name } of [...(purge === undefined ? [before, after] : [before, after, purge.system]).map((x) => named(x)), ...cold]) {
    if (s.errors > 0 && s.errors / s.requests <= ERROR_TOLERANCE) notes.push(`${name}: ${s.errors} requests failed (within tolerance): ${s.errorSamples.join("; ")}`);
    if (s.revalidationsWithoutEtag > 0) notes.push(`${name}: ${s.revalidationsWithoutEtag} revalidating requests had no ETag yet and went without If-None-Match`);
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
    ...(ttl === undefined ? {} : { ttl }),
    ...(purge === undefined ? {} : { purge }),
    ...(coldEdge === undefined ? {} : { coldEdge }),
    ...(snippetCacheTag === undefined ? {} : { snippetCacheTag }),
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

/** What `Cache-Tag: item:<id>,items` on purge mode's origin 200s (and kept 404s) would cost the Snippet path. */
function snippetCost(p: PurgeInput, system: SystemReport): CacheTagCost {
  const answers = p.phase.originItemAnswers ?? { ok: { count: 0, idChars: 0 }, notFound: { count: 0, idChars: 0 } };
  return cacheTagCost(answers, system.requests, system.socket.originToEdgeBytes, Number(p.workerVars["EDGE_CACHE_NOT_FOUND_TTL"] ?? 0) > 0);
}

/** One mode's headline: bytes, ratio to before, staleness and what its probes cost. */
function modeReport(
  mode: "ttl" | "purge",
  phase: PhaseResult,
  system: SystemReport,
  before: SystemReport,
  workerVars: Record<string, string>,
  pricing: Pricing,
): ModeReport {
  const ttlVar = workerVars["EDGE_CACHE_TTL"] ?? "";
  const staleness = summarizeStaleness(phase.staleness ?? [], phase.writes, phase.stalenessLimitMs ?? 0);
  const probeBytes = probeOriginBytes(phase);
  const d = system.requests === 0 ? 1 : system.requests;
  const warm = system.firstReads?.otherOriginBytesPerRequest ?? system.originBytesPerRequest;
  return {
    mode,
    figures: mode === "ttl" ? "after" : "purge.system",
    edgeStart: phase.prefill === undefined ? "cold" : "warm",
    ...(phase.prefill === undefined ? {} : { prefill: phase.prefill }),
    edgeCacheTtl: ttlVar,
    edgeCacheNotFoundTtl: workerVars["EDGE_CACHE_NOT_FOUND_TTL"] ?? "",
    originBytesPerRequest: system.originBytesPerRequest,
    ratio: before.originBytesPerRequest === 0 ? 0 : system.originBytesPerRequest / before.originBytesPerRequest,
    warm: {
      originBytesPerRequest: warm,
      ratio: before.originBytesPerRequest === 0 ? 0 : warm / before.originBytesPerRequest,
    },
    usdPerMonth: usdPerMonth(system.originBytesPerRequest, pricing),
    stalenessMs: { p50: staleness.p50, p99: staleness.p99, max: staleness.max },
    staleness: { ...staleness, pollMs: POLL_DESCRIPTION },
    probes: {
      requests: phase.probes?.requests ?? 0,
      failed: phase.probes?.failed ?? 0,
      originExchanges: phase.probes?.originExchanges ?? 0,
      originBytes: probeBytes,
      originBytesPerRequest: probeBytes / d,
    },
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
