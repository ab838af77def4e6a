// Readers for the origin's variables that are not in the shared grammar (src/shared/config/grammar.ts):
// ports, the Cloudflare zone id and API base, purge rates, the token. Each reports a problem that names
// the variable and the fix, and returns a placeholder so that every problem is reported at once.

import type { ConfigProblem } from "../../shared/config/config-error.ts";
import { PURGE_PLANS, type PurgePlanName } from "../purge/token-bucket.ts";

export interface ReadContext {
  readonly problems: ConfigProblem[];
  /** Relative SQLite paths resolve against it. */
  readonly cwd: string;
  /** The variable was present in the environment (even if empty). */
  readonly present: boolean;
}

export function readPort(variable: string, raw: string, c: ReadContext, alternative = ""): number {
  const value = raw.trim();
  if (/^\d{1,5}$/.test(value) && Number(value) <= 65535) return Number(value);
  c.problems.push({ variable, message: `"${raw}" is not a port; write a whole number from 0 to 65535${alternative}.` });
  return 0;
}

export const PURGE_PLAN_NAMES = Object.keys(PURGE_PLANS) as PurgePlanName[];

/** A Cloudflare zone id (32 hex characters), or undefined when unset. */
export function readZoneId(raw: string, c: ReadContext): string | undefined {
  const id = raw.trim();
  if (id === "") return undefined;
  if (/^[0-9a-f]{32}$/.test(id)) return id;
  c.problems.push({ variable: "CLOUDFLARE_ZONE_ID", message: `"${id}" is not a zone id (32 lowercase hex characters, on the zone's Overview page in the dashboard).` });
  return undefined;
}

export function readHttpUrl(variable: string, raw: string, c: ReadContext): string {
  const value = raw.trim().replace(/\/+$/, "");
  try {
    const url = new URL(value);
    if (url.protocol === "https:" || url.protocol === "http:") return value;
  } catch {
    // reported below
  }
  c.problems.push({ variable, message: `"${raw}" is not an http(s) URL; write e.g. "https://api.cloudflare.com/client/v4".` });
  return value;
}

/** Calls per second: a positive number (fractions allowed: the free plan is 5 per minute, 0.0833). */
export function readRate(raw: string, c: ReadContext): number {
  const value = raw.trim();
  if (/^\d{1,6}(\.\d{1,6})?$/.test(value) && Number(value) > 0) return Number(value);
  c.problems.push({ variable: "CLOUDFLARE_PURGE_RATE", message: `"${raw}" is not a rate; write calls per second as a positive number, e.g. "5" or "0.0833".` });
  return 1;
}

/** A name, or undefined when unset. */
export function optionalName(raw: string): string | undefined {
  const name = raw.trim();
  return name === "" ? undefined : name;
}

export function readToken(raw: string, c: ReadContext): string | undefined {
  if (raw === "") {
    // Set to nothing: a secret store that lost the value must not silently turn the check off.
    if (c.present) {
      c.problems.push({ variable: "ORIGIN_TOKEN", message: "is set but empty: unset it to run without a token check, or set it to the worker's secret." });
    }
    return undefined;
  }
  if (!/^[\x21-\x7e]+$/.test(raw)) {
    c.problems.push({
      variable: "ORIGIN_TOKEN",
      message: "must be printable ASCII without spaces (it travels as an HTTP header value): generate one with `openssl rand -base64 32`.",
    });
    return undefined;
  }
  // scripts/origin-service/origin.env.example ships one; published, it guards nothing.
  if (/^change-?me/i.test(raw)) {
    c.problems.push({
      variable: "ORIGIN_TOKEN",
      message: "is a placeholder from an example file: generate a secret with `openssl rand -base64 32`, and set the same value as the worker's ORIGIN_TOKEN.",
    });
    return undefined;
  }
  return raw;
}
