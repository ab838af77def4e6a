// The one place that speaks Cloudflare's purge endpoint: it sends a tag purge and turns whatever comes back
// (an answer, a timeout, a dead network) into a PurgeOutcome the purge loop can act on without parsing HTTP.
// It never throws for an answer, never retries (the loop owns pacing and retries), and never puts the token
// in a message.
//
// The contract, and where each part comes from (none of it can be exercised from this machine; the loopback
// stand-in in scripts/lib/cloudflare-api-stand-in.ts follows the same reading):
// - `POST {base}/zones/{zone_id}/purge_cache` with `{"tags": [...]}`, `Authorization: Bearer <token>`, the
//   token needing the zone permission "Cache Purge": API reference, Purge Cached Content
//   (https://developers.cloudflare.com/api/resources/cache/methods/purge/).
// - Tag purge on every plan, limits per account as a token bucket; "Max operations per request" is 100 on
//   today's page (https://developers.cloudflare.com/cache/how-to/purge-cache/), older per-method pages and
//   client libraries say 30 tags. We send at most 30: it is valid under both readings.
// - A purge tag may be up to 1,024 characters in an API call
//   (https://developers.cloudflare.com/cache/how-to/purge-cache/purge-by-tags/); item tags are <= 133.
// - A 200 means accepted, not yet applied everywhere ("A successful purge request returns HTTP 200. This
//   indicates that Cloudflare received the request", purge-cache page above).
// - The envelope `{success, errors: [{code, message}], messages, result: {id}}`: API reference (schema
//   `api-response-single-id`) and the token-verify example in
//   https://developers.cloudflare.com/fundamentals/api/troubleshooting/.
// - 429 with `retry-after`, "the number of seconds, rounded up, until more capacity is available ... only
//   returned when the request has exceeded the rate limit": https://developers.cloudflare.com/fundamentals/api/reference/limits/.
// - Error codes in refusals are shown as Cloudflare sends them. The ones this module recognises to name a fix
//   are not on a docs page; they are what public issue threads and client test fixtures show the API answering:
//   10000 "Authentication error" (403 for a token without the permission or the zone, 401 for a bad token),
//   1000 "Invalid API Token", 6003/6111 "Invalid format for Authorization header", 7003 "Could not route to
//   ..., perhaps your object identifier is invalid?" (a zone id that is not one). Unverified here.

import { type Timers, systemTimers } from "./timers.ts";

/** What one purge call came to. `detail` is one line for a log, with Cloudflare's own codes and messages. */
export type PurgeOutcome =
  | { readonly kind: "accepted"; readonly purgeId?: string }
  | { readonly kind: "rate-limited"; readonly detail: string; readonly retryAfterMs?: number }
  /** `retryAfterMs`: a 5xx's Retry-After (RFC 9110 §10.2.3 lets a 503 say when to come back). */
  | { readonly kind: "retryable"; readonly detail: string; readonly retryAfterMs?: number }
  | { readonly kind: "refused"; readonly status: number; readonly detail: string };

/** What the purge loop needs from the API (the client below, or a stand-in in a test). */
export interface PurgeApi {
  purgeTags(tags: readonly string[], signal?: AbortSignal): Promise<PurgeOutcome>;
  verify(signal?: AbortSignal): Promise<PurgeOutcome>;
}

/** Tags per call: the lower of the two limits Cloudflare's pages state (see the header comment). */
export const MAX_TAGS_PER_CALL = 30;

/** The tag `verify()` purges: no cached entry carries it (item tags are `item:<id>` and `items`). */
export const VERIFY_TAG = "slim-edge-verify";

export interface CloudflarePurgeApiOptions {
  /** The API's base URL, e.g. `https://api.cloudflare.com/client/v4` (CLOUDFLARE_API_BASE). */
  base: string;
  zoneId: string;
  token: string;
  /** Deadline for one call, answer body included. */
  timeoutMs: number;
  fetch?: typeof globalThis.fetch;
  timers?: Timers;
}

export class CloudflarePurgeApi implements PurgeApi {
  readonly #url: string;
  readonly #zoneId: string;
  readonly #token: string;
  readonly #timeoutMs: number;
  readonly #fetch: typeof globalThis.fetch;
  readonly #timers: Timers;

