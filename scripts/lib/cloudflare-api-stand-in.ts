// A loopback stand-in for Cloudflare's purge API, for tests and the local stack: the real API cannot be reached
// from here, so this answers the way the documentation says the API does (auth, JSON shapes, limits, 429), can
// be told to misbehave (5xx, hang, malformed body, 429), records every call, and hands each accepted purge to
// `onPurge` so a caller can apply it to a real cache (the worker's, through Miniflare).
//
// What it follows, and from where (restated here rather than imported, so it stays independent of the client):
// - `POST /client/v4/zones/{zone_id}/purge_cache` with one of `tags`, `files`, `hosts`, `prefixes`,
//   `purge_everything`; Bearer token with Zone → Cache Purge: https://developers.cloudflare.com/api/resources/cache/methods/purge/
// - A per-account token bucket by plan; answers beyond it 429 with `retry-after` in whole seconds, rounded up:
//   https://developers.cloudflare.com/cache/how-to/purge-cache/ and https://developers.cloudflare.com/fundamentals/api/reference/limits/
// - At most 30 items per call by default (today's purge page says 100 "operations per request"; the older
//   per-method pages 30): `maxPerCall`. Tags: no spaces, at most 1,024 characters in an API call
//   (https://developers.cloudflare.com/cache/how-to/purge-cache/purge-by-tags/).
// - Envelope `{success, errors: [{code, message}], messages, result}`, and `GET /client/v4/user/tokens/verify`
//   answering `result.status: "active"`: https://developers.cloudflare.com/fundamentals/api/troubleshooting/
// - Error codes are what public issue threads and client fixtures show the real API answering, not a docs
//   page: 10000 "Authentication error", 1000 "Invalid API Token", 6003/6111 for a malformed Authorization
//   header, 7003/7000 for an unroutable zone id, 971 on 429, 1012 for a body without a purge kind. The other
//   body-validation messages, their code (1012 again), and whether the real API checks the body before or after
//   its rate limit (here: before, so a rejected body costs no token) are this stand-in's guesses.

import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type StandInPlan = "free" | "pro" | "business" | "enterprise";

/** Per-account purge limits (requests per second, bucket size), from the purge-cache page. */
const PLANS: Record<StandInPlan, { rate: number; burst: number }> = {
  free: { rate: 5 / 60, burst: 25 },
  pro: { rate: 5, burst: 25 },
  business: { rate: 10, burst: 50 },
  enterprise: { rate: 50, burst: 500 },
};

export interface PurgeBody {
  tags?: string[];
  files?: (string | { url: string; headers?: Record<string, string> })[];
  hosts?: string[];
  prefixes?: string[];
  purge_everything?: boolean;
}

export interface StandInOptions {
  /** The token that may purge `zoneId`. */
  token: string;
  /** The zone, 32 hex characters as Cloudflare's are. */
  zoneId: string;
  /** The account's plan (default pro), or `rate` (per second) and `burst` to override it. */
  plan?: StandInPlan;
  rate?: number;
  burst?: number;
  /** Tokens that are valid but lack Cache Purge on this zone; `grantPurge` fixes one. */
  tokensWithoutPurge?: readonly string[];
  maxPerCall?: number;
  /** Milliseconds, for the bucket and the record: pass a test's manual clock to make both virtual. */
  now?: () => number;
  /** Each accepted purge, before the 200 goes out; `tags` is empty for other purge kinds. */
  onPurge?: (tags: string[], body: PurgeBody) => void | Promise<void>;
}

export type StandInFault =
  | { kind: "5xx"; count?: number; status?: number; retryAfterS?: number }
  | { kind: "hang"; count?: number }
  | { kind: "malformed"; count?: number }
  | { kind: "429"; count?: number; retryAfterS?: number };

export type CallOutcome = "accepted" | "verified" | "rate-limited" | "unauthenticated" | "forbidden" | "bad-request" | "no-route" | "fault";

export interface RecordedCall {
  at: number;
  method: string;
  path: string;
  body: unknown;
  /** null while (or because) the call hangs. */
  status: number | null;
  outcome: CallOutcome;
  fault?: StandInFault["kind"];
}

