import type { ConfigProblem } from "./config-error.ts";
import type { EdgeVars } from "./edge-vars.ts";
import { EDGE_DEFAULTS } from "./edge-vars.ts";

export interface OriginSpec {
  /** Base URL without a trailing slash; the item path is appended to it. */
  url: string;
  timeoutMs: number;
  /** Sent in `x-origin-token` when set. */
  token: string;
}

export function parseOrigin(vars: EdgeVars, problems: ConfigProblem[]): OriginSpec {
  const rawUrl = vars.ORIGIN_URL || EDGE_DEFAULTS.ORIGIN_URL;
  let url = rawUrl;
  let parsed: URL | undefined;
  try {
    parsed = new URL(rawUrl);
  } catch {
    problems.push({ variable: "ORIGIN_URL", message: `"${rawUrl}" is not a URL; write e.g. "https://origin.example.com".` });
  }
  if (parsed) {
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      problems.push({ variable: "ORIGIN_URL", message: `"${rawUrl}" must be an http or https URL.` });
    } else if (parsed.search || parsed.hash || parsed.username || parsed.password) {
      problems.push({ variable: "ORIGIN_URL", message: `"${rawUrl}" must not carry a query, fragment or credentials (use the ORIGIN_TOKEN secret).` });
    }
    url = `${parsed.origin}${parsed.pathname.replace(/\/+$/, "")}`;
  }

  const rawTimeout = vars.ORIGIN_TIMEOUT_MS || EDGE_DEFAULTS.ORIGIN_TIMEOUT_MS;
  const timeoutMs = Number(rawTimeout);
  if (!/^\d+$/.test(rawTimeout) || timeoutMs < 1) {
    problems.push({ variable: "ORIGIN_TIMEOUT_MS", message: `"${rawTimeout}" is not a positive whole number of milliseconds; write e.g. "5000".` });
  }
  return { url, timeoutMs, token: vars.ORIGIN_TOKEN ?? "" };
}