  constructor(options: CloudflarePurgeApiOptions) {
    this.#url = `${options.base.replace(/\/+$/, "")}/zones/${encodeURIComponent(options.zoneId)}/purge_cache`;
    this.#zoneId = options.zoneId;
    this.#token = options.token;
    this.#timeoutMs = options.timeoutMs;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#timers = options.timers ?? systemTimers;
  }

  /** Purges 1-30 tags. A longer or empty list is the caller's bug and throws. */
  purgeTags(tags: readonly string[], signal?: AbortSignal): Promise<PurgeOutcome> {
    if (tags.length === 0 || tags.length > MAX_TAGS_PER_CALL) {
      throw new RangeError(`a purge call takes 1-${MAX_TAGS_PER_CALL} tags, got ${tags.length}`);
    }
    return this.#post({ tags }, signal);
  }

  /**
   * Proves, once at start, that this token may purge this zone: a real purge of VERIFY_TAG, which no entry
   * carries, so it drops nothing. Why not `GET /user/tokens/verify` (the check the docs' troubleshooting page
   * shows)? It answers only whether the token is active, not whether it holds Cache Purge on this zone, and
   * it is reported to answer 1000 "Invalid API Token" for account-owned tokens, which Cloudflare recommends
   * for services (their check is `/accounts/{account_id}/tokens/verify`, and we have no account id). A purge
   * exercises exactly what the purger needs (token, permission, zone id, plan) and costs one call of the
   * purge bucket, taken from the purger's bucket like any other.
   */
  verify(signal?: AbortSignal): Promise<PurgeOutcome> {
    return this.#post({ tags: [VERIFY_TAG] }, signal);
  }

  async #post(body: { tags: readonly string[] }, signal: AbortSignal | undefined): Promise<PurgeOutcome> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = this.#timers.setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.#timeoutMs);
    const cancel = () => controller.abort();
    signal?.addEventListener("abort", cancel, { once: true });
    if (signal?.aborted) controller.abort();
    const failed = (error: unknown, stage: string): PurgeOutcome => ({
      kind: "retryable",
      detail: timedOut
        ? `no answer from the purge API within ${this.#timeoutMs} ms (${stage})`
        : signal?.aborted
          ? `purge call cancelled (${stage})`
          : `could not reach the purge API at ${this.#url} (${stage}): ${describe(error)}`,
    });
    try {
      let response: Response;
      try {
        response = await this.#fetch(this.#url, {
          method: "POST",
          headers: { authorization: `Bearer ${this.#token}`, "content-type": "application/json" },
          body: JSON.stringify(body),
          redirect: "manual",
          signal: controller.signal,
        });
      } catch (error) {
        return failed(error, "sending");
      }
      let text: string;
      try {
        text = await response.text();
      } catch (error) {
        return failed(error, "reading the answer");
      }
      return classify(response.status, response.headers, text, this.#zoneId);
    } finally {
      this.#timers.clearTimeout(timer);
      signal?.removeEventListener("abort", cancel);
    }
  }
}

interface CloudflareError {
  code?: unknown;
  message?: unknown;
  error_chain?: unknown;
}

interface Envelope {
  success: unknown;
  errors: CloudflareError[];
  result: unknown;
}