export interface CloudflareApiStandIn {
  /** What CLOUDFLARE_API_BASE would be: `http://127.0.0.1:PORT/client/v4`. */
  baseUrl: string;
  calls: readonly RecordedCall[];
  /** The next `count` (default 1) calls, of any route, misbehave this way; null clears. */
  setFault(fault: StandInFault | null): void;
  /** Gives a token from `tokensWithoutPurge` the permission, as editing it in the dashboard would. */
  grantPurge(token: string): void;
  /** Takes the permission from a token that may purge (it stays valid), as editing it in the dashboard would. */
  revokePurge(token: string): void;
  /** Resolves once at least `n` calls have been recorded. */
  waitForCalls(n: number): Promise<void>;
  close(): Promise<void>;
}

type Answer = { status: number; body: unknown; headers?: Record<string, string>; outcome: CallOutcome };

const envelope = (errors: { code: number; message: string; error_chain?: unknown[] }[], result: unknown = null) => ({
  success: errors.length === 0,
  errors,
  messages: [],
  result,
});
const fail = (status: number, outcome: CallOutcome, ...errors: { code: number; message: string; error_chain?: unknown[] }[]): Answer => ({
  status,
  outcome,
  body: envelope(errors),
});
const AUTH_ERROR = { code: 10000, message: "Authentication error" };

