import type { ConfigProblem } from "../../shared/config/config-error.ts";
import { readWholeNumber } from "../../shared/config/grammar.ts";
import type { EdgeRawVars } from "./edge-vars.ts";

export interface OriginSpec {
  /** Base URL without a trailing slash; the item path is appended to it. */
  url: string;
  timeoutMs: number;
  /** Sent in `x-origin-token` when set. */
  token: string;
}

export function parseOrigin(vars: EdgeRawVars, problems: ConfigProblem[]): OriginSpec {
  const rawUrl = vars.ORIGIN_URL;
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
  const timeoutMs = readWholeNumber(
    "ORIGIN_TIMEOUT_MS",
    vars.ORIGIN_TIMEOUT_MS,
    { min: 1, max: 3_600_000, unit: "milliseconds", example: "5000" },
    problems,
  );
  return { url, timeoutMs, token: vars.ORIGIN_TOKEN };
}