function classify(status: number, headers: Headers, text: string, zoneId: string): PurgeOutcome {
  const envelope = parseEnvelope(text);
  const said = envelope !== undefined && envelope.errors.length > 0 ? `: ${formatErrors(envelope.errors)}` : envelope === undefined && text !== "" ? `: ${snippet(text)}` : "";
  if (status === 429) {
    const retryAfterMs = parseRetryAfter(headers.get("retry-after"));
    return { kind: "rate-limited", detail: `HTTP 429 (over the account's purge rate)${said}`, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
  }
  if (status >= 500 || status === 408) {
    const retryAfterMs = parseRetryAfter(headers.get("retry-after"));
    return { kind: "retryable", detail: `HTTP ${status}${said}`, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
  }
  if (status >= 200 && status < 300) {
    if (envelope === undefined) return { kind: "retryable", detail: `HTTP ${status} with a body that is not Cloudflare's JSON envelope: ${snippet(text)}` };
    if (envelope.success !== true) return { kind: "retryable", detail: `HTTP ${status} but "success" is ${JSON.stringify(envelope.success) ?? "missing"}${said}` };
    const id = (envelope.result as { id?: unknown } | null)?.id;
    return typeof id === "string" ? { kind: "accepted", purgeId: id } : { kind: "accepted" };
  }
  if (status >= 300 && status < 400) {
    return { kind: "refused", status, detail: `HTTP ${status} redirect to ${headers.get("location") ?? "(no location)"}. Fix: set CLOUDFLARE_API_BASE to the API's base URL (https://api.cloudflare.com/client/v4)` };
  }
  if (status >= 400) return { kind: "refused", status, detail: `HTTP ${status}${said}. Fix: ${fixFor(status, envelope, zoneId)}` };
  return { kind: "retryable", detail: `unexpected HTTP ${status}${said}` };
}

function fixFor(status: number, envelope: Envelope | undefined, zoneId: string): string {
  const codes = new Set((envelope?.errors ?? []).flatMap(errorCodes));
  if (codes.has(7003) || codes.has(7000) || status === 404) {
    return `CLOUDFLARE_ZONE_ID "${zoneId}" does not name a zone this API knows: copy the zone id (32 hex characters) from the zone's Overview page, and check CLOUDFLARE_API_BASE ends in /client/v4`;
  }
  if (codes.has(6003) || codes.has(6111) || codes.has(6103)) {
    return "CLOUDFLARE_API_TOKEN is not in the form of an API token: use an API token (not the Global API Key), without quotes or spaces";
  }
  if (status === 401 || status === 403 || codes.has(10000) || codes.has(1000)) {
    // A 403 reads the same for a token without the permission and for a zone the token does not cover.
    return `create an API token with the permission Zone → Cache Purge → Purge for the zone ${zoneId} and set it as CLOUDFLARE_API_TOKEN, and check that CLOUDFLARE_ZONE_ID is that zone's id (a running origin picks up a permission added to its current token in the dashboard without a restart)`;
  }
  return "Cloudflare rejected the request itself; retrying the same request will not help until the cause above is fixed";
}

function chainOf(error: CloudflareError): CloudflareError[] {
  return Array.isArray(error.error_chain) ? error.error_chain.filter((e): e is CloudflareError => typeof e === "object" && e !== null) : [];
}

function errorCodes(error: CloudflareError): number[] {
  return [...(typeof error.code === "number" ? [error.code] : []), ...chainOf(error).flatMap(errorCodes)];
}

function parseEnvelope(text: string): Envelope | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  if (!("success" in record) && !("errors" in record)) return undefined;
  const errors = Array.isArray(record.errors) ? record.errors.filter((e): e is CloudflareError => typeof e === "object" && e !== null) : [];
  return { success: record.success, errors, result: record.result };
}

/** `10000 Authentication error; 6003 Invalid request headers (6111 Invalid format for Authorization header)`. */
function formatErrors(errors: readonly CloudflareError[]): string {
  const one = (e: CloudflareError) => `${String(e.code ?? "?")} ${String(e.message ?? "")}`.trim();
  return errors.map((e) => (chainOf(e).length > 0 ? `${one(e)} (${chainOf(e).map(one).join("; ")})` : one(e))).join("; ");
}

/**
 * The longest Retry-After honoured: the bucket refills within a minute on every plan, and a longer wait (a
 * proxy's, or a typo's) would hold every purge back, however stale the edge grew meanwhile.
 */
export const MAX_RETRY_AFTER_MS = 300_000;

/** Retry-After as delay-seconds or an HTTP-date (RFC 9110 §10.2.3), at most MAX_RETRY_AFTER_MS; Cloudflare documents seconds. */
function parseRetryAfter(value: string | null): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Math.min(Number(trimmed) * 1000, MAX_RETRY_AFTER_MS);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.min(Math.max(0, at - Date.now()), MAX_RETRY_AFTER_MS);
}

function snippet(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  if (flat === "") return "(empty body)";
  return JSON.stringify(flat.length > 120 ? `${flat.slice(0, 120)}…` : flat);
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  if (cause !== undefined && cause !== null) return String(cause.code ?? cause.message ?? cause);
  return error instanceof Error ? error.message : String(error);
}
