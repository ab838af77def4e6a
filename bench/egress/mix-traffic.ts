// A validated mix turned into traffic: the deterministic list of edge requests and origin writes the
// egress meter replays (and the load generator sends). Deterministic in (mix, seed).
import { permutation, prng, weighted, Zipf } from "../lib/random.ts";
import type { Mix } from "./mix-validation.ts";
import { itemBody, type EdgeRequest, type Traffic, type TrafficEvent } from "./traffic.ts";

/** Items a client remembers for revisits. */
const HISTORY = 16;

export interface GenerateOverrides {
  requests?: number;
  warmupRequests?: number;
  concurrency?: number;
  ratePerSecond?: number;
  seed?: number;
}

/**
 * The events of a mix: `warmupRequests` edge requests flagged warm-up, then `requests` measured ones, with
 * writes interleaved at `writes.perThousandRequests`. Deterministic in (mix, seed).
 */
export function generateTraffic(mix: Mix, source: string, overrides: GenerateOverrides = {}): Traffic {
  const seed = overrides.seed ?? mix.seed;
  const requests = overrides.requests ?? mix.requests;
  const warmup = overrides.warmupRequests ?? mix.warmupRequests;
  const random = prng(seed);
  const itemZipf = new Zipf(mix.items.count, mix.items.zipfExponent);
  const itemOrder = permutation(mix.items.count, prng(seed ^ 0x5eed1));
  const missingZipf = new Zipf(mix.missingIds.count, mix.missingIds.zipfExponent);
  const originChoices = mix.origins.map((o) => ({ value: o.origin, weight: o.weight }));
  const browserChoices = originChoices.filter((o) => o.value !== null);

  // Each simulated client has one Origin (the page it runs on, or none) and either keeps an HTTP cache
  // (sends If-None-Match for what it has seen) or not.
  const clientOrigin: Array<string | null> = [];
  const clientRevalidates: boolean[] = [];
  const clientRandom = prng(seed ^ 0xc11e7);
  for (let c = 0; c < mix.clients.count; c++) {
    clientOrigin.push(weighted(originChoices, clientRandom()));
    clientRevalidates.push(clientRandom() < mix.clients.revalidatingShare);
  }
  const browserClients: number[] = [];
  for (let c = 0; c < mix.clients.count; c++) if (clientOrigin[c] !== null) browserClients.push(c);

  const itemId = (rank: number) => String(itemOrder[rank]! + 1);
  const versions = new Map<string, number>();
  const seen = new Set<string>();
  /** Each client's most recently read items (a revisit picks one of them). */
  const history = new Map<number, string[]>();
  const writeRate = mix.writes.perThousandRequests / 1000;
  const events: TrafficEvent[] = [];

  const originHeader = (c: number): Array<[string, string]> => {
    const origin = clientOrigin[c];
    return origin === null || origin === undefined ? [] : [["Origin", origin]];
  };

  for (let i = 0; i < warmup + requests; i++) {
    const isWarmup = i < warmup;
    // Writes arrive as a Poisson-like stream between requests.
    let w = writeRate;
    while (w > 0 && random() < Math.min(w, 1)) {
      const id = itemId(itemZipf.sample(random()));
      const version = (versions.get(id) ?? 0) + 1;
      versions.set(id, version);
      events.push({ kind: "write", method: "PUT", id, body: itemBody(id, version), warmup: isWarmup });
      w -= 1;
    }
    const u = random();
    let request: EdgeRequest;
    if (u < mix.shares.preflight) {
      const c = browserClients[Math.floor(random() * browserClients.length)] ?? 0;
      const id = itemId(itemZipf.sample(random()));
      const headers: Array<[string, string]> = [...originHeader(c), ["Access-Control-Request-Method", mix.preflight.requestMethod]];
      if (mix.preflight.requestHeaders !== "") headers.push(["Access-Control-Request-Headers", mix.preflight.requestHeaders]);
      request = { kind: "request", method: "OPTIONS", path: `/items/${id}`, id, class: "preflight", client: `c${c}`, ifNoneMatch: undefined, headers, warmup: isWarmup };
    } else if (u < mix.shares.preflight + mix.shares.missing) {
      const c = Math.floor(random() * mix.clients.count);
      const id = String(mix.items.count + 1 + missingZipf.sample(random()));
      request = { kind: "request", method: "GET", path: `/items/${id}`, id, class: "missing", client: `c${c}`, ifNoneMatch: undefined, headers: originHeader(c), warmup: isWarmup };
    } else if (u < mix.shares.preflight + mix.shares.missing + mix.shares.other) {
      const c = Math.floor(random() * mix.clients.count);
      const path = mix.otherPaths[Math.floor(random() * mix.otherPaths.length)]!;
      request = { kind: "request", method: "GET", path, id: undefined, class: "other", client: `c${c}`, ifNoneMatch: undefined, headers: originHeader(c), warmup: isWarmup };
    } else {
      const c = Math.floor(random() * mix.clients.count);
      let recent = history.get(c);
      if (recent === undefined) history.set(c, (recent = []));
      const revisit = recent.length > 0 && random() < mix.clients.revisitShare;
      const id = revisit ? recent[Math.floor(random() * recent.length)]! : itemId(itemZipf.sample(random()));
      if (!recent.includes(id)) {
        recent.push(id);
        if (recent.length > HISTORY) recent.shift();
      }
      const key = `${c}:${id}`;
      const revalidate = clientRevalidates[c]! && seen.has(key);
      seen.add(key);
      request = {
        kind: "request",
        method: "GET",
        path: `/items/${id}`,
        id,
        class: revalidate ? "revalidate" : "read",
        client: `c${c}`,
        ifNoneMatch: revalidate ? { prev: true } : undefined,
        headers: originHeader(c),
        warmup: isWarmup,
      };
    }
    events.push(request);
  }

  return {
    source,
    description: mix.description,
    items: { kind: "sample", count: mix.items.count },
    events,
    concurrency: overrides.concurrency ?? mix.concurrency,
    ratePerSecond: overrides.ratePerSecond ?? mix.ratePerSecond,
    workerVars: mix.worker.vars,
  };
}