export async function startCloudflareApiStandIn(options: StandInOptions): Promise<CloudflareApiStandIn> {
  const now = options.now ?? (() => performance.now());
  const limit = { ...PLANS[options.plan ?? "pro"], ...(options.rate === undefined ? {} : { rate: options.rate }), ...(options.burst === undefined ? {} : { burst: options.burst }) };
  const maxPerCall = options.maxPerCall ?? 30;
  const withoutPurge = new Set(options.tokensWithoutPurge ?? []);
  const purgers = new Set([options.token]);
  const known = (token: string) => purgers.has(token) || withoutPurge.has(token);
  const calls: RecordedCall[] = [];
  const callWaiters: { n: number; resolve: () => void }[] = [];
  let fault: (StandInFault & { left: number }) | null = null;
  let tokens = limit.burst;
  let refilledAt = now();

  const record = (call: RecordedCall) => {
    calls.push(call);
    for (const waiter of callWaiters.filter((w) => calls.length >= w.n)) {
      callWaiters.splice(callWaiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  };

  const takeToken = (): number => {
    const at = now();
    tokens = Math.min(limit.burst, tokens + ((at - refilledAt) * limit.rate) / 1000);
    refilledAt = at;
    if (tokens >= 1 - 1e-9) {
      tokens = Math.max(0, tokens - 1);
      return 0;
    }
    return Math.max(1, Math.ceil((1 - tokens) / limit.rate)); // seconds, rounded up, as `retry-after` is
  };

  const authorize = (req: IncomingMessage): { token: string } | Answer => {
    const match = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "");
    if (match === null) {
      return fail(400, "bad-request", { code: 6003, message: "Invalid request headers", error_chain: [{ code: 6111, message: "Invalid format for Authorization header" }] });
    }
    return { token: match[1]! };
  };

  const purge = async (zone: string, req: IncomingMessage, raw: string): Promise<Answer> => {
    const auth = authorize(req);
    if ("status" in auth) return auth;
    if (!known(auth.token)) return fail(401, "unauthenticated", AUTH_ERROR);
    if (!/^[0-9a-f]{32}$/.test(zone)) return noRoute(req.url ?? "");
    if (zone !== options.zoneId || !purgers.has(auth.token)) return fail(403, "forbidden", AUTH_ERROR);
    const problem = validate(raw, maxPerCall);
    if (typeof problem === "string") return fail(400, "bad-request", { code: 1012, message: problem });
    const retryAfterS = takeToken();
    if (retryAfterS > 0) {
      return { ...fail(429, "rate-limited", { code: 971, message: "Please wait and consider throttling your request speed" }), headers: { "retry-after": String(retryAfterS) } };
    }
    await options.onPurge?.(problem.tags ?? [], problem);
    return { status: 200, outcome: "accepted", body: envelope([], { id: randomUUID().replaceAll("-", "") }) };
  };

  const verify = (req: IncomingMessage): Answer => {
    const auth = authorize(req);
    if ("status" in auth) return auth;
    if (!known(auth.token)) return fail(401, "unauthenticated", { code: 1000, message: "Invalid API Token" });
    return {
      status: 200,
      outcome: "verified",
      body: { ...envelope([], { id: randomUUID().replaceAll("-", ""), status: "active" }), messages: [{ code: 10000, message: "This API Token is valid and active", type: null }] },
    };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, raw: string) => {
    const path = new URL(req.url ?? "/", "http://stand-in").pathname;
    const method = req.method ?? "GET";
    let body: unknown = raw;
    try {
      body = raw === "" ? undefined : JSON.parse(raw);
    } catch {}
    const at = now();
    if (fault !== null && fault.left > 0) {
      const active = fault;
      const kind = active.kind;
      if (--active.left === 0) fault = null;
      if (kind === "hang") return record({ at, method, path, body, status: null, outcome: "fault", fault: kind });
      const status = active.kind === "5xx" ? (active.status ?? 503) : 200;
      const answer: Answer =
        kind === "5xx"
          ? {
              status,
              outcome: "fault",
              body: `<html><body><h1>${status} Service Unavailable</h1></body></html>`,
              ...(active.kind === "5xx" && active.retryAfterS !== undefined ? { headers: { "retry-after": String(active.retryAfterS) } } : {}),
            }
          : kind === "malformed"
            ? { status: 200, outcome: "fault", body: '{"success":tru' }
            : {
                ...fail(429, "fault", { code: 971, message: "Please wait and consider throttling your request speed" }),
                headers: { "retry-after": String(active.kind === "429" ? (active.retryAfterS ?? 1) : 1) },
              };
      return send(res, answer, { at, method, path, body }, kind);
    }
    const zoneRoute = /^\/client\/v4\/zones\/([^/]+)\/purge_cache$/.exec(path);
    const answer =
      method === "POST" && zoneRoute !== null
        ? await purge(decodeURIComponent(zoneRoute[1]!), req, raw)
        : method === "GET" && path === "/client/v4/user/tokens/verify"
          ? verify(req)
          : noRoute(path);
    send(res, answer, { at, method, path, body });
  };

  const send = (res: ServerResponse, answer: Answer, call: Omit<RecordedCall, "status" | "outcome">, faultKind?: StandInFault["kind"]) => {
    const text = typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body);
    const type = typeof answer.body === "string" && text.startsWith("<") ? "text/html" : "application/json";
    res.writeHead(answer.status, { "content-type": type, ...answer.headers });
    res.end(text);
    record({ ...call, status: answer.status, outcome: answer.outcome, ...(faultKind === undefined ? {} : { fault: faultKind }) });
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      handle(req, res, Buffer.concat(chunks).toString("utf8")).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
        res.end(`stand-in failure: ${String(error)}`);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;

  return {
    baseUrl: `http://127.0.0.1:${port}/client/v4`,
    calls,
    setFault(next) {
      fault = next === null ? null : { ...next, left: next.count ?? 1 };
    },
    grantPurge(token) {
      if (withoutPurge.delete(token)) purgers.add(token);
    },
    revokePurge(token) {
      if (purgers.delete(token)) withoutPurge.add(token);
    },
    waitForCalls(n) {
      return calls.length >= n ? Promise.resolve() : new Promise((resolve) => callWaiters.push({ n, resolve }));
    },
    close() {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

function noRoute(path: string): Answer {
  return fail(
    400,
    "no-route",
    { code: 7003, message: `Could not route to ${path}, perhaps your object identifier is invalid?` },
    { code: 7000, message: "No route for that URI" },
  );
}

/** The purge body as Cloudflare's reference describes it, or what is wrong with it. */
function validate(raw: string, maxPerCall: number): PurgeBody | string {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    return "Request body is not valid JSON";
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) return "Request body must be a JSON object";
  const b = body as Record<string, unknown>;
  const kinds = (["tags", "files", "hosts", "prefixes"] as const).filter((k) => k in b);
  if ("purge_everything" in b) {
    if (b.purge_everything !== true) return '"purge_everything" must be true';
    return kinds.length === 0 ? { purge_everything: true } : '"purge_everything" cannot be combined with other purge kinds';
  }
  if (kinds.length === 0) return 'Request must contain one of "purge_everything", "files", "tags", "hosts" or "prefixes"';
  for (const kind of kinds) {
    const list = b[kind];
    if (!Array.isArray(list) || list.length === 0) return `"${kind}" must be a non-empty array`;
    if (list.length > maxPerCall) return `"${kind}" may hold at most ${maxPerCall} items per request, got ${list.length}`;
    for (const item of list) {
      const ok =
        kind === "files"
          ? typeof item === "string" || (typeof item === "object" && item !== null && typeof (item as { url?: unknown }).url === "string")
          : typeof item === "string" && item.length > 0 && !/\s/.test(item) && (kind !== "tags" || item.length <= 1024);
      if (!ok) return `"${kind}" holds an invalid item: ${JSON.stringify(item)}`;
    }
  }
  return b as PurgeBody;
}
